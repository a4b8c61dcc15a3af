package account_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/account"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/memory"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
	"github.com/longhaul-dev/longhaul/internal/usercreds"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

const tokenKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// recorder is the handlers' ConversationForgetter and ChatFiles: it
// records the chats it is told of.
type recorder struct {
	webtest.Forgetter
	mu        sync.Mutex
	filesGone []string
}

func (r *recorder) DeleteChatFiles(_ context.Context, owner, chat string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.filesGone = append(r.filesGone, owner+" "+chat)
	return nil
}

var (
	_ account.ConversationForgetter = (*recorder)(nil)
	_ account.ChatFiles             = (*recorder)(nil)
)

// embedder embeds a text as a unit vector of its own: no two texts are
// alike, and a text is most like itself.
type embedder struct{}

func (embedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, s := range texts {
		v := make([]float32, 16)
		v[len(s)%16] = 1
		out[i] = v
	}
	return out, nil
}

// env is the account routes over SQLite stores, every part present.
type env struct {
	app   *fiber.App
	h     *account.Handlers
	st    store.Store
	mem   memory.Store
	docs  docstore.Store
	creds *usercreds.Service
	rec   *recorder
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(t.Context(), "sqlite://"+filepath.Join(dir, "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	mem, err := memory.Open(t.Context(), "sqlite://"+filepath.Join(dir, "memory.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	docs, err := docstore.Open(t.Context(), "sqlite://"+filepath.Join(dir, "docs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { docs.Close() })
	box, err := usercreds.NewBox(tokenKey)
	if err != nil {
		t.Fatal(err)
	}
	creds := &usercreds.Service{Store: st.(store.Credentials), Box: box, PublicURL: "http://longhaul.test"}
	rec := &recorder{}
	h := &account.Handlers{Conversations: st, Backlog: st, Forget: rec, ChatFiles: rec, Memory: &memory.Service{Store: mem, Embedder: embedder{}},
		Credentials: creds, Docs: docs, Webhooks: st.(store.Webhooks), Log: slog.New(slog.DiscardHandler)}
	return &env{app: serve(t, h), h: h, st: st, mem: mem, docs: docs, creds: creds, rec: rec}
}

// serve registers h's routes as the server's routes table does.
func serve(t *testing.T, h *account.Handlers) *fiber.App {
	return webtest.App(t, func(root, v1 fiber.Router) {
		root.Get(usercreds.CallbackPath, h.OAuthCallback)
		root.Get(usercreds.ConnectPath+":id", h.ConnectPage)
		root.Post(usercreds.ConnectPath+":id", h.ConfirmConnect)
		v1.Get("/conversations", h.ListConversations)
		v1.Get("/conversations/:id", h.GetConversation)
		v1.Delete("/conversations/:id", h.DeleteConversation)
		v1.Get("/memories", h.ListMemories)
		v1.Delete("/memories/:id", h.DeleteMemory)
		v1.Get("/connections", h.ListConnections)
		v1.Get("/connections/:server/authorize", h.AuthorizeConnection)
		v1.Delete("/connections/:server", h.DeleteConnection)
		v1.Get("/secrets", h.ListSecrets)
		v1.Put("/secrets/:name", h.PutSecret)
		v1.Delete("/secrets/:name", h.DeleteSecret)
		v1.Get("/backlog", h.ListBacklog)
		v1.Delete("/me", h.DeleteMe)
	})
}

// keys are the store's user and chat keys of a client's chat id.
func keys(t *testing.T, who map[string]string, chat string) (user, chatKey string) {
	t.Helper()
	p := webtest.Principal(t, who)
	return p.User.Key(), identity.ChatKey(p.Name, chat)
}

// putTurn stores a turn of who's chat, with a user message, a tool call
// and its output, and the answer.
func (e *env) putTurn(t *testing.T, who map[string]string, chat, run string, at time.Time) {
	t.Helper()
	user, ck := keys(t, who, chat)
	msgs := []contract.TimelineMessage{
		{Role: "user", Content: "trending movies please"},
		{Role: "assistant", ToolCalls: []longhaul.ToolCall{{ID: "call_a", Name: "tmdb_trending", Arguments: "{}"}}},
		{Role: "tool", Content: "Mortal Kombat II", ToolCallID: "call_a", Truncated: true, Ref: "call_a"},
		{Role: "assistant", Content: "Mortal Kombat II leads."},
	}
	turn := store.Turn{User: user, Chat: ck, Run: run, Turn: 1, Agent: "moviebot", Status: "completed", Title: "trending movies please",
		PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, StartedAt: at, FinishedAt: at.Add(time.Second)}
	for i, m := range msgs {
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		turn.Messages = append(turn.Messages, store.TurnMessage{Seq: i, Data: data})
	}
	if err := e.st.PutTurn(t.Context(), turn); err != nil {
		t.Fatal(err)
	}
}

func do(t *testing.T, e *env, method, path string, body any, who map[string]string) *http.Response {
	t.Helper()
	return webtest.Do(t, e.app, method, path, body, who)
}

// TestConversations: a caller lists, reads and deletes their own chats,
// paged; another caller's chat of the same id is another chat.
func TestConversations(t *testing.T) {
	e := newEnv(t)
	now := time.Now().UTC().Truncate(time.Second)
	e.putTurn(t, webtest.Alice, "chat-7", "run-7", now.Add(-time.Hour))
	e.putTurn(t, webtest.Alice, "chat-8", "run-8", now)
	e.putTurn(t, webtest.Bob, "chat-7", "run-b7", now)

	first := webtest.Decode[wire.ConversationList](t, do(t, e, "GET", "/v1/conversations?limit=1", nil, webtest.Alice))
	if len(first.Data) != 1 || first.Data[0].ID != "chat-8" || first.NextPageToken == "" {
		t.Fatalf("first page = %+v, want chat-8 and a next page", first)
	}
	second := webtest.Decode[wire.ConversationList](t, do(t, e, "GET", "/v1/conversations?limit=1&page_token="+first.NextPageToken, nil, webtest.Alice))
	if len(second.Data) != 1 || second.Data[0].ID != "chat-7" || second.Data[0].Title != "trending movies please" || second.Data[0].Turns != 1 || second.NextPageToken != "" {
		t.Fatalf("second page = %+v, want chat-7 alone", second)
	}
	for _, tt := range []struct {
		name, method, path string
		who                map[string]string
		status             int
		msg                string
	}{
		{"bad page token", "GET", "/v1/conversations?page_token=bogus", webtest.Alice, 400, "page_token"},
		{"another's page token", "GET", "/v1/conversations?page_token=" + first.NextPageToken, webtest.Bob, 400, "page_token"},
		{"limit 0", "GET", "/v1/conversations?limit=0", webtest.Alice, 400, "limit"},
		{"limit over 100", "GET", "/v1/conversations?limit=101", webtest.Alice, 400, "limit"},
		{"unknown chat", "GET", "/v1/conversations/chat-9", webtest.Alice, 404, "no conversation chat-9"},
		{"another's chat", "GET", "/v1/conversations/chat-8", webtest.Bob, 404, "no conversation chat-8"},
		{"delete another's chat", "DELETE", "/v1/conversations/chat-8", webtest.Bob, 404, "no conversation chat-8"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			webtest.WantError(t, do(t, e, tt.method, tt.path, nil, tt.who), tt.status, tt.msg)
		})
	}

	detail := webtest.Decode[wire.ConversationDetail](t, do(t, e, "GET", "/v1/conversations/chat-7", nil, webtest.Alice))
	call := wire.WireToolCall{ID: "call_a", Type: "function"}
	call.Function.Name, call.Function.Arguments = "tmdb_trending", "{}"
	want := []wire.ConversationTurn{{
		RunID: "run-7", Turn: 1, Agent: "moviebot", Status: "completed", StartedAt: now.Add(-time.Hour), FinishedAt: now.Add(-time.Hour + time.Second),
		Usage: wire.WireUsage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15},
		Messages: []wire.ConversationMessage{
			{Role: "user", Content: "trending movies please"},
			{Role: "assistant", ToolCalls: []wire.WireToolCall{call}},
			{Role: "tool", Content: "Mortal Kombat II", ToolCallID: "call_a", Truncated: true, Ref: "call_a", OutputURL: "/v1/runs/run-7/outputs/call_a"},
			{Role: "assistant", Content: "Mortal Kombat II leads."},
		},
	}}
	if diff := cmp.Diff(want, detail.Timeline); diff != "" || detail.ID != "chat-7" {
		t.Errorf("chat-7 %s, timeline (-want +got):\n%s", detail.ID, diff)
	}

	del := webtest.Decode[wire.ConversationDeleted](t, do(t, e, "DELETE", "/v1/conversations/chat-7", nil, webtest.Alice))
	if diff := cmp.Diff(wire.ConversationDeleted{ID: "chat-7", Object: "conversation.deleted", Deleted: true, Runs: []string{"run-7"}}, del); diff != "" {
		t.Errorf("delete (-want +got):\n%s", diff)
	}
	user, ck := keys(t, webtest.Alice, "chat-7")
	if want := []string{user + " " + ck}; !cmp.Equal(e.rec.Forgotten(), want) || !cmp.Equal(e.rec.filesGone, want) {
		t.Errorf("forgotten %q, files deleted %q; want %q each", e.rec.Forgotten(), e.rec.filesGone, want)
	}
	webtest.WantError(t, do(t, e, "GET", "/v1/conversations/chat-7", nil, webtest.Alice), 404, "no conversation")
	if got := webtest.Decode[wire.ConversationDetail](t, do(t, e, "GET", "/v1/conversations/chat-7", nil, webtest.Bob)); got.Turns != 1 {
		t.Errorf("bob's chat-7 after alice deleted hers = %+v", got.ConversationSummary)
	}
}

