package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/owuitest"
	"github.com/longhaul-dev/longhaul/internal/testing/seerrtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/wire"
	openai "github.com/sashabaranov/go-openai"
)

// The built-in media-agent (seeds 000 and 003) against a Seerr stand-in
// that validates every request against Seerr's own API description
// (seerrtest), through Open WebUI v0.11.0's requests (owuitest); only the
// model is scripted.

var seerrTools = []string{"seerr_details", "seerr_discover", "seerr_my_requests", "seerr_request_media", "seerr_search", "seerr_submit_issue", "seerr_trending"}

// mediaEnv is the Open WebUI stack of owuiEnv with the worker's
// environment env (nil: none at all, not the process's).
func mediaEnv(t *testing.T, env map[string]string, log *slog.Logger) *testenv.Env {
	t.Helper()
	if env == nil {
		env = map[string]string{}
	}
	return testenv.Start(t, testenv.Options{Env: env, Log: log, API: api.Config{
		Keys:      []identity.Key{{Name: "owui", Secret: owuiKey, Proxy: true}},
		JWTSecret: []byte(owuiSecret),
	}})
}

// lastToolMessage is the content of the last tool message of a model
// request.
func lastToolMessage(r llmtest.Request) string {
	for i := len(r.Chat.Messages) - 1; i >= 0; i-- {
		if m := r.Chat.Messages[i]; m.Role == openai.ChatMessageRoleTool {
			return m.Content
		}
	}
	return ""
}

// TestMediaAgentSeerrScenario is the seeds' three-turn conversation: "What
// are trending movies?" → the Mortal Kombat entries → "the 2026 one" → a
// request for tmdb 931285, which waits for the user's approval (the
// skill's approval: required) and, approved with the chat's next message,
// ends in exactly one POST /api/v1/request with mediaId 931285.
func TestMediaAgentSeerrScenario(t *testing.T) {
	seerr := seerrtest.New(t)
	env := mediaEnv(t, map[string]string{"SEERR_URL": seerr.URL, "SEERR_API_KEY": seerrtest.Key}, nil)
	chat := owuiConn(env).NewChat(ann, "media-agent")

	// Turn 1: trending movies, as compact text with [tmdb:ID].
	var trending string
	env.Model.Enqueue(
		llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			names := toolNames(r)
			for _, n := range seerrTools {
				if !slices.Contains(names, n) {
					t.Errorf("the model is not offered %s: %v", n, names)
				}
			}
			if p := r.SystemPrompt(); !strings.Contains(p, "household's media assistant") || !strings.Contains(p, "## seerr") || !strings.Contains(p, "## triage") {
				t.Errorf("system prompt lacks the agent's or its skills' parts:\n%s", p)
			}
			return llmtest.ToolCalls(llmtest.ToolCall{ID: "call_trend", Name: "seerr_trending", Arguments: `{"kind":"movie"}`})
		}),
		llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			trending = lastToolMessage(r)
			return llmtest.Text("Here are the top trending movies!\n1. **Mortal Kombat II** (2026) [tmdb:931285]\n2. **Superman** (2025) [tmdb:1061474]\n3. **Mortal Kombat** (2021) [tmdb:460465]")
		}),
	)
	a1 := owuitest.OK(t, chat.Ask("What are trending movies?"))
	chat.Answer(a1.Content)
	for _, want := range []string{
		"- Mortal Kombat II (2026) [tmdb:931285] movie, rated 7.4 — Fan favorite champions",
		"- Superman (2025) [tmdb:1061474] movie, rated 7.5, on Seerr: available — ",
		"- Mortal Kombat (2021) [tmdb:460465] movie",
	} {
		if !strings.Contains(trending, want) {
			t.Errorf("the trending result lacks %q:\n%s", want, trending)
		}
	}
	if strings.Contains(trending, "Last of Us") || strings.Contains(trending, "976") || strings.Contains(trending, "posterPath") {
		t.Errorf("the trending result for kind movie holds a show, a person or raw JSON:\n%s", trending)
	}
	req, err := http.NewRequestWithContext(t.Context(), "GET", seerr.URL+"/api/v1/discover/trending", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Api-Key", seerrtest.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.Logf("trending: the model reads %d characters; Seerr answered %d bytes of JSON", len(trending), len(raw))

	// Turn 2: "the mortal kombat one" is ambiguous; the model searches and asks.
	var found string
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{ID: "call_search", Name: "seerr_search", Arguments: `{"query":"mortal kombat"}`}),
		llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			found = lastToolMessage(r)
			return llmtest.Text("There are several Mortal Kombat entries! Which one?\n1. Mortal Kombat II (2026) [tmdb:931285]\n2. Mortal Kombat (2021) [tmdb:460465]\n3. Mortal Kombat (1995) [tmdb:9312]\n4. Mortal Kombat: Annihilation (1997) [tmdb:9823]")
		}),
	)
	a2 := owuitest.OK(t, chat.Ask("could request the mortal kombat one?"))
	chat.Answer(a2.Content)
	for _, want := range []string{"Mortal Kombat II (2026) [tmdb:931285]", "Mortal Kombat (1995) [tmdb:9312]", "Mortal Kombat: Annihilation (1997) [tmdb:9823]"} {
		if !strings.Contains(found, want) {
			t.Errorf("the search result lacks %q:\n%s", want, found)
		}
	}

	// Turn 3: "the 2026 one": the model finds it in what it saw before.
	env.Model.Enqueue(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		var seen strings.Builder
		for _, m := range r.Chat.Messages {
			seen.WriteString(m.Content + "\n")
		}
		if !strings.Contains(seen.String(), "Mortal Kombat II (2026) [tmdb:931285]") || r.LastUserMessage() != "the 2026 one" {
			t.Errorf("turn 3's request lacks the earlier turns' results:\n%s", seen.String())
		}
		return llmtest.ToolCalls(llmtest.ToolCall{ID: "call_req", Name: "seerr_request_media", Arguments: `{"kind":"movie","title":"Mortal Kombat II (2026)","tmdb_id":931285}`})
	}))
	a3 := owuitest.OK(t, chat.Ask("the 2026 one"))
	chat.Answer(a3.Content)
	for _, want := range []string{"Approval needed", "`seerr_request_media`", `"tmdb_id":931285`, "Reply `approve`"} {
		if !strings.Contains(a3.Content, want) {
			t.Errorf("turn 3's answer lacks %q:\n%s", want, a3.Content)
		}
	}
	if n := len(seerr.MediaRequests()); n != 0 {
		t.Fatalf("Seerr got %d requests before the user approved", n)
	}

	// The chat's next message approves it.
	var told string
	env.Model.Enqueue(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		told = lastToolMessage(r)
		return llmtest.Text("Done! Mortal Kombat II (2026) is requested.")
	}))
	a4 := owuitest.OK(t, chat.Ask("approve"))
	if a4.RunID != a3.RunID {
		t.Errorf("the approval ran as %q, not in the waiting run %q", a4.RunID, a3.RunID)
	}
	if !strings.HasSuffix(a4.Content, "Done! Mortal Kombat II (2026) is requested.") {
		t.Errorf("the answer after approval: %q", a4.Content)
	}
	if told != "HTTP 201 Created\n\nRequested Mortal Kombat II (2026) [tmdb:931285]: request #1, approved." {
		t.Errorf("the model read %q after the request", told)
	}

	var posts []seerrtest.Call
	for _, c := range seerr.Calls() {
		if c.Method == "POST" && c.Path == "/api/v1/request" {
			posts = append(posts, c)
		}
	}
	if len(posts) != 1 {
		t.Fatalf("Seerr got %d POST /api/v1/request, want exactly 1: %+v", len(posts), posts)
	}
	var body map[string]any
	dec := json.NewDecoder(bytes.NewReader(posts[0].Body))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil || body["mediaId"] != json.Number("931285") || body["mediaType"] != "movie" {
		t.Errorf("the request's body is %s (%v), want mediaType movie and mediaId 931285", posts[0].Body, err)
	}
	if r := seerr.Refused(); len(r) != 0 {
		t.Errorf("Seerr refused %+v", r)
	}
	var got []string
	for _, c := range seerr.Calls() {
		got = append(got, c.Method+" "+c.Path+"?"+c.Query.Encode())
	}
	// The second trending call is the test's own, measuring the raw answer.
	want := []string{"GET /api/v1/discover/trending?", "GET /api/v1/discover/trending?", "GET /api/v1/search?query=mortal+kombat", "POST /api/v1/request?"}
	if !slices.Equal(got, want) {
		t.Errorf("Seerr's calls = %q, want %q", got, want)
	}
}

