package skills

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/longhaul-dev/longhaul"
)

// askFiles is a catalog of agents, each "id: agents" asking the agents
// listed after it (comma separated, may be empty).
func askFiles(agents ...string) fstest.MapFS {
	fs := fstest.MapFS{}
	for _, a := range agents {
		id, asks, _ := strings.Cut(a, ":")
		front := "agent: " + id + "\ndescription: Agent " + id + "\n"
		if asks = strings.TrimSpace(asks); asks != "" {
			front += "agents: [" + asks + "]\n"
		}
		fs[id+".md"] = &fstest.MapFile{Data: []byte(agentMD(front, "Prompt of "+id+".\n"))}
	}
	return fs
}

func TestAgentsFrontmatter(t *testing.T) {
	c, err := Load(askFiles("media: researcher, clerk", "researcher:", "clerk:"))
	if err != nil {
		t.Fatal(err)
	}
	media, _ := c.Agent("media")
	if !slices.Equal(media.Agents, []string{"researcher", "clerk"}) {
		t.Fatalf("agents %v", media.Agents)
	}
	if got := c.AskToolsFor(media, longhaul.User{ID: "u"}); !slices.Equal(got, []string{"ask_researcher", "ask_clerk"}) {
		t.Fatalf("ask tools %v", got)
	}
	if id, ok := AskedAgent("ask_researcher"); !ok || id != "researcher" {
		t.Fatalf("AskedAgent: %q %v", id, ok)
	}
	if _, ok := AskedAgent("web_fetch"); ok {
		t.Fatal("web_fetch asks an agent")
	}
}

// An agent the user may not use is no ask_ tool of theirs.
func TestAskToolsHonourAllow(t *testing.T) {
	fs := askFiles("media: researcher")
	fs["researcher.md"] = &fstest.MapFile{Data: []byte(agentMD("agent: researcher\ndescription: R\nallow: {roles: [admin]}\n", "R.\n"))}
	c, err := Load(fs)
	if err != nil {
		t.Fatal(err)
	}
	media, _ := c.Agent("media")
	if got := c.AskToolsFor(media, longhaul.User{ID: "u", Role: "user"}); len(got) != 0 {
		t.Fatalf("a user gets %v", got)
	}
	if got := c.AskToolsFor(media, longhaul.User{ID: "a", Role: "admin"}); !slices.Equal(got, []string{"ask_researcher"}) {
		t.Fatalf("an admin gets %v", got)
	}
}

func TestAgentsRefused(t *testing.T) {
	tests := []struct {
		name    string
		files   fstest.MapFS
		wantErr error
		msgs    []string
	}{
		{"unknown agent", askFiles("media: ghost"), ErrUnknownAgent,
			[]string{`media.md: agent "media" asks agent "ghost" (agents:), which does not exist`}},
		{"listed twice", askFiles("media: r, r", "r:"), ErrUnknownAgent,
			[]string{`agent "media" lists agent "r" twice`}},
		{"asks itself", askFiles("a: a"), ErrAgentCycle,
			[]string{"a.md: agents ask each other in a cycle (agents:): a → a"}},
		{"direct cycle", askFiles("a: b", "b: a"), ErrAgentCycle,
			[]string{"a.md: agents ask each other in a cycle (agents:): a → b → a"}},
		{"transitive cycle", askFiles("top: c", "c: d", "d: e", "e: c"), ErrAgentCycle,
			[]string{"c.md: agents ask each other in a cycle (agents:): c → d → e → c"}},
		{"two cycles", askFiles("a: b", "b: a", "x: y", "y: x"), ErrAgentCycle,
			[]string{"a → b → a", "x → y → x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.files)
			if !errors.Is(err, tt.wantErr) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			for _, m := range tt.msgs {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q lacks %q", err, m)
				}
			}
			if n := len(strings.Split(err.Error(), "\n")); n != len(tt.msgs) {
				t.Errorf("%d problems, want %d: %v", n, len(tt.msgs), err)
			}
		})
	}
}

// A diamond (a asks b and c, both ask d) is no cycle.
func TestAgentsDiamond(t *testing.T) {
	if _, err := Load(askFiles("a: b, c", "b: d", "c: d", "d:")); err != nil {
		t.Fatal(err)
	}
}

// An ask_ tool named like a registered tool is refused by Validate.
func TestAskToolNameConflict(t *testing.T) {
	c, err := Load(askFiles("a: b", "b:"))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate(func(name string) bool { return name == "ask_b" })
	if !errors.Is(err, ErrToolConflict) || !strings.Contains(err.Error(), `"ask_b"`) {
		t.Fatalf("err %v", err)
	}
}
