package seerrtest_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/testing/seerrtest"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/skills"
)

// TestBuiltinSeerrSkill calls each of the built-in seerr skill's seven
// tools, as the model would, against the stand-in: every request passes
// the spec's validation and every result is the compact text its result
// template makes, with [tmdb:ID] (or the and request's ids).
func TestBuiltinSeerrSkill(t *testing.T) {
	cat, err := skills.Load(skills.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	seerr := seerrtest.New(t)
	env := map[string]string{"SEERR_URL": seerr.URL, "SEERR_API_KEY": seerrtest.Key}
	byName := map[string]*tools.HTTPTool{}
	for _, def := range cat.HTTPTools() {
		if def.Skill != "seerr" {
			continue
		}
		tl, err := tools.NewHTTPTool(def, tools.HTTPToolOptions{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
		if err != nil {
			t.Fatal(err)
		}
		byName[def.Name] = tl
	}
	if len(byName) != 7 {
		t.Fatalf("the seerr skill declares %d HTTP tools, want 7", len(byName))
	}
	steps := []struct {
		tool, args string
		want       []string
		not        []string
	}{
		{"seerr_trending", `{"kind":"tv","language":"en"}`, []string{"- The Last of Us (2023) [tmdb:100088] tv, rated 8.6 — Twenty years after", "(page 1 of 1)"}, []string{"Mortal", "[truncated"}},
		{"seerr_trending", `{"kind":"all","page":1}`, []string{"[tmdb:931285]", "[tmdb:100088]", "[tmdb:460465]"}, []string{"976"}},
		{"seerr_discover", `{"kind":"movies","genre":"28","sort_by":"popularity.desc"}`, []string{"- Superman (2025) [tmdb:1061474] movie, rated 7.5, on Seerr: available"}, nil},
		{"seerr_discover", `{"kind":"tv"}`, []string{"The Last of Us (2023) [tmdb:100088]"}, nil},
		{"seerr_search", `{"query":"nothing like it"}`, []string{"No results."}, nil},
		{"seerr_details", `{"kind":"movie","tmdb_id":1061474}`, []string{"Superman (2025) [tmdb:1061474] movie\nGenres: Action, Fantasy\nRuntime: 116 min\nStatus: Released\nRating: 7.5/10\nOverview: Superman, a journalist", "On Seerr: [media:7] available"}, nil},
		{"seerr_details", `{"kind":"tv","tmdb_id":100088}`, []string{"The Last of Us (2023) [tmdb:100088] tv\nGenres: Drama\nSeasons: 2\nStatus: Returning Series", "On Seerr: not requested yet"}, nil},
		{"seerr_request_media", `{"kind":"movie","title":"Mortal Kombat (1995)","tmdb_id":9312}`, []string{"HTTP 201 Created\n\nRequested Mortal Kombat (1995) [tmdb:9312]: request #1, approved."}, nil},
		{"seerr_my_requests", `{"filter":"all","take":5}`, []string{"- request #1: [tmdb:9312] movie, approved, by admin, 2026-11-24", "(1 in all)"}, nil},
		{"seerr_submit_issue", `{"media_id":7,"issue_type":3,"message":"The subtitles are out of sync"}`, []string{"HTTP 201 Created\n\nReported issue #1 on [tmdb:1061474]."}, nil},
	}
	for i, st := range steps {
		res, err := byName[st.tool].Call(context.Background(), tools.Call{ID: "c", Arguments: json.RawMessage(st.args)})
		if err != nil {
			t.Errorf("%d %s: %v", i, st.tool, err)
			continue
		}
		for _, w := range st.want {
			if !strings.Contains(res.Content, w) {
				t.Errorf("%d %s: result lacks %q:\n%s", i, st.tool, w, res.Content)
			}
		}
		for _, n := range append(st.not, "result template failed", seerrtest.Key) {
			if strings.Contains(res.Content, n) {
				t.Errorf("%d %s: result holds %q:\n%s", i, st.tool, n, res.Content)
			}
		}
	}
	if r := seerr.Refused(); len(r) != 0 {
		t.Errorf("the stand-in refused %+v", r)
	}
	// A duplicate request reaches the model as Seerr's own words.
	_, err = byName["seerr_request_media"].Call(context.Background(), tools.Call{ID: "c", Arguments: json.RawMessage(`{"kind":"movie","title":"Mortal Kombat (1995)","tmdb_id":9312}`)})
	if err == nil || !strings.Contains(err.Error(), "409 Conflict") || !strings.Contains(err.Error(), "Request for this media already exists.") {
		t.Errorf("a duplicate request: %v", err)
	}
}