// TestMediaAgentWithoutSeerr: without SEERR_URL and SEERR_API_KEY the
// agent is still listed and answers, the model is offered none of the
// Seerr tools (its prompt says what to do then), and the worker's start-up
// log names the tools and the missing variables.
func TestMediaAgentWithoutSeerr(t *testing.T) {
	var logs bytes.Buffer
	env := mediaEnv(t, map[string]string{"SEERR_URL": ""}, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	list := decode[wire.ModelList](t, do(t, env, "GET", "/v1/models", nil, map[string]string{"Authorization": "Bearer " + owuiKey}))
	if !slices.ContainsFunc(list.Data, func(m wire.ModelInfo) bool { return m.ID == "media-agent" }) {
		t.Errorf("/v1/models lacks media-agent: %+v", list.Data)
	}
	env.Model.Enqueue(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		for _, n := range toolNames(r) {
			if strings.HasPrefix(n, "seerr_") {
				t.Errorf("the model is offered %s without Seerr", n)
			}
		}
		if !strings.Contains(r.SystemPrompt(), "Seerr is not configured on this server") {
			t.Errorf("the prompt does not say what to do without the tools:\n%s", r.SystemPrompt())
		}
		return llmtest.Text("Searching and requesting through Seerr is unavailable right now.")
	}))
	a := owuitest.OK(t, owuiConn(env).NewChat(ann, "media-agent").Ask("What are trending movies?"))
	if a.Content != "Searching and requesting through Seerr is unavailable right now." {
		t.Errorf("answer %q", a.Content)
	}
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "agent=media-agent") {
			line = l
		}
	}
	for _, want := range []string{"agent runs without some of its tools", "seerr_request_media", "seerr_trending", "SEERR_URL, SEERR_API_KEY not set"} {
		if !strings.Contains(line, want) {
			t.Errorf("the start-up warning about media-agent %q lacks %q", line, want)
		}
	}
}
