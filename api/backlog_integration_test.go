package api_test

import (
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// toolAnswers are the tool results, by tool call id, that the model read in
// its last request.
func toolAnswers(env *testenv.Env) map[string]string {
	reqs := env.Model.Requests()
	out := map[string]string{}
	for _, m := range reqs[len(reqs)-1].Chat.Messages {
		if m.ToolCallID != "" {
			out[m.ToolCallID] = m.Content
		}
	}
	return out
}

func backlogTitles(t *testing.T, env *testenv.Env, user, query string) []string {
	t.Helper()
	resp := do(t, env, "GET", "/v1/backlog"+query, nil, chatUser(user, ""))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/backlog%s as %s = %d", query, user, resp.StatusCode)
	}
	out := []string{}
	for _, it := range decode[wire.BacklogList](t, resp).Data {
		out = append(out, it.Title+" "+it.Status)
	}
	return out
}

// TestBacklogThroughChat is the backlog_manager skill end to end: the
// built-in assistant, driven by the scripted model through the real API,
// adds items in one chat, lists and closes them in another; another user
// sees none of them and cannot close them by number; past the cap the model
// reads a clear refusal; deleting the first chat deletes the items it added.
func TestBacklogThroughChat(t *testing.T) {
	env := testenv.Start(t, testenv.Options{MaxBacklog: 3})

	// Chat c1: two adds, one model turn each (calls of one turn run at
	// once, so their numbers would come in either order).
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{ID: "a1", Name: "backlog_add", Arguments: `{"title":"Renew passport","notes":"expires in June","priority":"high"}`}),
		llmtest.ToolCalls(llmtest.ToolCall{ID: "a2", Name: "backlog_add", Arguments: `{"title":"Call the plumber"}`}),
		llmtest.Text("Added both."),
	)
	chatOK(t, env, "assistant", "Put renewing my passport (urgent) and calling the plumber on my list.", chatUser("alice", "c1"))
	got := toolAnswers(env)
	if !strings.Contains(got["a1"], "#1 [open, high] Renew passport") || !strings.Contains(got["a2"], "#2 [open, normal] Call the plumber") {
		t.Fatalf("the model read %q", got)
	}
	// The assistant's prompt carries the skill's guidance.
	if reqs := env.Model.Requests(); !strings.Contains(reqs[0].SystemPrompt(), "backlog_add") {
		t.Errorf("the assistant's system prompt lacks the backlog skill")
	}

	// Chat c2: list, close one, add one.
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{ID: "l1", Name: "backlog_list", Arguments: `{}`}),
		llmtest.ToolCalls(
			llmtest.ToolCall{ID: "c1", Name: "backlog_close", Arguments: `{"id":2}`},
			llmtest.ToolCall{ID: "a3", Name: "backlog_add", Arguments: `{"title":"Book the dentist"}`},
		),
		llmtest.Text("Done."),
	)
	chatOK(t, env, "assistant", "What is on my list? The plumber came already. Also: book the dentist.", chatUser("alice", "c2"))
	got = toolAnswers(env)
	wantList := "2 active items:\n- #1 [open, high] Renew passport — expires in June\n- #2 [open, normal] Call the plumber"
	if got["l1"] != wantList {
		t.Errorf("backlog_list answered %q, want %q", got["l1"], wantList)
	}
	if !strings.Contains(got["c1"], "Closed #2 [done, normal] Call the plumber") || !strings.Contains(got["a3"], "#3 [open, normal] Book the dentist") {
		t.Errorf("close and add answered %q", got)
	}
	if diff := cmp.Diff([]string{"Renew passport open", "Book the dentist open"}, backlogTitles(t, env, "alice", "")); diff != "" {
		t.Errorf("alice's active backlog (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Call the plumber done"}, backlogTitles(t, env, "alice", "?status=closed")); diff != "" {
		t.Errorf("alice's closed items (-want +got):\n%s", diff)
	}

	// Bob: an empty backlog, and alice's numbers are not his.
	env.Model.Enqueue(
		llmtest.ToolCalls(
			llmtest.ToolCall{ID: "bl", Name: "backlog_list", Arguments: `{"status":"all","text":"passport"}`},
			llmtest.ToolCall{ID: "bc", Name: "backlog_close", Arguments: `{"id":1}`},
			llmtest.ToolCall{ID: "bu", Name: "backlog_update", Arguments: `{"id":1,"title":"hijacked"}`},
		),
		llmtest.Text("Nothing there."),
	)
	chatOK(t, env, "assistant", "Close alice's passport item.", chatUser("bob", "c1"))
	got = toolAnswers(env)
	if got["bl"] != `The backlog has no items matching "passport".` {
		t.Errorf("bob's backlog_list answered %q", got["bl"])
	}
	for _, id := range []string{"bc", "bu"} {
		if !strings.Contains(got[id], "no backlog item #1") || strings.Contains(got[id], "passport") {
			t.Errorf("bob's %s answered %q", id, got[id])
		}
	}
	if l := backlogTitles(t, env, "bob", "?status=all"); len(l) != 0 {
		t.Errorf("bob's backlog = %v", l)
	}
	if diff := cmp.Diff([]string{"Renew passport open", "Book the dentist open"}, backlogTitles(t, env, "alice", "")); diff != "" {
		t.Errorf("alice's backlog after bob's calls (-want +got):\n%s", diff)
	}

	// The cap (3 active items): the fourth add is refused, clearly.
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{ID: "a4", Name: "backlog_add", Arguments: `{"title":"Fix the bike"}`}),
		llmtest.ToolCalls(llmtest.ToolCall{ID: "a5", Name: "backlog_add", Arguments: `{"title":"Water the plants"}`}),
		llmtest.Text("Your backlog is full."),
	)
	chatOK(t, env, "assistant", "Add fixing the bike and watering the plants.", chatUser("alice", "c3"))
	got = toolAnswers(env)
	if !strings.Contains(got["a4"], "Added #4") {
		t.Errorf("fourth add answered %q", got["a4"])
	}
	if !strings.Contains(got["a5"], "backlog is full") || !strings.Contains(got["a5"], "close some first") {
		t.Errorf("add past the cap answered %q, want a refusal", got["a5"])
	}

	// Deleting chat c1 deletes the items it added (#1, #2), not the others.
	if resp := do(t, env, "DELETE", "/v1/conversations/c1", nil, chatUser("alice", "")); resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE chat c1 = %d", resp.StatusCode)
	}
	if diff := cmp.Diff([]string{"Book the dentist open", "Fix the bike open"}, backlogTitles(t, env, "alice", "?status=all")); diff != "" {
		t.Errorf("alice's backlog after deleting chat c1 (-want +got):\n%s", diff)
	}

	// The route refuses bad input with the OpenAI envelope.
	for _, q := range []string{"?limit=0", "?limit=x", "?status=someday"} {
		resp := do(t, env, "GET", "/v1/backlog"+q, nil, chatUser("alice", ""))
		if e := decode[wire.ErrorBody](t, resp); resp.StatusCode != http.StatusBadRequest || e.Error.Message == "" {
			t.Errorf("GET /v1/backlog%s = %d %+v, want 400", q, resp.StatusCode, e)
		}
	}
}

