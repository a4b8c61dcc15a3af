package api_test

import (
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/memorytest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// memoryAgents are an agent that recalls and remembers, and one that only
// has the memory tools.
var memoryAgents = fstest.MapFS{
	"friend.md": {Data: []byte("---\nagent: friend\ndescription: Remembers you\nmemory: recall\nremember: true\n---\nYou are a friend.\n")},
	"notes.md":  {Data: []byte("---\nagent: notes\ndescription: Keeps notes\nmemory: tools\n---\nYou keep notes.\n")},
}

const (
	peanutFact = "The user is allergic to peanuts."
	snackQ     = "What snack should I buy for the trip?"
	weatherQ   = "Will it rain tomorrow?"
)

func chatUser(id, chat string) map[string]string {
	return map[string]string{"X-OpenWebUI-User-Id": id, "X-OpenWebUI-Chat-Id": chat}
}

// modelSawFact reports whether the last model request that answered q (not
// the extraction call) carried the fact in a system message.
func modelSawFact(t *testing.T, env *testenv.Env, q string) bool {
	t.Helper()
	for _, r := range reverse(env.Model.Requests()) {
		msgs := r.Chat.Messages
		if r.Chat.ResponseFormat != nil || len(msgs) == 0 || msgs[len(msgs)-1].Content != q {
			continue
		}
		for _, m := range msgs {
			if m.Role == "system" && strings.Contains(m.Content, peanutFact) {
				return true
			}
		}
		return false
	}
	t.Fatalf("no model request answered %q", q)
	return false
}

// runEvents reads a finished run's durable events through the runs API.
func runEvents(t *testing.T, env *testenv.Env, id string, h map[string]string) []longhaul.Event {
	t.Helper()
	ctx := within(t, time.Minute)
	var out []longhaul.Event
	for _, e := range followToDone(t, ctx, env, id, h) {
		out = append(out, e.Event)
	}
	return out
}

// findEvent decodes the first event of type typ, or returns nil.
func findEvent[T any](t *testing.T, events []longhaul.Event, typ longhaul.EventType) *T {
	t.Helper()
	for _, e := range events {
		if e.Type == typ {
			var v T
			if err := e.Decode(&v); err != nil {
				t.Fatalf("decode %s: %v", typ, err)
			}
			return &v
		}
	}
	return nil
}

func urlQuery(s string) string { return url.QueryEscape(s) }

func reverse[T any](s []T) []T {
	out := make([]T, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

func chatOK(t *testing.T, env *testenv.Env, agent, q string, h map[string]string) string {
	t.Helper()
	resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": agent, "messages": userMsg(q)}, h)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat %q: status %d", q, resp.StatusCode)
	}
	decode[wire.ChatCompletion](t, resp)
	return resp.Header.Get(api.HeaderRunID)
}

// TestMemoryAcrossChats is the acceptance scenario through the real
// API: a fact said in one chat is recalled in another chat of the same
// user, only when it is similar enough, and never for another user; the
// user lists, searches and deletes their memories, another user gets 404.
func TestMemoryAcrossChats(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{memoryAgents}, Memory: true, MemoryThreshold: 0.6})
	// The extraction call finds the allergy in the message that states it.
	env.Model.On(llmtest.HasResponseFormat(), llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		msgs := r.Chat.Messages
		if strings.Contains(msgs[len(msgs)-2].Content, "allergic") || strings.Contains(msgs[len(msgs)-1].Content, "allergic") {
			return llmtest.JSON(map[string]any{"facts": []string{peanutFact}})
		}
		return llmtest.JSON(map[string]any{"facts": []string{}})
	}))
	env.Model.SetDefault(llmtest.Text("Noted."))
	// The snack question means something close to the fact (cosine 0.8);
	// the weather question something unrelated but not far (0.4).
	fact := llmtest.Embed(peanutFact, 64)
	env.Model.SetEmbedding(snackQ, memorytest.Similar(fact, 0.8, "snack"))
	env.Model.SetEmbedding(weatherQ, memorytest.Similar(fact, 0.4, "weather"))

	// Chat 1: Alice states the fact; it is saved, learned in chat c1.
	run1 := chatOK(t, env, "friend", "I am allergic to peanuts, by the way.", chatUser("alice", "c1"))
	list := decode[wire.MemoryList](t, do(t, env, "GET", "/v1/memories", nil, chatUser("alice", "")))
	if len(list.Data) != 1 || list.Data[0].Text != peanutFact || list.Data[0].ChatID != "c1" || list.Data[0].Object != "memory" {
		t.Fatalf("alice's memories after chat 1 = %+v", list)
	}
	id := list.Data[0].ID
	events := runEvents(t, env, run1, chatUser("alice", ""))
	if d := findEvent[longhaul.MemorySavedData](t, events, longhaul.EventMemorySaved); d == nil || d.Count != 1 || d.Memories[0].ID != id {
		t.Errorf("chat 1 memory_saved = %+v", d)
	}

	// Chat 2, same user: the fact is recalled into the model's request.
	run2 := chatOK(t, env, "friend", snackQ, chatUser("alice", "c2"))
	if !modelSawFact(t, env, snackQ) {
		t.Error("alice's second chat: the model did not get the remembered fact")
	}
	if d := findEvent[longhaul.MemoryRecallData](t, runEvents(t, env, run2, chatUser("alice", "")), longhaul.EventMemoryRecall); d == nil || d.Count != 1 || d.Memories[0].Text != peanutFact {
		t.Errorf("chat 2 memory_recall = %+v", d)
	}

	// Below the threshold: nothing is recalled, and no event says so.
	run3 := chatOK(t, env, "friend", weatherQ, chatUser("alice", "c3"))
	if modelSawFact(t, env, weatherQ) {
		t.Error("a question below the threshold got the fact")
	}
	if d := findEvent[longhaul.MemoryRecallData](t, runEvents(t, env, run3, chatUser("alice", "")), longhaul.EventMemoryRecall); d != nil {
		t.Errorf("below the threshold: memory_recall = %+v", d)
	}

	// Bob asks the same question: nothing of Alice's reaches his model call.
	chatOK(t, env, "friend", snackQ, chatUser("bob", "c2"))
	if modelSawFact(t, env, snackQ) {
		t.Error("bob's chat got alice's fact")
	}
	if l := decode[wire.MemoryList](t, do(t, env, "GET", "/v1/memories", nil, chatUser("bob", ""))); len(l.Data) != 0 {
		t.Errorf("bob lists %+v", l.Data)
	}
	if l := decode[wire.MemoryList](t, do(t, env, "GET", "/v1/memories?q=peanuts", nil, chatUser("bob", ""))); len(l.Data) != 0 {
		t.Errorf("bob's search finds %+v", l.Data)
	}
	if resp := do(t, env, "DELETE", "/v1/memories/"+id, nil, chatUser("bob", "")); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob DELETE alice's memory: status %d, want 404", resp.StatusCode)
	}

	// Alice searches by meaning: the snack question finds the fact, with
	// its score.
	found := decode[wire.MemoryList](t, do(t, env, "GET", "/v1/memories?q="+urlQuery(snackQ), nil, chatUser("alice", "")))
	if len(found.Data) != 1 || found.Data[0].ID != id || found.Data[0].Score == nil || *found.Data[0].Score < 0.79 {
		t.Errorf("alice's search = %+v", found.Data)
	}
	if resp := do(t, env, "GET", "/v1/memories?limit=0", nil, chatUser("alice", "")); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("limit=0: status %d, want 400", resp.StatusCode)
	}
	if resp := do(t, env, "GET", "/v1/memories?page_token=nope", nil, chatUser("alice", "")); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bad page_token: status %d, want 400", resp.StatusCode)
	}

	// Alice deletes it; it is gone, and a second delete is a 404.
	del := do(t, env, "DELETE", "/v1/memories/"+id, nil, chatUser("alice", ""))
	if d := decode[wire.MemoryDeleted](t, del); del.StatusCode != http.StatusOK || !d.Deleted || d.ID != id {
		t.Fatalf("alice DELETE: %d %+v", del.StatusCode, d)
	}
	if l := decode[wire.MemoryList](t, do(t, env, "GET", "/v1/memories", nil, chatUser("alice", ""))); len(l.Data) != 0 {
		t.Errorf("after DELETE alice lists %+v", l.Data)
	}
	if resp := do(t, env, "DELETE", "/v1/memories/"+id, nil, chatUser("alice", "")); resp.StatusCode != http.StatusNotFound {
		t.Errorf("second DELETE: status %d, want 404", resp.StatusCode)
	}
}

