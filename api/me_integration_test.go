package api_test

import (
	"io/fs"
	"net/http"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// TestDeleteMe: DELETE /v1/me deletes everything the server keeps of its
// caller — conversations, memories, the backlog, secrets — and nothing of
// another user's; a second call finds nothing left.
func TestDeleteMe(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{memoryAgents}, Memory: true, TokenKey: testTokenKey})
	env.Model.On(llmtest.HasResponseFormat(), llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		for _, m := range r.Chat.Messages {
			if strings.Contains(m.Content, "allergic") {
				return llmtest.JSON(map[string]any{"facts": []string{peanutFact}})
			}
		}
		return llmtest.JSON(map[string]any{"facts": []string{}})
	}))
	env.Model.SetDefault(llmtest.Text("Noted."))
	for _, u := range []string{"alice", "bob"} {
		chatOK(t, env, "friend", "I am allergic to peanuts, by the way.", chatUser(u, "c1"))
		env.Model.Enqueue(
			llmtest.ToolCalls(llmtest.ToolCall{ID: "a1", Name: "backlog_add", Arguments: `{"title":"Renew passport"}`}),
			llmtest.Text("Added."),
		)
		chatOK(t, env, "assistant", "Put renewing my passport on my list.", chatUser(u, "c2"))
		if resp := do(t, env, "PUT", "/v1/secrets/SHOP", map[string]string{"value": u + "-shop-key"}, chatUser(u, "")); resp.StatusCode != http.StatusOK {
			t.Fatalf("PUT a secret as %s = %d", u, resp.StatusCode)
		}
	}
	// An item no chat added (a run of the runs API), which no
	// conversation's deletion takes.
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{ID: "a2", Name: "backlog_add", Arguments: `{"title":"Call the plumber"}`}),
		llmtest.Text("Added."),
	)
	r := startRun(t, env, map[string]any{"agent": "assistant", "input": "Put calling the plumber on my list."}, chatUser("alice", ""))
	var res contract.AgentResult
	if err := env.Client.GetWorkflow(t.Context(), r.ID, "").Get(t.Context(), &res); err != nil {
		t.Fatalf("run: %v", err)
	}
	counts := func(u string) (conversations, memories, backlog, secrets int) {
		t.Helper()
		h := chatUser(u, "")
		return len(decode[wire.ConversationList](t, do(t, env, "GET", "/v1/conversations", nil, h)).Data),
			len(decode[wire.MemoryList](t, do(t, env, "GET", "/v1/memories", nil, h)).Data),
			len(decode[wire.BacklogList](t, do(t, env, "GET", "/v1/backlog?status=all", nil, h)).Data),
			len(decode[wire.SecretList](t, do(t, env, "GET", "/v1/secrets", nil, h)).Data)
	}
	if c, m, b, s := counts("alice"); c != 2 || m != 1 || b != 2 || s != 1 {
		t.Fatalf("before: alice has %d conversations, %d memories, %d backlog items, %d secrets; want 2, 1, 2, 1", c, m, b, s)
	}

	resp := do(t, env, "DELETE", "/v1/me", nil, chatUser("alice", ""))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE /v1/me = %d", resp.StatusCode)
	}
	// Deleting chat c1 forgets its memory and deleting c2 its backlog item,
	// so what is counted apart is what no chat took: the plumber item.
	got := decode[wire.UserDeleted](t, resp)
	want := wire.UserDeleted{Object: "user.deleted", Deleted: true, Conversations: 2, BacklogItems: 1, Credentials: 1}
	if got != want {
		t.Errorf("DELETE /v1/me = %+v, want %+v", got, want)
	}
	if c, m, b, s := counts("alice"); c != 0 || m != 0 || b != 0 || s != 0 {
		t.Errorf("after: alice has %d conversations, %d memories, %d backlog items, %d secrets; want none", c, m, b, s)
	}
	if c, m, b, s := counts("bob"); c != 2 || m != 1 || b != 1 || s != 1 {
		t.Errorf("after: bob has %d conversations, %d memories, %d backlog items, %d secrets; want 2, 1, 1, 1", c, m, b, s)
	}
	again := decode[wire.UserDeleted](t, do(t, env, "DELETE", "/v1/me", nil, chatUser("alice", "")))
	if again != (wire.UserDeleted{Object: "user.deleted", Deleted: true}) {
		t.Errorf("a second DELETE /v1/me = %+v, want nothing deleted", again)
	}
}