// saveMemory saves a memory of who's, learnt in chat.
func (e *env) saveMemory(t *testing.T, who map[string]string, chat, text string) string {
	t.Helper()
	user, ck := keys(t, who, chat)
	v, _ := embedder{}.Embed(t.Context(), []string{text})
	saved, err := e.mem.Save(t.Context(), memory.Memory{User: user, Text: text, ChatID: ck, Vector: v[0]})
	if err != nil {
		t.Fatal(err)
	}
	return saved.ID
}

// TestMemories: a caller lists, searches and deletes their own memories;
// another's are not found.
func TestMemories(t *testing.T) {
	e := newEnv(t)
	peanuts := e.saveMemory(t, webtest.Alice, "c1", "Is allergic to peanuts.")
	e.saveMemory(t, webtest.Alice, "c2", "Lives in Lyon.")
	bobs := e.saveMemory(t, webtest.Bob, "c1", "Plays the cello.")

	list := webtest.Decode[wire.MemoryList](t, do(t, e, "GET", "/v1/memories?limit=1", nil, webtest.Alice))
	if len(list.Data) != 1 || list.NextPageToken == "" {
		t.Fatalf("first page = %+v, want one memory and a next page", list)
	}
	rest := webtest.Decode[wire.MemoryList](t, do(t, e, "GET", "/v1/memories?page_token="+list.NextPageToken, nil, webtest.Alice))
	if len(rest.Data) != 1 || rest.NextPageToken != "" || rest.Data[0].ID == list.Data[0].ID {
		t.Errorf("second page = %+v", rest)
	}
	found := webtest.Decode[wire.MemoryList](t, do(t, e, "GET", "/v1/memories?q=Is+allergic+to+peanuts.", nil, webtest.Alice))
	if len(found.Data) == 0 || found.Data[0].ID != peanuts || found.Data[0].ChatID != "c1" || found.Data[0].Score == nil {
		t.Errorf("search = %+v, want the peanut memory first, in chat c1, scored", found.Data)
	}
	for _, tt := range []struct {
		name, method, path string
		status             int
		msg                string
	}{
		{"bad limit", "GET", "/v1/memories?limit=0", 400, "limit"},
		{"search with a page token", "GET", "/v1/memories?q=x&page_token=y", 400, "page_token"},
		{"bad page token", "GET", "/v1/memories?page_token=bogus", 400, "page_token"},
		{"long query", "GET", "/v1/memories?q=" + strings.Repeat("a", 2001), 400, "q: at most"},
		{"another's memory", "DELETE", "/v1/memories/" + bobs, 404, "no memory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			webtest.WantError(t, do(t, e, tt.method, tt.path, nil, webtest.Alice), tt.status, tt.msg)
		})
	}
	del := webtest.Decode[wire.MemoryDeleted](t, do(t, e, "DELETE", "/v1/memories/"+peanuts, nil, webtest.Alice))
	if del != (wire.MemoryDeleted{ID: peanuts, Object: "memory.deleted", Deleted: true}) {
		t.Errorf("delete = %+v", del)
	}
	webtest.WantError(t, do(t, e, "DELETE", "/v1/memories/"+peanuts, nil, webtest.Alice), 404, "no memory")
	if got := webtest.Decode[wire.MemoryList](t, do(t, e, "GET", "/v1/memories", nil, webtest.Bob)); len(got.Data) != 1 || got.Data[0].ID != bobs {
		t.Errorf("bob's memories = %+v", got.Data)
	}
}