// TestDeleteConversationForgetsItsMemories: deleting a chat through the
// conversations API removes the memories extracted from it, and only
// those: a fact learnt in another chat of the same user stays.
func TestDeleteConversationForgetsItsMemories(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{memoryAgents}, Memory: true})
	const other = "The user's cat is called Miso."
	env.Model.On(llmtest.HasResponseFormat(), llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		for _, m := range r.Chat.Messages {
			switch {
			case strings.Contains(m.Content, "allergic"):
				return llmtest.JSON(map[string]any{"facts": []string{peanutFact}})
			case strings.Contains(m.Content, "Miso"):
				return llmtest.JSON(map[string]any{"facts": []string{other}})
			}
		}
		return llmtest.JSON(map[string]any{"facts": []string{}})
	}))
	env.Model.SetDefault(llmtest.Text("Noted."))
	chatOK(t, env, "friend", "I am allergic to peanuts, by the way.", chatUser("alice", "c1"))
	chatOK(t, env, "friend", "My cat is called Miso.", chatUser("alice", "c2"))
	if l := decode[wire.MemoryList](t, do(t, env, "GET", "/v1/memories", nil, chatUser("alice", ""))); len(l.Data) != 2 {
		t.Fatalf("alice's memories = %+v, want one from each chat", l.Data)
	}

	if resp := do(t, env, "DELETE", "/v1/conversations/c1", nil, chatUser("alice", "")); resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE the chat = %d", resp.StatusCode)
	}
	l := decode[wire.MemoryList](t, do(t, env, "GET", "/v1/memories", nil, chatUser("alice", "")))
	if len(l.Data) != 1 || l.Data[0].Text != other || l.Data[0].ChatID != "c2" {
		t.Errorf("after deleting chat c1 alice's memories = %+v, want only c2's", l.Data)
	}
	if resp := do(t, env, "GET", "/v1/conversations/c1", nil, chatUser("alice", "")); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET the deleted chat = %d, want 404", resp.StatusCode)
	}
}

