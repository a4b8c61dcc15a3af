package activities_test

import (
	"log/slog"
	"testing"
	"testing/fstest"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/skills"
)

func TestResolveAgent(t *testing.T) {
	operator := fstest.MapFS{
		"pinned.md":  {Data: []byte("---\nagent: pinned\ndescription: Runs on its own model\nskills: [probing, clock]\nmodel: big-model\nmax_turns: 3\nmax_replans: 0\n---\nYou probe.\n")},
		"probing.md": {Data: []byte("---\nskill: probing\ndescription: Probes things\ntools: [probe, current_time]\n---\nProbe when asked.\n")},
	}
	catalog, err := skills.Load(skills.Builtin(), operator)
	if err != nil {
		t.Fatalf("skills.Load: %v", err)
	}
	reg, err := tools.NewRegistry(&tools.CurrentTime{Now: fixedClock}, &probe{})
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	acts := activities.New(activities.LLMConfig{BaseURL: "http://127.0.0.1:1/v1", Model: "default-model"},
		catalog, reg, slog.New(slog.DiscardHandler))
	env := quietSuite().NewTestActivityEnvironment()
	env.RegisterActivity(acts)

	// web_fetch is not in this worker's registry, so it is offered to no
	// agent and no skill.
	clock := contract.SkillSpec{ID: "clock", Description: "Tells the current date and time, in any time zone",
		Tools: []string{"current_time"}, MaxTurns: activities.DefaultSkillMaxTurns}
	reading := contract.SkillSpec{ID: "web_reading", Description: "Fetches and reads web pages", MaxTurns: activities.DefaultSkillMaxTurns}
	research := contract.SkillSpec{ID: "web_research", Description: "Searches the web and reads the most relevant pages", MaxTurns: 8}
	backlog := contract.SkillSpec{ID: "backlog_manager", Description: "Keeps the user's backlog of open items (to-dos, follow-ups) across conversations",
		MaxTurns: activities.DefaultSkillMaxTurns}
	// Nor is document_search (this worker has no document store).
	documents := contract.SkillSpec{ID: "documents", Description: "Searches the documents attached to the conversation or the agent, and cites them",
		MaxTurns: activities.DefaultSkillMaxTurns}
	tests := []struct {
		id   string
		want contract.AgentSpec
	}{
		{id: "researcher", want: contract.AgentSpec{
			ID: "researcher", Mode: "agentic", Model: "default-model", MaxTurns: 12, MaxReplans: 2, Parallel: activities.DefaultPlanParallel,
			Tools: []string{"current_time"}, Skills: []contract.SkillSpec{clock, research, reading, documents},
		}},
		{id: "assistant", want: contract.AgentSpec{
			ID: "assistant", Mode: "chat", Model: "default-model", MaxTurns: activities.DefaultMaxTurns,
			MaxReplans: skills.DefaultMaxReplans, Parallel: activities.DefaultPlanParallel, Tools: []string{"current_time"}, Skills: []contract.SkillSpec{clock, reading, research, backlog, documents},
		}},
		{id: "naked", want: contract.AgentSpec{
			ID: "naked", Mode: "chat", Model: "default-model", MaxTurns: activities.DefaultMaxTurns,
			MaxReplans: skills.DefaultMaxReplans, Parallel: activities.DefaultPlanParallel,
		}},
		{id: "pinned", want: contract.AgentSpec{
			ID: "pinned", Mode: "chat", Model: "big-model", MaxTurns: 3, MaxReplans: 0, Parallel: activities.DefaultPlanParallel,
			Tools: []string{"current_time", "probe"},
			Skills: []contract.SkillSpec{{ID: "probing", Description: "Probes things",
				Tools: []string{"probe", "current_time"}, MaxTurns: activities.DefaultSkillMaxTurns}, clock},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			val, err := env.ExecuteActivity(acts.ResolveAgent, tt.id, longhaul.User{})
			if err != nil {
				t.Fatalf("ResolveAgent(%q): %v", tt.id, err)
			}
			var got contract.AgentSpec
			if err := val.Get(&got); err != nil {
				t.Fatalf("decode AgentSpec: %v", err)
			}
			tt.want.Access = "tools filtered for role=none groups=[]: hidden nothing"
			diff(t, "agent spec", tt.want, got)
		})
	}

	t.Run("unknown agent", func(t *testing.T) {
		_, err := env.ExecuteActivity(acts.ResolveAgent, "nobody", longhaul.User{})
		wantAppError(t, err, longhaul.ErrTypeUnknownAgent, true, "nobody")
	})
}
