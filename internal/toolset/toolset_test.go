package toolset

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/longhaul-dev/longhaul/internal/mcp"
	"github.com/longhaul-dev/longhaul/skills"
)

func catalog(t *testing.T) *skills.Catalog {
	t.Helper()
	layer := fstest.MapFS{
		"search.md": {Data: []byte("---\nskill: searching\ndescription: Searches\ntools: [web_search, web_fetch]\n---\nSearch.\n")},
		"hooks.md": {Data: []byte(`---
skill: hooks
description: Calls a hook
tools: [ping, gh__list_issues]
http_tools:
  - name: ping
    description: Ping the service
    url: ${PING_URL}/ping
---
Ping.`)},
		"finder.md": {Data: []byte("---\nagent: finder\ndescription: Finds\nskills: [searching, hooks]\n---\nFind.\n")},
	}
	cat, err := skills.Load(skills.Builtin(), layer)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func TestKnown(t *testing.T) {
	cfg, err := mcp.ParseConfig([]byte(`{"mcpServers":{"gh":{"command":"true"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	known := Known(Options{MCP: &cfg})
	for name, want := range map[string]bool{
		"current_time": true, "web_fetch": true, "web_search": true,
		"gh__list_issues": true, "gl__list_issues": false, "nope": false,
	} {
		if got := known(name); got != want {
			t.Errorf("Known(%q) = %v, want %v", name, got, want)
		}
	}
	if Known(Options{})("gh__list_issues") {
		t.Error("an MCP tool is known without an MCP configuration")
	}
	if err := catalog(t).Validate(Known(Options{MCP: &cfg})); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestBuild(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	cat := catalog(t)
	set, err := Build(context.Background(), cat, Options{}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	reg := set.Registry
	for name, want := range map[string]bool{"current_time": true, "web_fetch": true, "ping": true, "web_search": false} {
		if reg.Has(name) != want {
			t.Errorf("Has(%q) = %v, want %v", name, !want, want)
		}
	}
	if !strings.Contains(logs.String(), "agent=finder") || !strings.Contains(logs.String(), "web_search") {
		t.Errorf("the start-up log does not say finder runs without web_search:\n%s", logs.String())
	}

	set2, err := Build(context.Background(), cat, Options{SearchURL: "http://127.0.0.1:8888"}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer set2.Close()
	if !set2.Registry.Has("web_search") {
		t.Error("web_search is missing although LONGHAUL_SEARCH_URL is set")
	}
}

// TestBuildRequiresEnv builds the built-in media-agent's Seerr tools: with
// SEERR_URL or SEERR_API_KEY unset or empty they are offered to no agent
// and the start-up log names the variables; with both set they all exist.
func TestBuildRequiresEnv(t *testing.T) {
	cat, err := skills.Load(skills.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	seerr := []string{"seerr_details", "seerr_discover", "seerr_my_requests", "seerr_request_media", "seerr_search", "seerr_submit_issue", "seerr_trending"}
	for _, tt := range []struct {
		name string
		env  map[string]string
		want bool
		log  string
	}{
		{"unset", map[string]string{}, false, "SEERR_URL, SEERR_API_KEY not set (requires_env of skill seerr)"},
		{"key empty", map[string]string{"SEERR_URL": "http://seerr:5055", "SEERR_API_KEY": ""}, false, `why="SEERR_API_KEY not set (requires_env of skill seerr)"`},
		{"set", map[string]string{"SEERR_URL": "http://seerr:5055", "SEERR_API_KEY": "k"}, true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			set, err := Build(context.Background(), cat, Options{LookupEnv: lookup}, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer set.Close()
			for _, n := range seerr {
				if set.Registry.Has(n) != tt.want {
					t.Errorf("Has(%q) = %v, want %v", n, !tt.want, tt.want)
				}
			}
			media := ""
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, "agent=media-agent") {
					media = line
				}
			}
			if tt.log == "" && media != "" {
				t.Errorf("the log says media-agent lacks tools: %s", media)
			}
			if tt.log != "" && (!strings.Contains(media, tt.log) || !strings.Contains(media, "seerr_request_media")) {
				t.Errorf("the log line about media-agent is %q, want it to name its tools and %q", media, tt.log)
			}
		})
	}
}
