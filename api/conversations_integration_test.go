package api_test

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
	"github.com/longhaul-dev/longhaul/internal/wire"
	openai "github.com/sashabaranov/go-openai"
)

// moviesEnv is a stack with an agent whose skill declares an HTTP tool
// answering trending movies from a stand-in for TMDB.
func moviesEnv(t *testing.T, f *webtest.Forgetter) *testenv.Env {
	t.Helper()
	tmdb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"results":[{"title":"[tmdb:931285] Mortal Kombat II (2026)"},{"title":"[tmdb:1061474] Superman (2025)"}]}`)
	}))
	t.Cleanup(tmdb.Close)
	layer := fstest.MapFS{
		"movies.md": {Data: []byte(`---
skill: movies
description: Finds movies
tools: [tmdb_trending]
http_tools:
  - name: tmdb_trending
    description: This week's trending movies, each with its TMDB id
    method: GET
    url: ${TMDB_URL}/trending/movie/week
    parameters: {type: object, properties: {}}
---
Use the tools.`)},
		"moviebot.md": {Data: []byte("---\nagent: moviebot\ndescription: Movies\nmode: chat\nskills: [movies]\n---\nYou help with movies.\n")},
	}
	var cfg api.Config
	if f != nil {
		cfg.Forget = f
	}
	return testenv.Start(t, testenv.Options{Layers: []fs.FS{layer}, Env: map[string]string{"TMDB_URL": tmdb.URL}, API: cfg})
}

// TestToolResultInformsNextTurn is the media agent's film search through
// the API with
// Open WebUI's headers: turn 1 calls a declared HTTP tool whose answer
// carries a TMDB id the visible answer leaves out; Open WebUI sends the
// answer back as text (cards and all), and the model's request for turn 2
// holds turn 1's tool call and its result with the id.
func TestToolResultInformsNextTurn(t *testing.T) {
	env := moviesEnv(t, nil)
	headers := withChat(owui, "chat-42")
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{ID: "call_t1", Name: "tmdb_trending", Arguments: `{}`}),
		llmtest.Text("This week's top movie is Mortal Kombat II, then Superman."),
	)
	first := postChat(t, t.Context(), env.URL, chatBody{"model": "moviebot", "stream": true, "messages": userMsg("what's trending?")}, headers)
	shown := first.rest()
	if !strings.Contains(shown, `<details type="tool_calls"`) || !strings.HasSuffix(strings.TrimSpace(shown), "then Superman.") {
		t.Fatalf("turn 1 showed %q, want the tool card and the answer", shown)
	}

	var turn2 openai.ChatCompletionRequest
	env.Model.Enqueue(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		turn2 = r.Chat
		return llmtest.Text("Requesting Mortal Kombat II (tmdb 931285).")
	}))
	second := postChat(t, t.Context(), env.URL, chatBody{"model": "moviebot", "stream": true, "messages": []map[string]string{
		{"role": "user", "content": "what's trending?"},
		{"role": "assistant", "content": shown},
		{"role": "user", "content": "the 2026 one"},
	}}, headers)
	if got := second.rest(); !strings.Contains(got, "Requesting Mortal Kombat II") {
		t.Fatalf("turn 2 showed %q", got)
	}
	var roles []string
	var call *openai.ToolCall
	var result string
	for _, m := range turn2.Messages {
		roles = append(roles, m.Role)
		if m.Role == openai.ChatMessageRoleAssistant && len(m.ToolCalls) > 0 {
			call = &m.ToolCalls[0]
		}
		if m.Role == openai.ChatMessageRoleTool {
			result = m.Content
			if m.ToolCallID != "call_t1" {
				t.Errorf("tool message answers %q, want call_t1", m.ToolCallID)
			}
		}
	}
	want := "system user assistant tool assistant user"
	if strings.Join(roles, " ") != want {
		t.Errorf("turn 2's request roles = %v, want %s", roles, want)
	}
	if call == nil || call.ID != "call_t1" || call.Function.Name != "tmdb_trending" {
		t.Errorf("turn 2's request has tool call %+v, want turn 1's call_t1 to tmdb_trending", call)
	}
	if !strings.Contains(result, "[tmdb:931285] Mortal Kombat II (2026)") {
		t.Errorf("turn 2's tool message = %q, want turn 1's result with 931285", result)
	}
	if last := turn2.Messages[len(turn2.Messages)-2]; last.Content != "This week's top movie is Mortal Kombat II, then Superman." {
		t.Errorf("the restored final answer = %q", last.Content)
	}
	// Open WebUI renders the restore as a status line.
	found := false
	for _, f := range second.frames {
		if strings.Contains(f, `"type":"status"`) && strings.Contains(f, "Restored the tool calls of 1 earlier turn") {
			found = true
		}
	}
	if !found {
		t.Errorf("turn 2's stream has no restore status line: %q", second.frames)
	}
}

// TestConversationsAPI lists, reads and deletes a chat through the API; the
// owner alone sees it, and deleting it removes its turns, its stored outputs
// and (through the hook) what was learnt from it.
func TestConversationsAPI(t *testing.T) {
	f := &webtest.Forgetter{}
	env := moviesEnv(t, f)
	headers := withChat(owui, "chat-7")
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{ID: "call_a", Name: "tmdb_trending", Arguments: `{}`}),
		llmtest.Text("Mortal Kombat II leads."),
	)
	resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "moviebot", "messages": userMsg("trending movies please")}, headers)
	if resp.StatusCode != 200 {
		t.Fatalf("chat = %d", resp.StatusCode)
	}
	run := resp.Header.Get("X-Longhaul-Run-Id")
	// A second chat, without tools, so the list has two.
	env.Model.Enqueue(llmtest.Text("Hello."))
	if r := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "moviebot", "messages": userMsg("hi")}, withChat(owui, "chat-8")); r.StatusCode != 200 {
		t.Fatalf("chat = %d", r.StatusCode)
	}
	// A request without a chat id stores nothing.
	env.Model.Enqueue(llmtest.Text("Alone."))
	if r := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "moviebot", "messages": userMsg("no chat")}, owui); r.StatusCode != 200 {
		t.Fatalf("chat = %d", r.StatusCode)
	}

	list := decode[wire.ConversationList](t, do(t, env, "GET", "/v1/conversations?limit=1", nil, owui))
	if len(list.Data) != 1 || list.Data[0].ID != "chat-8" || list.NextPageToken == "" {
		t.Fatalf("first page = %+v, want chat-8 and a next page", list)
	}
	page2 := decode[wire.ConversationList](t, do(t, env, "GET", "/v1/conversations?limit=1&page_token="+list.NextPageToken, nil, owui))
	if len(page2.Data) != 1 || page2.Data[0].ID != "chat-7" || page2.Data[0].Title != "trending movies please" || page2.Data[0].Turns != 1 || page2.NextPageToken != "" {
		t.Fatalf("second page = %+v, want chat-7 alone", page2)
	}
	if r := do(t, env, "GET", "/v1/conversations?page_token=bogus", nil, owui); r.StatusCode != 400 {
		t.Errorf("bad page token: status %d, want 400", r.StatusCode)
	}
	if r := do(t, env, "GET", "/v1/conversations?limit=0", nil, owui); r.StatusCode != 400 {
		t.Errorf("limit=0: status %d, want 400", r.StatusCode)
	}

	detail := decode[wire.ConversationDetail](t, do(t, env, "GET", "/v1/conversations/chat-7", nil, owui))
	if detail.ID != "chat-7" || len(detail.Timeline) != 1 {
		t.Fatalf("detail = %+v", detail)
	}
	turn := detail.Timeline[0]
	if turn.RunID != run || turn.Turn != 1 || turn.Agent != "moviebot" || turn.Status != "completed" || turn.Usage.TotalTokens == 0 || turn.FinishedAt.Before(turn.StartedAt) {
		t.Errorf("turn = %+v", turn)
	}
	if len(turn.Messages) != 3 {
		t.Fatalf("turn messages = %+v, want call, result, answer", turn.Messages)
	}
	call, res, ans := turn.Messages[0], turn.Messages[1], turn.Messages[2]
	if len(call.ToolCalls) != 1 || call.ToolCalls[0].Function.Name != "tmdb_trending" || call.ToolCalls[0].Function.Arguments != "{}" {
		t.Errorf("first message = %+v, want the tool call", call)
	}
	if res.Role != "tool" || res.ToolCallID != "call_a" || !strings.Contains(res.Content, "931285") ||
		len(res.Status) != 2 || res.Status[0].Type != "tool_start" || res.Status[1].Type != "tool_output" {
		t.Errorf("second message = %+v, want the result with its statuses", res)
	}
	if ans.Role != "assistant" || ans.Content != "Mortal Kombat II leads." {
		t.Errorf("third message = %+v", ans)
	}

	// Another user of the same proxy, and another key, see nothing.
	other := map[string]string{"X-OpenWebUI-User-Id": "u2"}
	if l := decode[wire.ConversationList](t, do(t, env, "GET", "/v1/conversations", nil, other)); len(l.Data) != 0 {
		t.Errorf("u2 lists %+v", l.Data)
	}
	for _, m := range []string{"GET", "DELETE"} {
		if r := do(t, env, m, "/v1/conversations/chat-7", nil, other); r.StatusCode != 404 {
			t.Errorf("u2 %s chat-7: status %d, want 404", m, r.StatusCode)
		}
	}
	if got := f.Forgotten(); len(got) != 0 {
		t.Errorf("forget called for another user's delete: %v", got)
	}

	put, err := env.Blobs.Put(t.Context(), store.Blob{Run: run, Kind: "tool_output", Name: "call_a", Data: []byte("a long page")})
	if err != nil {
		t.Fatal(err)
	}
	del := decode[wire.ConversationDeleted](t, do(t, env, "DELETE", "/v1/conversations/chat-7", nil, owui))
	if !del.Deleted || len(del.Runs) != 1 || del.Runs[0] != run {
		t.Errorf("delete = %+v", del)
	}
	if got := f.Forgotten(); len(got) != 1 || got[0] != "u1 u1/chat-7" {
		t.Errorf("forget calls = %v, want one for u1's chat-7", got)
	}
	if _, err := env.Blobs.Get(t.Context(), put); err == nil {
		t.Errorf("the run's stored output survived the delete")
	}
	for _, m := range []string{"GET", "DELETE"} {
		if r := do(t, env, m, "/v1/conversations/chat-7", nil, owui); r.StatusCode != 404 {
			t.Errorf("%s after delete: status %d, want 404", m, r.StatusCode)
		}
	}
	if l := decode[wire.ConversationList](t, do(t, env, "GET", "/v1/conversations", nil, owui)); len(l.Data) != 1 || l.Data[0].ID != "chat-8" {
		t.Errorf("list after delete = %+v, want chat-8 alone", l.Data)
	}
}
