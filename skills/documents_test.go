package skills

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
)

func TestAgentVectorStores(t *testing.T) {
	docSkill := "---\nskill: documents\ndescription: Documents\ntools: [document_search]\n---\nSearch and cite.\n"
	knownTools := known("current_time", longhaul.DocumentSearchTool)
	cases := []struct {
		name       string
		front      string
		wantStores []string
		wantSkills []string
		wantErr    error
		wantDetail string
	}{
		{"none", "", nil, []string{"clock"}, nil, ""},
		{"stores add the documents skill", "vector_stores: [vs_0123456789abcdef01234567, vs_abc]\n",
			[]string{"vs_0123456789abcdef01234567", "vs_abc"}, []string{"clock", "documents"}, nil, ""},
		{"listed skill is not added twice", "vector_stores: [vs_abc]\nskills: [documents, clock]\n",
			[]string{"vs_abc"}, []string{"documents", "clock"}, nil, ""},
		{"not a store id", "vector_stores: [file-abc]\n", nil, nil, ErrBadVectorStore, `vector_stores[0]: "file-abc" is not a vector store id`},
		{"empty id", "vector_stores: [\"\"]\n", nil, nil, ErrBadVectorStore, `vector_stores[0]: "" is not a vector store id`},
		{"listed twice", "vector_stores: [vs_abc, vs_abc]\n", nil, nil, ErrBadVectorStore, `vector_stores[1]: "vs_abc" is listed twice`},
		{"too many", "vector_stores: [" + strings.Repeat("vs_a, ", longhaul.MaxVectorStores) + "vs_b]\n", nil, nil, ErrOutOfRange, "at most 16 stores"},
		{"a list", "vector_stores: vs_abc\n", nil, nil, ErrInvalid, "want a list"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cat, err := loadAgentA(t, knownTools, c.front, "documents.md", docSkill)
			if c.wantErr != nil {
				checkAgentAError(t, err, c.wantErr, c.wantDetail)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a, _ := cat.Agent("a")
			if diff := cmp.Diff(c.wantStores, a.VectorStores); diff != "" {
				t.Errorf("vector stores (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.wantSkills, a.Skills); diff != "" {
				t.Errorf("skills (-want +got):\n%s", diff)
			}
			if got := cat.AgentTools(a); len(c.wantStores) > 0 && !strings.Contains(strings.Join(got, ","), longhaul.DocumentSearchTool) {
				t.Errorf("agent tools %v lack %s", got, longhaul.DocumentSearchTool)
			}
		})
	}
}

// TestSystemPromptKeeping leaves out what keep rejects, and what the
// user's allow: rules hide, as SystemPromptFor does.
func TestSystemPromptKeeping(t *testing.T) {
	cat, err := loadAndValidate(t, known("current_time", longhaul.DocumentSearchTool), mapFS(map[string]string{
		"a.md":         "---\nagent: a\ndescription: A\nskills: [clock, documents, secret]\n---\nBase.\n",
		"clock.md":     "---\nskill: clock\ndescription: Clock\ntools: [current_time]\n---\nTime.\n",
		"documents.md": "---\nskill: documents\ndescription: D\ntools: [document_search]\n---\nSearch and cite.\n",
		"secret.md":    "---\nskill: secret\ndescription: S\ntools: [current_time]\nallow: {roles: [admin]}\n---\nSecret.\n",
	}))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := cat.Agent("a")
	user := longhaul.User{Principal: "p", Role: "user"}
	got := cat.SystemPromptKeeping(a, user, func(s *Skill) bool { return s.ID != "documents" })
	if want := "Base.\n\n## clock\n\nTime."; got != want {
		t.Errorf("prompt = %q, want %q", got, want)
	}
	if got := cat.SystemPromptKeeping(a, user, func(*Skill) bool { return true }); got != cat.SystemPromptFor(a, user) {
		t.Errorf("keeping all = %q, want SystemPromptFor's %q", got, cat.SystemPromptFor(a, user))
	}
}