// TestSecrets: a caller sets, lists (names only) and deletes their own
// secrets.
func TestSecrets(t *testing.T) {
	e := newEnv(t)
	put := webtest.Decode[wire.SecretObject](t, do(t, e, "PUT", "/v1/secrets/SHOP", map[string]string{"value": "alice-key"}, webtest.Alice))
	if put.Name != "SHOP" || put.Object != "secret" {
		t.Errorf("put = %+v", put)
	}
	for _, tt := range []struct {
		name, method, path string
		body               any
		status             int
		msg                string
	}{
		{"bad name", "PUT", "/v1/secrets/no%20spaces", map[string]string{"value": "x"}, 400, ""},
		{"no value", "PUT", "/v1/secrets/SHOP", map[string]string{}, 400, `{"value": "<the secret>"}`},
		{"empty value", "PUT", "/v1/secrets/SHOP", map[string]string{"value": ""}, 400, "DELETE the secret instead"},
		{"too long", "PUT", "/v1/secrets/SHOP", map[string]string{"value": strings.Repeat("x", usercreds.MaxSecretSize+1)}, 413, "at most"},
		{"another's secret", "DELETE", "/v1/secrets/SHOP", nil, 404, "no secret"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			who := webtest.Alice
			if tt.name == "another's secret" {
				who = webtest.Bob
			}
			webtest.WantError(t, do(t, e, tt.method, tt.path, tt.body, who), tt.status, tt.msg)
		})
	}
	list := webtest.Decode[wire.SecretList](t, do(t, e, "GET", "/v1/secrets", nil, webtest.Alice))
	if len(list.Data) != 1 || list.Data[0].Name != "SHOP" {
		t.Errorf("alice's secrets = %+v", list.Data)
	}
	if body, _ := io.ReadAll(do(t, e, "GET", "/v1/secrets", nil, webtest.Alice).Body); strings.Contains(string(body), "alice-key") {
		t.Errorf("the list shows a secret's value: %s", body)
	}
	if got := webtest.Decode[wire.SecretList](t, do(t, e, "GET", "/v1/secrets", nil, webtest.Bob)); len(got.Data) != 0 {
		t.Errorf("bob's secrets = %+v", got.Data)
	}
	del := webtest.Decode[wire.Deleted](t, do(t, e, "DELETE", "/v1/secrets/SHOP", nil, webtest.Alice))
	if del != (wire.Deleted{ID: "SHOP", Object: "secret.deleted", Deleted: true}) {
		t.Errorf("delete = %+v", del)
	}
}

