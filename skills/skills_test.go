package skills

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/longhaul-dev/longhaul/internal/tools"
)

// builtinTools are the tool names the tool registry provides for the built-ins.
var builtinTools = []string{"current_time", "web_fetch", "web_search", "memory_search", "memory_save", "memory_forget",
	"backlog_add", "backlog_list", "backlog_update", "backlog_close", "document_search"}

// known returns a knownTool func reporting the given names.
func known(names ...string) func(string) bool {
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	return func(name string) bool { return set[name] }
}

// mapFS builds a MapFS from file contents.
func mapFS(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{}
	for name, data := range files {
		m[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return m
}

// loadAndValidate loads layers and validates the catalog against knownTool,
// as the server does at start.
// loadAgentA loads and validates agent a, with the front matter front
// (and skills: [clock] where it names none), beside a clock skill and the
// skill file name holding text, with the tools knownTool knows.
func loadAgentA(t *testing.T, knownTool func(string) bool, front, name, text string) (*Catalog, error) {
	t.Helper()
	if !strings.Contains(front, "skills:") {
		front += "skills: [clock]\n"
	}
	return loadAndValidate(t, knownTool, mapFS(map[string]string{
		"a.md":     "---\nagent: a\ndescription: A\n" + front + "---\nPrompt.\n",
		"clock.md": "---\nskill: clock\ndescription: Clock\ntools: [current_time]\n---\nTime.\n",
		name:       text,
	}))
}

// checkAgentAError fails t unless err is want, from a FileError that
// names a.md and says detail.
func checkAgentAError(t *testing.T, err, want error, detail string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
	var fe *FileError
	if !errors.As(err, &fe) || fe.Path != "a.md" || !strings.Contains(err.Error(), detail) {
		t.Errorf("err = %v, want it to name a.md and say %q", err, detail)
	}
}

func loadAndValidate(t *testing.T, knownTool func(string) bool, layers ...fs.FS) (*Catalog, error) {
	t.Helper()
	c, err := Load(layers...)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(knownTool); err != nil {
		return nil, err
	}
	return c, nil
}

// mustLoad loads and validates layers, failing the test on any problem.
func mustLoad(t *testing.T, knownTool func(string) bool, layers ...fs.FS) *Catalog {
	t.Helper()
	c, err := loadAndValidate(t, knownTool, layers...)
	if err != nil {
		t.Fatalf("load: unexpected error:\n%v", err)
	}
	return c
}

// fileErrors flattens err, joined or not, into its FileErrors.
func fileErrors(t *testing.T, err error) []*FileError {
	t.Helper()
	var out []*FileError
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var fe *FileError
		if !errors.As(err, &fe) {
			t.Errorf("problem is not a *FileError: %v", err)
			return
		}
		out = append(out, fe)
	}
	if err != nil {
		walk(err)
	}
	return out
}

const goodAgent = `---
agent: researcher
description: Plans, researches the web, checks its own work
mode: agentic
skills: [web_research, media_requests]
model: llama3.1:8b
max_turns: 12
max_replans: 3
parallel: 3
review_plan: true
temperature: 0.5
---

You are a careful research assistant.

`

const goodSkill = `---
skill: media_requests
description: Request movies and shows from the media server
command: /request
tools: [web_fetch, media_request]
http_tools:
  - name: media_request
    description: Request a movie or show by its TMDB id
    method: post
    url: ${MEDIA_SERVER_URL}/api/v1/request
    headers: {X-Api-Key: "${MEDIA_SERVER_KEY}"}
    query: {lang: en}
    body: {id: "{mediaId}", tags: [a, 1]}
    parameters: {type: object, properties: {mediaId: {type: integer, minimum: 1}, mediaType: {type: string, enum: [movie, tv]}}, required: [mediaId, mediaType]}
    timeout: 5s
    max_response_bytes: 2048
    approval: required
  - name: media_status
    description: Status of the media server
    url: ${MEDIA_SERVER_URL}/api/v1/status
---
When the user asks for a title, request it.
`

const webResearchSkill = `---
skill: web_research
description: Researches the web
tools: [web_fetch]
---
Read pages before citing them.
`

func TestLoadParsesAgentAndSkill(t *testing.T) {
	c := mustLoad(t, known(builtinTools...), mapFS(map[string]string{
		"agents/researcher.md":     goodAgent,
		"skills/media_requests.md": goodSkill,
		"skills/web_research.md":   webResearchSkill,
	}))

	temp := float32(0.5)
	wantAgent := &Agent{
		ID:          "researcher",
		Description: "Plans, researches the web, checks its own work",
		Mode:        ModeAgentic,
		Skills:      []string{"web_research", "media_requests"},
		Model:       "llama3.1:8b",
		MaxTurns:    12,
		MaxReplans:  3,
		Parallel:    3,
		ReviewPlan:  true,
		Temperature: &temp,
		Prompt:      "You are a careful research assistant.",
		Memory:      MemoryOff,
		Source:      "agents/researcher.md",
	}
	if diff := cmp.Diff(wantAgent, agent(t, c, "researcher")); diff != "" {
		t.Errorf("agent mismatch (-want +got):\n%s", diff)
	}

	wantSkill := &Skill{
		ID:          "media_requests",
		Description: "Request movies and shows from the media server",
		Command:     "/request",
		Tools:       []string{"web_fetch", "media_request"},
		HTTPTools: []tools.HTTPToolDef{
			{
				Name:        "media_request",
				Description: "Request a movie or show by its TMDB id",
				Method:      "POST",
				URL:         "${MEDIA_SERVER_URL}/api/v1/request",
				Headers:     map[string]string{"X-Api-Key": "${MEDIA_SERVER_KEY}"},
				Query:       map[string]string{"lang": "en"},
				Body:        map[string]any{"id": "{mediaId}", "tags": []any{"a", float64(1)}},
				Parameters: map[string]any{
					"type": "object",
					"properties": map[string]any{
						"mediaId":   map[string]any{"type": "integer", "minimum": float64(1)},
						"mediaType": map[string]any{"type": "string", "enum": []any{"movie", "tv"}},
					},
					"required": []any{"mediaId", "mediaType"},
				},
				Timeout:          5 * time.Second,
				MaxResponseBytes: 2048,
				RequiresApproval: true,
				Skill:            "media_requests",
			},
			{
				Name:             "media_status",
				Description:      "Status of the media server",
				Method:           "GET",
				URL:              "${MEDIA_SERVER_URL}/api/v1/status",
				Parameters:       map[string]any{"type": "object", "properties": map[string]any{}},
				Timeout:          tools.DefaultHTTPTimeout,
				MaxResponseBytes: tools.DefaultMaxResponseBytes,
				Skill:            "media_requests",
			},
		},
		Prompt: "When the user asks for a title, request it.",
		Source: "skills/media_requests.md",
	}
	gotSkill, ok := c.Skill("media_requests")
	if !ok {
		t.Fatal(`Skill("media_requests"): not found`)
	}
	if diff := cmp.Diff(wantSkill, gotSkill); diff != "" {
		t.Errorf("skill mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadAppliesAgentDefaults(t *testing.T) {
	c := mustLoad(t, nil, mapFS(map[string]string{
		"plain.md": "---\nagent: plain\ndescription: Plain\n---\nBe plain.\n",
	}))
	want := &Agent{ID: "plain", Description: "Plain", Mode: ModeChat, MaxReplans: DefaultMaxReplans, Memory: MemoryOff, Prompt: "Be plain.", Source: "plain.md"}
	got, _ := c.Agent("plain")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("agent mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadAcceptsCRLFAndBOM(t *testing.T) {
	c := mustLoad(t, nil, mapFS(map[string]string{
		"win.md": "\ufeff---\r\nagent: win\r\ndescription: Windows\r\n---\r\nHello.\r\n",
	}))
	got, ok := c.Agent("win")
	if !ok || got.Prompt != "Hello." || got.Description != "Windows" {
		t.Errorf("Agent(win) = %+v, %v; want prompt %q", got, ok, "Hello.")
	}
}

func TestLoadWalksLayer(t *testing.T) {
	fsys := mapFS(map[string]string{
		"top.md":            "---\nagent: top\ndescription: Top\n---\n",
		"deep/er/nested.MD": "---\nagent: nested\ndescription: Nested\n---\n",
		"notes.txt":         "not markdown, ignored",
		".hidden.md":        "ignored: hidden file",
		".git/config.md":    "ignored: hidden directory",
	})
	c := mustLoad(t, nil, Named("/etc/longhaul/skills", fsys))
	var got []string
	for _, a := range c.Agents() {
		got = append(got, a.ID+" "+a.Source)
	}
	want := []string{"nested /etc/longhaul/skills/deep/er/nested.MD", "top /etc/longhaul/skills/top.md"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("agents (-want +got):\n%s", diff)
	}
}

func TestLoadLayering(t *testing.T) {
	base := Named("base", mapFS(map[string]string{
		"assistant.md": "---\nagent: assistant\ndescription: Base assistant\nskills: [web_research]\n---\nBase prompt.\n",
		"other.md":     "---\nagent: other\ndescription: Untouched\n---\n",
		"web.md":       webResearchSkill,
	}))
	operator := Named("ops", mapFS(map[string]string{
		"mine.md":      "---\nagent: assistant\ndescription: Operator assistant\nmode: auto\nskills: [web_research]\n---\nOperator prompt.\n",
		"extra.md":     "---\nagent: extra\ndescription: Added by the operator\n---\n",
		"web_again.md": "---\nskill: web_research\ndescription: Operator web research\ntools: [web_fetch]\n---\nOperator fragment.\n",
	}))
	c := mustLoad(t, known(builtinTools...), base, operator)

	type entry struct{ ID, Description, Source string }
	var gotAgents []entry
	for _, a := range c.Agents() {
		gotAgents = append(gotAgents, entry{a.ID, a.Description, a.Source})
	}
	wantAgents := []entry{
		{"assistant", "Operator assistant", "ops/mine.md"},
		{"extra", "Added by the operator", "ops/extra.md"},
		{"other", "Untouched", "base/other.md"},
	}
	if diff := cmp.Diff(wantAgents, gotAgents); diff != "" {
		t.Errorf("agents (-want +got):\n%s", diff)
	}
	var gotSkills []entry
	for _, s := range c.Skills() {
		gotSkills = append(gotSkills, entry{s.ID, s.Description, s.Source})
	}
	wantSkills := []entry{{"web_research", "Operator web research", "ops/web_again.md"}}
	if diff := cmp.Diff(wantSkills, gotSkills); diff != "" {
		t.Errorf("skills (-want +got):\n%s", diff)
	}
}

func TestLoadLayersOverBuiltin(t *testing.T) {
	operator := mapFS(map[string]string{
		"assistant.md": "---\nagent: assistant\ndescription: House assistant\nskills: [clock]\n---\nYou work for the house.\n",
		"cook.md":      "---\nagent: cook\ndescription: Suggests recipes\nskills: [web_reading]\n---\nYou suggest recipes.\n",
	})
	c := mustLoad(t, known(builtinTools...), Builtin(), Named("/srv/skills", operator))
	var got []string
	for _, a := range c.Agents() {
		got = append(got, a.ID+" "+a.Source)
	}
	want := []string{
		"assistant /srv/skills/assistant.md",
		"cook /srv/skills/cook.md",
		"media-agent builtin/media-agent.md",
		"naked builtin/naked.md",
		"researcher builtin/researcher.md",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("agents (-want +got):\n%s", diff)
	}
}

func TestBuiltinLoadsAndValidates(t *testing.T) {
	c := mustLoad(t, known(builtinTools...), Builtin())

	type summary struct {
		ID, Source string
		Mode       Mode
		Skills     []string
		MaxTurns   int
		MaxReplans int
		HasPrompt  bool
	}
	var got []summary
	for _, a := range c.Agents() {
		got = append(got, summary{a.ID, a.Source, a.Mode, a.Skills, a.MaxTurns, a.MaxReplans, a.Prompt != ""})
	}
	want := []summary{
		{"assistant", "builtin/assistant.md", ModeChat, []string{"clock", "web_reading", "web_research", "backlog_manager", "documents"}, 0, 2, true},
		{"media-agent", "builtin/media-agent.md", ModeChat, []string{"media_info", "seerr", "triage"}, 8, 2, true},
		{"naked", "builtin/naked.md", ModeChat, nil, 0, 2, false},
		{"researcher", "builtin/researcher.md", ModeAgentic, []string{"clock", "web_research", "web_reading", "documents"}, 12, 2, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("built-in agents (-want +got):\n%s", diff)
	}

	type skillSummary struct {
		ID    string
		Tools []string
	}
	var gotSkills []skillSummary
	for _, s := range c.Skills() {
		if s.Prompt == "" || s.Description == "" {
			t.Errorf("built-in skill %q has an empty prompt or description", s.ID)
		}
		gotSkills = append(gotSkills, skillSummary{s.ID, s.Tools})
	}
	wantSkills := []skillSummary{{"backlog_manager", []string{"backlog_add", "backlog_list", "backlog_update", "backlog_close"}}, {"clock", []string{"current_time"}}, {"documents", []string{"document_search"}}, {"media_info", nil}, {"memory", []string{"memory_search", "memory_save", "memory_forget"}},
		{"seerr", []string{"seerr_trending", "seerr_discover", "seerr_search", "seerr_details", "seerr_my_requests", "seerr_request_media", "seerr_submit_issue"}},
		{"triage", nil}, {"web_reading", []string{"web_fetch"}}, {"web_research", []string{"web_search", "web_fetch"}}}
	if diff := cmp.Diff(wantSkills, gotSkills); diff != "" {
		t.Errorf("built-in skills (-want +got):\n%s", diff)
	}

	// Without the registry's tools the built-ins do not validate.
	err := c.Validate(nil)
	if !errors.Is(err, ErrUnknownTool) {
		t.Errorf("Validate(nil) = %v, want ErrUnknownTool", err)
	}
}

func TestLoadDefault(t *testing.T) {
	t.Run("builtin only", func(t *testing.T) {
		c, err := LoadDefault("")
		if err != nil {
			t.Fatalf("LoadDefault(\"\"): %v", err)
		}
		if _, ok := c.Agent("researcher"); !ok {
			t.Error("built-in researcher missing")
		}
	})
	t.Run("operator directory", func(t *testing.T) {
		file := tempFile(t, "researcher.md", "---\nagent: researcher\ndescription: Mine\nmode: agentic\n---\nMine.\n")
		c, err := LoadDefault(filepath.Dir(file))
		if err != nil {
			t.Fatalf("LoadDefault: %v", err)
		}
		a, _ := c.Agent("researcher")
		if a == nil || a.Source != file || a.Description != "Mine" {
			t.Errorf("researcher = %+v, want the operator's from %s", a, file)
		}
	})
	t.Run("operator file with a problem", func(t *testing.T) {
		file := tempFile(t, "bad.md", "---\nagent: bad\ndescription: Bad\ncolour: red\n---\n")
		_, err := LoadDefault(filepath.Dir(file))
		if !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), file) {
			t.Errorf("LoadDefault = %v, want ErrUnknownKey naming %s", err, file)
		}
	})
	t.Run("missing directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "nope")
		_, err := LoadDefault(dir)
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), dir) {
			t.Errorf("LoadDefault(%q) = %v, want an ErrNotExist naming it", dir, err)
		}
	})
	t.Run("not a directory", func(t *testing.T) {
		file := tempFile(t, "file", "")
		_, err := LoadDefault(file)
		if err == nil || !strings.Contains(err.Error(), file) {
			t.Errorf("LoadDefault(%q) = %v, want an error naming it", file, err)
		}
	})
}

