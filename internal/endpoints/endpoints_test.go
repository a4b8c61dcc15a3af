package endpoints

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	eps, err := Parse("remote=https://openrouter.ai/api/v1/, local=http://127.0.0.1:4000/v1", "remote=sk-or-secret")
	if err != nil {
		t.Fatal(err)
	}
	want := []Endpoint{
		{Name: "remote", BaseURL: "https://openrouter.ai/api/v1", APIKey: "sk-or-secret"},
		{Name: "local", BaseURL: "http://127.0.0.1:4000/v1"},
	}
	if len(eps) != 2 || eps[0] != want[0] || eps[1] != want[1] {
		t.Fatalf("Parse = %+v, want %+v", eps, want)
	}
	if eps, err := Parse("", ""); err != nil || len(eps) != 0 {
		t.Fatalf("empty: %v %v", eps, err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ list, keys, want string }{
		{"remote", "", `"remote" is not name=url`},
		{"Remote=https://x/v1", "", `endpoint name "Remote" is invalid`},
		{"a=https://x/v1,a=https://y/v1", "", `endpoint "a" is named twice`},
		{"a=ftp://x", "", `is not an http(s) URL`},
		{"a=https://x/v1", "b=sk-secret-b", `a key is given for endpoint "b", which LONGHAUL_LLM_ENDPOINTS does not name (named: a)`},
		{"a=https://x/v1", "sk-bare-secret", `an entry is not name=key`},
		{"a=https://x/v1", "a=sk-1,a=sk-2", `endpoint "a" has two keys`},
	} {
		_, err := Parse(tc.list, tc.keys)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q, keys) = %v, want %q", tc.list, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "sk-") {
			t.Errorf("the error quotes a key: %v", err)
		}
	}
}

func TestResolve(t *testing.T) {
	s := NewSet(Endpoint{BaseURL: "http://localhost:11434/v1"}, []Endpoint{{Name: "remote", BaseURL: "https://openrouter.ai/api/v1"}})
	for _, tc := range []struct{ ref, endpoint, model string }{
		{"llama3.1:8b", "", "llama3.1:8b"},
		{"qwen2.5:7b-instruct", "", "qwen2.5:7b-instruct"},
		{"mistral:latest", "", "mistral:latest"},
		{"llmtest", "", "llmtest"},
		{"remote:openai/gpt-4o", "remote", "openai/gpt-4o"},
		{"remote:llama3.1:70b", "remote", "llama3.1:70b"},
		{":mistral:instruct", "", "mistral:instruct"},
		{"mistral:instruct", "", "mistral:instruct"},
		{"phi3:mini", "", "phi3:mini"},
		{"nomic-embed-text:v1.5", "", "nomic-embed-text:v1.5"},
		{"gemma3n:e2b", "", "gemma3n:e2b"},
		{":my-model:custom", "", "my-model:custom"},
		{"hf.co/org/model:Q4_K_M", "", "hf.co/org/model:Q4_K_M"},
	} {
		e, m, err := s.Resolve(tc.ref)
		if err != nil || e.Name != tc.endpoint || m != tc.model {
			t.Errorf("Resolve(%q) = %q, %q, %v; want %q, %q", tc.ref, e.Name, m, err, tc.endpoint, tc.model)
		}
		if back := s.Ref(e.Name, m); back != tc.ref && !(tc.ref[0] == ':' && back == tc.ref) {
			if e2, m2, _ := s.Resolve(back); e2.Name != e.Name || m2 != m {
				t.Errorf("Ref(%q, %q) = %q does not resolve back", e.Name, m, back)
			}
		}
	}
	for _, ref := range []string{"remot:big-model", "openrouter:gpt-4o", "remote:"} {
		if _, _, err := s.Resolve(ref); err == nil {
			t.Errorf("Resolve(%q) resolved", ref)
		}
	}
	_, _, err := s.Resolve("openrouter:gpt-4o")
	if !errors.Is(err, ErrUnknownEndpoint) || !strings.Contains(err.Error(), "names remote") {
		t.Errorf("unknown endpoint error = %v", err)
	}
	// A default-endpoint model that reads like an endpoint reference
	// comes back with its leading ':'.
	if got := s.Ref("", "remote:big"); got != ":remote:big" {
		t.Errorf("Ref of a default model that reads as remote's = %q", got)
	}
	if got := s.Ref("", "llama3.1:8b"); got != "llama3.1:8b" {
		t.Errorf("Ref(llama3.1:8b) = %q", got)
	}
}

// TestCheckModelList: a fallback list is checked model by model; an empty
// entry (a stray comma) is refused.
func TestCheckModelList(t *testing.T) {
	s := NewSet(Endpoint{BaseURL: "http://localhost:11434/v1"}, []Endpoint{{Name: "remote", BaseURL: "https://openrouter.ai/api/v1"}})
	for _, tc := range []struct {
		ref  string
		want string
	}{
		{"remote:big-model,llama3.1:8b", ""},
		{"remote:big-model, llama3.1:8b", ""},
		{"remote:big-model,nowhere:x", `"nowhere"`},
		{"remote:big-model,", "empty entry"},
		{",llama3.1:8b", "empty entry"},
	} {
		err := s.Check(tc.ref)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Check(%q) = %v, want nil", tc.ref, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Check(%q) = %v, want an error with %s", tc.ref, err, tc.want)
		}
	}
}