// TestConnections: with no MCP server to connect, the list is empty and
// a server is not found.
func TestConnections(t *testing.T) {
	e := newEnv(t)
	if got := webtest.Decode[wire.ConnectionList](t, do(t, e, "GET", "/v1/connections", nil, webtest.Alice)); got.Object != "list" || len(got.Data) != 0 {
		t.Errorf("connections = %+v", got)
	}
	webtest.WantError(t, do(t, e, "GET", "/v1/connections/github/authorize?redirect=false", nil, webtest.Alice), 404, "github")
	webtest.WantError(t, do(t, e, "DELETE", "/v1/connections/github", nil, webtest.Alice), 404, "github")
	webtest.WantError(t, do(t, e, "POST", usercreds.ConnectPath+"abc", nil, nil), 403, "confirm on the connect page")
}

// TestBacklog: a caller reads their own backlog, filtered and bounded.
func TestBacklog(t *testing.T) {
	e := newEnv(t)
	user, ck := keys(t, webtest.Alice, "c1")
	for i, title := range []string{"Renew passport", "Call the plumber"} {
		if _, err := e.st.AddBacklogItem(t.Context(), store.BacklogItem{User: user, Title: title, Chat: ck}, fmt.Sprint("k", i)); err != nil {
			t.Fatal(err)
		}
	}
	list := webtest.Decode[wire.BacklogList](t, do(t, e, "GET", "/v1/backlog?q=passport", nil, webtest.Alice))
	if list.Total != 1 || len(list.Data) != 1 || list.Data[0].Title != "Renew passport" || list.Data[0].ChatID != "c1" || list.Data[0].Object != "backlog.item" {
		t.Errorf("backlog = %+v", list)
	}
	if got := webtest.Decode[wire.BacklogList](t, do(t, e, "GET", "/v1/backlog", nil, webtest.Bob)); got.Total != 0 {
		t.Errorf("bob's backlog = %+v", got)
	}
	for _, tt := range []struct{ path, msg string }{
		{"/v1/backlog?status=someday", "status: must be"},
		{"/v1/backlog?limit=0", "limit"},
		{"/v1/backlog?q=" + strings.Repeat("a", 4*store.MaxBacklogTitle+1), "q: at most"},
	} {
		webtest.WantError(t, do(t, e, "GET", tt.path, nil, webtest.Alice), 400, tt.msg)
	}
}