// tempFile writes data to a file named name in a new temporary directory
// and returns its path.
func tempFile(t *testing.T, name, data string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestLoadNilLayer(t *testing.T) {
	if _, err := Load(nil); err == nil {
		t.Error("Load(nil) succeeded, want an error")
	}
}

func TestSystemPrompt(t *testing.T) {
	c := mustLoad(t, known("web_fetch", "current_time"), mapFS(map[string]string{
		"a.md":      "---\nagent: a\ndescription: A\nskills: [one, two]\n---\nBase prompt.\n",
		"bare.md":   "---\nagent: bare\ndescription: Bare\n---\n",
		"solo.md":   "---\nagent: solo\ndescription: Solo\n---\nJust me.\n",
		"one.md":    "---\nskill: one\ndescription: One\ntools: [web_fetch]\n---\nFirst fragment.\n\nSecond paragraph.\n",
		"two.md":    "---\nskill: two\ndescription: Two\ntools: [current_time]\n---\nTwo fragment.\n",
		"three.md":  "---\nskill: three\ndescription: Three\n---\nUnused.\n",
		"prompt.md": "---\nagent: frag\ndescription: Frag\nskills: [two]\n---\nx\n",
	}))
	tests := []struct {
		name  string
		agent *Agent
		want  string
	}{
		{"base and skills", agent(t, c, "a"), "Base prompt.\n\n## one\n\nFirst fragment.\n\nSecond paragraph.\n\n## two\n\nTwo fragment."},
		{"no skills", agent(t, c, "solo"), "Just me."},
		{"empty", agent(t, c, "bare"), ""},
		{"skill without base prompt", &Agent{ID: "x", Skills: []string{"two"}}, "## two\n\nTwo fragment."},
		{"empty fragment and unknown skill skipped", &Agent{ID: "x", Prompt: "P", Skills: []string{"missing", "one"}}, "P\n\n## one\n\nFirst fragment.\n\nSecond paragraph."},
		{"nil agent", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, c.SystemPrompt(tt.agent)); diff != "" {
				t.Errorf("SystemPrompt (-want +got):\n%s", diff)
			}
		})
	}
}

