package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
)

const owuiSecret = "open-webui-forward-secret-0123456789"

// userToken signs the user as Open WebUI does with
// FORWARD_USER_INFO_HEADER_JWT_SECRET.
func userToken(t *testing.T, secret, sub string) string {
	t.Helper()
	now := time.Now()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": sub, "email": sub + "@example.com", "name": sub, "role": "user",
		"iss": "open-webui", "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
	}).SignedString([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// actor is a caller: the API it talks to and the headers it sends.
type actor struct {
	name    string
	base    string
	headers map[string]string
	// principal is who the server should take it for ("" for nobody).
	principal string
	// status is what every route answers it for the victim's run: 200-ish
	// for the owner, 404 for another principal, 401 without a valid
	// credential.
	status int
}

func (a actor) do(t *testing.T, method, path string, body any) *http.Response {
	t.Helper()
	return doAt(t, a.base, method, path, body, a.headers)
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// TestIsolation drives every route that touches a run, as every kind of
// actor, through the real server, and checks each cell: only the owner
// reads, follows, cancels or answers the run, or attaches to its chat.
// Two APIs serve one stack: one reads Open WebUI's plain user headers from
// its proxy key, the other only its signed user header, as two deployments
// would.
func TestIsolation(t *testing.T) {
	env, sh := approvalStack(t, api.Config{Keys: []identity.Key{
		{Name: "owui", Secret: "sk-owui", Proxy: true},
		{Name: "app", Secret: "sk-app"},
		{Name: "other", Secret: "sk-other"},
	}})
	signed := env.StartAPI(func(c *api.Config) { c.JWTSecret = []byte(owuiSecret) })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	bearer := func(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} }
	annHeaders := map[string]string{"X-OpenWebUI-User-Id": "ann", "X-OpenWebUI-User-Name": "Ann"}
	annToken := map[string]string{"X-OpenWebUI-User-Jwt": userToken(t, owuiSecret, "ann")}
	owner := actor{"owner (proxy key, user headers)", env.URL, merge(bearer("sk-owui"), annHeaders), "owui/ann", 200}
	actors := []actor{
		{"owner, signed user header", signed.URL, merge(bearer("sk-owui"), annToken), "owui/ann", 200},
		{"another user behind the same proxy key", env.URL, merge(bearer("sk-owui"), map[string]string{"X-OpenWebUI-User-Id": "bob"}), "owui/bob", 404},
		{"another user's signed header", signed.URL, merge(bearer("sk-owui"), map[string]string{"X-OpenWebUI-User-Jwt": userToken(t, owuiSecret, "cy")}), "owui/cy", 404},
		// A proxy key's request that names no user is refused, never the
		// shared principal of the key (every user of an Open WebUI would
		// be one): where users come from plain headers and where they come
		// only from the signed header.
		{"the proxy key itself", env.URL, bearer("sk-owui"), "", 401},
		{"plain headers where only signed ones count", signed.URL, merge(bearer("sk-owui"), annHeaders), "", 401},
		{"the proxy key itself, signed API", signed.URL, bearer("sk-owui"), "", 401},
		{"another key", env.URL, bearer("sk-other"), "other", 404},
		{"a plain key sending the victim's headers", env.URL, merge(bearer("sk-app"), annHeaders, annToken), "app", 404},
		{"a plain key sending the victim's headers, signed API", signed.URL, merge(bearer("sk-app"), annHeaders, annToken), "app", 404},
		{"no key", env.URL, annHeaders, "", 401},
		{"a wrong key", env.URL, merge(bearer("sk-guess"), annHeaders), "", 401},
		{"a forged signed header", signed.URL, merge(bearer("sk-owui"), map[string]string{"X-OpenWebUI-User-Jwt": userToken(t, "not-the-secret-not-the-secret-0000", "ann")}), "", 401},
	}
	// chats are the run each principal's copy of ann's chat request ran as:
	// the same principal's next copy attaches to it.
	chats := map[string]string{}

	// The victim's run waits for her approval of an order, and has a
	// stored output.
	scriptOrderCall(env, "o1")
	run := startRunAt(t, env.URL, map[string]any{"agent": "clerk", "input": "Order a book"}, owner.headers)
	readEvents(t, openStreamAt(t, ctx, env.URL+"/v1/runs/"+run.ID+"/events", "", owner.headers), func(e sseEvent) bool {
		return e.Type == string(longhaul.EventApprovalRequired)
	})
	ref, err := env.Blobs.Put(ctx, store.Blob{Run: run.ID, Kind: "tool", Name: "place_order", Data: []byte("the whole receipt")})
	if err != nil {
		t.Fatal(err)
	}
	// Her chat has answered one turn.
	const chat = "shared-chat-id"
	chatReq := chatBody{"model": "clerk", "messages": conversation("Hello")}
	chatHeaders := map[string]string{"X-OpenWebUI-Chat-Id": chat, "X-OpenWebUI-Message-Id": "m1"}
	env.Model.Enqueue(llmtest.Text("Hello Ann."))
	first := doAt(t, owner.base, "POST", "/v1/chat/completions", chatReq, merge(owner.headers, chatHeaders))
	annChat := first.Header.Get(api.HeaderRunID)
	if first.StatusCode != 200 || annChat == "" {
		t.Fatalf("ann's chat = %d, run %q", first.StatusCode, annChat)
	}

	// She has a memory.
	saved, err := env.Memory.Remember(ctx, "owui/ann", "", "", []string{"Ann keeps her spare key under the blue pot."})
	if err != nil {
		t.Fatal(err)
	}
	memID := saved[0].ID

	paths := []struct {
		method, path string
		body         any
	}{
		{"DELETE", "/v1/memories/" + memID, nil},
		{"GET", "/v1/runs/" + run.ID, nil},
		{"GET", "/v1/runs/" + run.ID + "/events", nil},
		{"GET", "/v1/runs/" + run.ID + "/outputs/" + url.PathEscape(ref), nil},
		{"POST", "/v1/runs/" + run.ID + "/cancel", map[string]any{}},
		{"POST", "/v1/runs/" + run.ID + "/input", map[string]any{"approve": true}},
		{"GET", "/v1/runs/" + annChat, nil},
	}
	for _, a := range append([]actor{}, actors...) {
		if a.status == 200 {
			continue // the owner's cells are checked last, below
		}
		t.Run(a.name, func(t *testing.T) {
			for _, p := range paths {
				resp := a.do(t, p.method, p.path, p.body)
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != a.status || !strings.Contains(string(b), `"error"`) {
					t.Errorf("%s %s = %d %s, want %d", p.method, p.path, resp.StatusCode, b, a.status)
				}
				if strings.Contains(string(b), "receipt") || strings.Contains(string(b), "Order a book") || strings.Contains(string(b), "blue pot") {
					t.Errorf("%s %s leaks the run: %s", p.method, p.path, b)
				}
			}
			list := a.do(t, "GET", "/v1/runs", nil)
			b, _ := io.ReadAll(list.Body)
			switch {
			case a.status == 401 && list.StatusCode != 401:
				t.Errorf("GET /v1/runs = %d, want 401", list.StatusCode)
			case a.status != 401 && (list.StatusCode != 200 || strings.Contains(string(b), run.ID) || strings.Contains(string(b), annChat)):
				t.Errorf("GET /v1/runs = %d %s: lists the victim's runs", list.StatusCode, b)
			}
			for _, q := range []string{"/v1/memories", "/v1/memories?q=" + url.QueryEscape("Ann keeps her spare key under the blue pot.")} {
				mem := a.do(t, "GET", q, nil)
				b, _ := io.ReadAll(mem.Body)
				switch {
				case a.status == 401 && mem.StatusCode != 401:
					t.Errorf("GET %s = %d, want 401", q, mem.StatusCode)
				case a.status != 401 && (mem.StatusCode != 200 || strings.Contains(string(b), memID) || strings.Contains(string(b), "blue pot")):
					t.Errorf("GET %s = %d %s: shows the victim's memory", q, mem.StatusCode, b)
				}
			}

			// Ann's chat through the conversations API: a principal that
			// has no chat of that id of its own gets a 404 (its own copy,
			// once it made one, is its own), and never her turns.
			earlier, seen := chats[a.principal]
			convPaths := []string{"GET /v1/conversations/" + chat, "GET /v1/conversations"}
			if !seen {
				convPaths = append(convPaths, "DELETE /v1/conversations/"+chat)
			}
			for _, mp := range convPaths {
				method, path, _ := strings.Cut(mp, " ")
				resp := a.do(t, method, path, nil)
				b, _ := io.ReadAll(resp.Body)
				want := a.status
				if path == "/v1/conversations" && want == 404 || seen {
					want = 200 // a list, or the principal's own chat
				}
				if resp.StatusCode != want || strings.Contains(string(b), "Hello Ann.") || strings.Contains(string(b), annChat) {
					t.Errorf("%s = %d %s, want %d without ann's chat", mp, resp.StatusCode, b, want)
				}
			}

			// The same chat id and message, sent as this actor: never
			// ann's run, never her answer.
			if a.status == 401 {
				resp := a.do(t, "POST", "/v1/chat/completions", chatReq)
				if resp.StatusCode != 401 {
					t.Errorf("chat = %d, want 401", resp.StatusCode)
				}
				return
			}
			if !seen {
				env.Model.Enqueue(llmtest.Text("Hello " + a.principal + "."))
			}
			resp := doAt(t, a.base, "POST", "/v1/chat/completions", chatReq, merge(a.headers, chatHeaders))
			b, _ = io.ReadAll(resp.Body)
			got := resp.Header.Get(api.HeaderRunID)
			if resp.StatusCode != 200 || got == annChat || !strings.Contains(string(b), "Hello "+a.principal+".") {
				t.Fatalf("the same chat id as another principal = %d, run %q (ann's %q): %s", resp.StatusCode, got, annChat, b)
			}
			if seen && got != earlier {
				t.Errorf("%s's second copy ran as %q, not in its first run %q", a.principal, got, earlier)
			}
			chats[a.principal] = got
		})
	}
	if n := sh.count(); n != 0 {
		t.Fatalf("the order was placed %d times without its owner's approval", n)
	}
	if got := getRunAt(t, env.URL, run.ID, owner.headers); got.Status != contract.StatusWaiting {
		t.Fatalf("after the others tried, the run is %q, want still waiting", got.Status)
	}

	// The owner, by either kind of header, reads everything, attaches to
	// her chat's run, and answers the run.
	for _, a := range []actor{owner, actors[0]} {
		mem := a.do(t, "GET", "/v1/memories", nil)
		if b, _ := io.ReadAll(mem.Body); mem.StatusCode != 200 || !strings.Contains(string(b), memID) {
			t.Errorf("%s: GET /v1/memories = %d %s, want her memory", a.name, mem.StatusCode, b)
		}
		for _, p := range paths[1:4] {
			resp := a.do(t, p.method, p.path, p.body)
			if p.method == "GET" && strings.HasSuffix(p.path, "/events") {
				if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
					t.Errorf("%s: events = %d", a.name, resp.StatusCode)
				}
				resp.Body.Close()
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 {
				t.Errorf("%s: %s %s = %d %s", a.name, p.method, p.path, resp.StatusCode, b)
			}
		}
		eventually(t, ctx, func() string {
			if ids := ids(listRunsAt(t, a.base, nil, a.headers)); !contains(ids, run.ID) || !contains(ids, annChat) {
				return fmt.Sprintf("%s: her list %v lacks %s or %s", a.name, ids, run.ID, annChat)
			}
			return ""
		})
		again := doAt(t, a.base, "POST", "/v1/chat/completions", chatReq, merge(a.headers, chatHeaders))
		b, _ := io.ReadAll(again.Body)
		if got := again.Header.Get(api.HeaderRunID); got != annChat || !strings.Contains(string(b), "Hello Ann.") {
			t.Errorf("%s: the retried chat request ran as %q (want %q): %s", a.name, got, annChat, b)
		}
	}
	// Ann reads her chat's timeline and deletes it; then it is gone for
	// her too.
	for _, a := range []actor{owner, actors[0]} {
		resp := a.do(t, "GET", "/v1/conversations/"+chat, nil)
		if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || !strings.Contains(string(b), annChat) || !strings.Contains(string(b), "Hello Ann.") {
			t.Errorf("%s: GET her conversation = %d %s", a.name, resp.StatusCode, b)
		}
	}
	if resp := actors[0].do(t, "DELETE", "/v1/conversations/"+chat, nil); resp.StatusCode != 200 {
		t.Errorf("the owner's DELETE = %d", resp.StatusCode)
	}
	if resp := owner.do(t, "GET", "/v1/conversations/"+chat, nil); resp.StatusCode != 404 {
		t.Errorf("GET after the owner's DELETE = %d, want 404", resp.StatusCode)
	}
	if resp := owner.do(t, "DELETE", "/v1/memories/"+memID, nil); resp.StatusCode != 200 {
		t.Errorf("the owner's DELETE of her memory = %d", resp.StatusCode)
	}
	told := make(chan string, 1)
	scriptOrderAnswer(env, "o1", told)
	resp := actors[0].do(t, "POST", "/v1/runs/"+run.ID+"/input", map[string]any{"approve": true})
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 {
		t.Fatalf("the owner's approval = %d %s", resp.StatusCode, b)
	}
	if tool := <-told; !strings.Contains(tool, "placed: book") {
		t.Errorf("the model read %q", tool)
	}
	if n := sh.count(); n != 1 {
		t.Errorf("the shop has %d orders, want 1", n)
	}
}