// TestMemoryToolsAreScopedToTheRunsUser: the memory tools act for the
// run's user whatever the model puts in their arguments; user B's
// memory_search never finds user A's memories, and B cannot forget A's.
func TestMemoryToolsAreScopedToTheRunsUser(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{memoryAgents}, Memory: true})
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{Name: "memory_save", Arguments: `{"text":"Alice's door code is the year she was born."}`}),
		llmtest.Text("Saved."),
	)
	chatOK(t, env, "notes", "remember my door code hint", chatUser("alice", "n1"))
	list := decode[wire.MemoryList](t, do(t, env, "GET", "/v1/memories", nil, chatUser("alice", "")))
	if len(list.Data) != 1 || list.Data[0].ChatID != "n1" {
		t.Fatalf("alice's memories = %+v", list.Data)
	}
	id := list.Data[0].ID

	// Bob's model searches for it (naming alice in vain: the tool takes
	// no user) and tries to forget it by its id.
	env.Model.Enqueue(
		llmtest.ToolCalls(
			llmtest.ToolCall{ID: "s", Name: "memory_search", Arguments: `{"query":"Alice's door code is the year she was born."}`},
			llmtest.ToolCall{ID: "f", Name: "memory_forget", Arguments: `{"id":"` + id + `"}`},
		),
		llmtest.Text("Nothing."),
	)
	chatOK(t, env, "notes", "what is alice's door code?", chatUser("bob", "n1"))
	reqs := env.Model.Requests()
	last := reqs[len(reqs)-1].Chat.Messages
	var search, forget string
	for _, m := range last {
		switch m.ToolCallID {
		case "s":
			search = m.Content
		case "f":
			forget = m.Content
		}
	}
	if !strings.Contains(search, "No memories") || strings.Contains(search, "door") {
		t.Errorf("bob's memory_search answered %q", search)
	}
	if !strings.Contains(forget, "no memory") {
		t.Errorf("bob's memory_forget answered %q", forget)
	}
	if l := decode[wire.MemoryList](t, do(t, env, "GET", "/v1/memories", nil, chatUser("alice", ""))); len(l.Data) != 1 {
		t.Errorf("alice's memory after bob's tools: %+v", l.Data)
	}
}

// TestMemorySearchWhenTheEmbedderFails: a search whose embedding call
// fails is the embedding endpoint's failure, a 502, not the store's.
func TestMemorySearchWhenTheEmbedderFails(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{memoryAgents}, Memory: true})
	env.Model.RequireKey("a key the embedder does not send")
	resp := do(t, env, "GET", "/v1/memories?q=peanuts", nil, chatUser("alice", ""))
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status = %d, want 502", resp.StatusCode)
	}
	e := decode[wire.ErrorBody](t, resp)
	if e.Error.Code != "upstream_error" || !strings.Contains(e.Error.Message, "the embedding endpoint failed") {
		t.Errorf("error = %+v", e.Error)
	}
}