// agent returns the agent id of c, failing the test when it is missing.
func agent(t *testing.T, c *Catalog, id string) *Agent {
	t.Helper()
	a, ok := c.Agent(id)
	if !ok {
		t.Fatalf("agent %q missing", id)
	}
	return a
}

func TestAgentTools(t *testing.T) {
	c := mustLoad(t, known(builtinTools...), mapFS(map[string]string{
		"s1.md": "---\nskill: s1\ndescription: S1\ntools: [web_fetch, zeta, current_time]\nhttp_tools: [{name: zeta, description: Z, url: 'http://z'}]\n---\nS1.\n",
		"s2.md": "---\nskill: s2\ndescription: S2\ntools: [web_fetch, alpha]\nhttp_tools: [{name: alpha, description: A, url: 'http://a'}]\n---\nS2.\n",
		"s3.md": "---\nskill: s3\ndescription: S3\n---\nNo tools.\n",
	}))
	tests := []struct {
		name  string
		agent *Agent
		want  []string
	}{
		{"union sorted and de-duplicated", &Agent{Skills: []string{"s1", "s2"}}, []string{"alpha", "current_time", "web_fetch", "zeta"}},
		{"one skill", &Agent{Skills: []string{"s2"}}, []string{"alpha", "web_fetch"}},
		{"skill without tools", &Agent{Skills: []string{"s3"}}, nil},
		{"no skills", &Agent{}, nil},
		{"nil agent", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, c.AgentTools(tt.agent)); diff != "" {
				t.Errorf("AgentTools (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCatalogLookups(t *testing.T) {
	c := mustLoad(t, known(builtinTools...), mapFS(map[string]string{
		"media.md": goodSkill,
		"web.md":   webResearchSkill,
	}))
	var names []string
	for _, h := range c.HTTPTools() {
		names = append(names, h.Skill+"/"+h.Name)
	}
	if diff := cmp.Diff([]string{"media_requests/media_request", "media_requests/media_status"}, names); diff != "" {
		t.Errorf("HTTPTools (-want +got):\n%s", diff)
	}
	if _, ok := c.Agent("nope"); ok {
		t.Error("Agent(nope) found")
	}
	if _, ok := c.Skill("nope"); ok {
		t.Error("Skill(nope) found")
	}
	var nilCatalog *Catalog
	if nilCatalog.Agents() != nil || nilCatalog.Skills() != nil || nilCatalog.HTTPTools() != nil {
		t.Error("nil catalog returned entries")
	}
}