var backlogAgents = fstest.MapFS{
	"organizer.md": {Data: []byte("---\nagent: organizer\ndescription: Plans with the backlog\nmode: agentic\nskills: [backlog_manager]\n---\nYou organise the user's work.\n")},
}

// TestBacklogAsPlanSteps: an agentic agent with backlog_manager plans
// with it — the planner is offered the skill and its tools — and its steps
// (a tool step and a skill step) change the run's user's backlog.
func TestBacklogAsPlanSteps(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{backlogAgents}})
	scriptPlan(env, "Note the tasks and show the list", []map[string]any{
		{"kind": "tool", "target": "backlog_add", "title": "Note the report", "arguments": map[string]any{"title": "Write the quarterly report", "notes": nil, "priority": "high"}, "success": "added"},
		{"kind": "skill", "target": "backlog_manager", "title": "Note the slides", "input": "Add 'Prepare the slides' to the backlog", "success": "added"},
		{"kind": "completion", "title": "Answer", "input": "list what was noted", "success": "lists both"},
	}, "done")
	env.Model.On(llmtest.HasSchema("plan_review"),
		llmtest.JSON(map[string]string{"decision": "ok", "reason": "fine"}))
	// The skill step's own loop: one add, then its report.
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{ID: "s1", Name: "backlog_add", Arguments: `{"title":"Prepare the slides"}`}),
		llmtest.Text("Added #2."),
	)
	env.Model.SetDefault(llmtest.Text("Noted: the report (#1) and the slides (#2)."))

	run := chatOK(t, env, "organizer", "Note that I must write the quarterly report and prepare the slides.", chatUser("carol", "p1"))
	// The planner was offered the skill and its tools.
	for _, r := range env.Model.Requests() {
		if llmtest.SchemaName(r) != "plan" {
			continue
		}
		var prompt strings.Builder
		for _, m := range r.Chat.Messages {
			prompt.WriteString(llmtest.MessageText(m))
		}
		if p := prompt.String(); !strings.Contains(p, "backlog_manager") || !strings.Contains(p, "backlog_add") {
			t.Errorf("the planner's prompt does not offer the backlog: %q", p)
		}
	}
	for _, e := range runEvents(t, env, run, chatUser("carol", "")) {
		if e.Type == longhaul.EventStepResult || e.Type == longhaul.EventPlan || e.Type == longhaul.EventError {
			t.Logf("%s %s", e.Type, e.Data)
		}
	}
	if diff := cmp.Diff([]string{"Write the quarterly report open", "Prepare the slides open"}, backlogTitles(t, env, "carol", "")); diff != "" {
		t.Errorf("carol's backlog after the plan (-want +got):\n%s", diff)
	}
}