// TestDeleteMe: DELETE /v1/me takes everything of the caller's, and only
// theirs; a second call finds nothing.
func TestDeleteMe(t *testing.T) {
	e := newEnv(t)
	for _, who := range []map[string]string{webtest.Alice, webtest.Bob} {
		e.putTurn(t, who, "c1", "run-"+webtest.Principal(t, who).Name, time.Now())
		e.saveMemory(t, who, "c1", "Is allergic to peanuts.")
		user, _ := keys(t, who, "c1")
		if _, err := e.st.AddBacklogItem(t.Context(), store.BacklogItem{User: user, Title: "Renew passport"}, "k"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.docs.PutFile(t.Context(), docstore.File{Owner: user, Filename: "a.txt", Purpose: "assistants"}, strings.NewReader("a")); err != nil {
			t.Fatal(err)
		}
		do(t, e, "PUT", "/v1/secrets/SHOP", map[string]string{"value": "key"}, who)
		if _, err := e.st.(store.Webhooks).CreateWebhook(t.Context(), store.Webhook{ID: "wh_" + user, Owner: user, URL: "https://hooks.example.com/", Secret: "whsec_x"}, 0); err != nil {
			t.Fatal(err)
		}
	}
	got := webtest.Decode[wire.UserDeleted](t, do(t, e, "DELETE", "/v1/me", nil, webtest.Alice))
	want := wire.UserDeleted{Object: "user.deleted", Deleted: true, Conversations: 1, Memories: 1, BacklogItems: 1, Credentials: 1, Documents: true, Webhooks: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DELETE /v1/me (-want +got):\n%s", diff)
	}
	again := webtest.Decode[wire.UserDeleted](t, do(t, e, "DELETE", "/v1/me", nil, webtest.Alice))
	if diff := cmp.Diff(wire.UserDeleted{Object: "user.deleted", Deleted: true}, again); diff != "" {
		t.Errorf("a second DELETE /v1/me (-want +got):\n%s", diff)
	}
	if got := webtest.Decode[wire.ConversationList](t, do(t, e, "GET", "/v1/conversations", nil, webtest.Bob)); len(got.Data) != 1 {
		t.Errorf("bob's conversations after alice left = %+v", got.Data)
	}
	if got := webtest.Decode[wire.SecretList](t, do(t, e, "GET", "/v1/secrets", nil, webtest.Bob)); len(got.Data) != 1 {
		t.Errorf("bob's secrets after alice left = %+v", got.Data)
	}
}

// TestRoutesWithoutStores: on a server that keeps none of it, each
// account route answers 404 with the reason, and DELETE /v1/me deletes
// nothing.
func TestRoutesWithoutStores(t *testing.T) {
	app := serve(t, &account.Handlers{Log: slog.New(slog.DiscardHandler)})
	for _, tt := range []struct{ method, path, msg string }{
		{"GET", "/v1/conversations", "keeps no conversations"},
		{"DELETE", "/v1/conversations/c1", "keeps no conversations"},
		{"GET", "/v1/memories", "LONGHAUL_EMBED_MODEL"},
		{"GET", "/v1/connections", "LONGHAUL_TOKEN_KEY"},
		{"PUT", "/v1/secrets/SHOP", "LONGHAUL_TOKEN_KEY"},
		{"GET", "/v1/backlog", "keeps no backlog"},
		{"GET", usercreds.CallbackPath, "LONGHAUL_TOKEN_KEY"},
	} {
		webtest.WantError(t, webtest.Do(t, app, tt.method, tt.path, map[string]string{"value": "x"}, webtest.Alice), http.StatusNotFound, tt.msg)
	}
	if got := webtest.Decode[wire.UserDeleted](t, webtest.Do(t, app, "DELETE", "/v1/me", nil, webtest.Alice)); got != (wire.UserDeleted{Object: "user.deleted", Deleted: true}) {
		t.Errorf("DELETE /v1/me = %+v", got)
	}
}

// ownerSchedules is a fake of the engine's schedules: owners by id.
type ownerSchedules map[string]string

func (s ownerSchedules) DeleteOwnerSchedules(_ context.Context, owner string) (int, error) {
	n := 0
	for id, o := range s {
		if o == owner {
			delete(s, id)
			n++
		}
	}
	return n, nil
}

// TestDeletedPrincipalLeavesNoSchedule is the attack of a schedule that
// outlives its owner's DELETE /v1/me and brings data back at its next
// fire: the caller's schedules go with the rest, and only theirs.
func TestDeletedPrincipalLeavesNoSchedule(t *testing.T) {
	e := newEnv(t)
	alice, bob := webtest.Principal(t, webtest.Alice).Name, webtest.Principal(t, webtest.Bob).Name
	sched := ownerSchedules{"sched-a1": alice, "sched-a2": alice, "sched-b": bob}
	e.h.Schedules = sched
	got := webtest.Decode[wire.UserDeleted](t, do(t, e, "DELETE", "/v1/me", nil, webtest.Alice))
	if got.Schedules != 2 || len(sched) != 1 || sched["sched-b"] != bob {
		t.Errorf("DELETE /v1/me deleted %d schedules, left %v", got.Schedules, sched)
	}
}
