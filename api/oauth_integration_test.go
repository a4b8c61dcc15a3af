package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul/internal/mcp"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/usercreds"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/auth"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/sashabaranov/go-openai"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/proto"
)

// authServer is a small OAuth 2.1 authorization server, real HTTP: RFC 8414
// metadata, RFC 7591 registration, the authorization-code grant with PKCE
// S256 checked at the token endpoint, single-use codes, refresh-token
// rotation and RFC 7009 revocation. Its "login" is the X-Test-Login
// header of the browser's request to /authorize.
type authServer struct {
	*httptest.Server
	lifetime time.Duration // of access tokens

	mu        sync.Mutex
	clients   map[string][]string // client id -> redirect URIs
	codes     map[string]authCode
	tokens    map[string]*grant // access and refresh tokens
	issued    []string          // every token ever issued
	exchanged map[string]string // sub -> the access token of the code exchange
	refreshes int
	revoked   int
	pkceFails int
}

type authCode struct{ sub, client, redirect, challenge string }

type grant struct {
	sub     string
	refresh bool
	revoked bool
	expires time.Time
}

func newAuthServer(t *testing.T) *authServer {
	a := &authServer{lifetime: 30 * time.Second, clients: map[string][]string{}, codes: map[string]authCode{},
		tokens: map[string]*grant{}, exchanged: map[string]string{}}
	mux := http.NewServeMux()
	a.Server = httptest.NewServer(mux)
	t.Cleanup(a.Close)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, oauthex.AuthServerMeta{
			Issuer: a.URL, AuthorizationEndpoint: a.URL + "/authorize", TokenEndpoint: a.URL + "/token",
			RegistrationEndpoint: a.URL + "/register", RevocationEndpoint: a.URL + "/revoke",
			ResponseTypesSupported: []string{"code"}, GrantTypesSupported: []string{"authorization_code", "refresh_token"},
			CodeChallengeMethodsSupported: []string{"S256"}, TokenEndpointAuthMethodsSupported: []string{"none"},
			ScopesSupported: []string{"mcp"},
		})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		var m oauthex.ClientRegistrationMetadata
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil || len(m.RedirectURIs) == 0 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
			return
		}
		a.mu.Lock()
		id := "client-" + rand.Text()[:8]
		a.clients[id] = m.RedirectURIs
		a.mu.Unlock()
		writeJSON(w, http.StatusCreated, map[string]any{"client_id": id, "redirect_uris": m.RedirectURIs, "token_endpoint_auth_method": "none"})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		a.mu.Lock()
		redirects, ok := a.clients[q.Get("client_id")]
		a.mu.Unlock()
		switch {
		case !ok, !slices.Contains(redirects, q.Get("redirect_uri")):
			http.Error(w, "unknown client or redirect_uri", http.StatusBadRequest)
			return
		case q.Get("response_type") != "code", q.Get("code_challenge_method") != "S256", q.Get("code_challenge") == "", q.Get("state") == "":
			http.Error(w, "PKCE S256 and state are required", http.StatusBadRequest)
			return
		case r.Header.Get("X-Test-Login") == "":
			http.Error(w, "not logged in", http.StatusUnauthorized)
			return
		}
		code := rand.Text()
		a.mu.Lock()
		a.codes[code] = authCode{sub: r.Header.Get("X-Test-Login"), client: q.Get("client_id"), redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge")}
		a.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"code": {code}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		a.mu.Lock()
		defer a.mu.Unlock()
		bad := func() { writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"}) }
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			c, ok := a.codes[r.PostForm.Get("code")]
			delete(a.codes, r.PostForm.Get("code")) // single use
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if ok && base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
				a.pkceFails++
				ok = false
			}
			if !ok || c.client != r.PostForm.Get("client_id") || c.redirect != r.PostForm.Get("redirect_uri") {
				bad()
				return
			}
			access := a.issueLocked(w, c.sub)
			a.exchanged[c.sub] = access
		case "refresh_token":
			g, ok := a.tokens[r.PostForm.Get("refresh_token")]
			if !ok || !g.refresh || g.revoked {
				bad()
				return
			}
			g.revoked = true // rotation
			a.refreshes++
			a.issueLocked(w, g.sub)
		default:
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		}
	})
	mux.HandleFunc("POST /revoke", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		a.mu.Lock()
		defer a.mu.Unlock()
		if g, ok := a.tokens[r.PostForm.Get("token")]; ok && !g.revoked {
			g.revoked = true
			a.revoked++
		}
		w.WriteHeader(http.StatusOK)
	})
	return a
}

// issueLocked answers a token request with a new pair for sub.
func (a *authServer) issueLocked(w http.ResponseWriter, sub string) string {
	access, refresh := "at_"+rand.Text(), "rt_"+rand.Text()
	a.tokens[access] = &grant{sub: sub, expires: time.Now().Add(a.lifetime)}
	a.tokens[refresh] = &grant{sub: sub, refresh: true}
	a.issued = append(a.issued, access, refresh)
	writeJSON(w, http.StatusOK, map[string]any{"access_token": access, "refresh_token": refresh, "token_type": "Bearer",
		"expires_in": int(a.lifetime.Seconds()), "scope": "mcp"})
	return access
}

// verify is the MCP server's token check (go-sdk auth.TokenVerifier).
func (a *authServer) verify(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	g, ok := a.tokens[tok]
	if !ok || g.refresh || g.revoked || time.Now().After(g.expires) {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: g.sub, Expiration: g.expires, Scopes: []string{"mcp"}, Extra: map[string]any{"token": tok}}, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// seen is one call the MCP server received: whose token, which token.
type seen struct{ sub, token string }

// secureMCP serves an MCP server over streamable HTTP that requires a bearer
// token of as (go-sdk auth.RequireBearerToken), with RFC 9728 metadata at
// /.well-known/oauth-protected-resource/mcp. Its tool whoami answers whose
// token it got.
func secureMCP(t *testing.T, as *authServer) (string, func() []seen) {
	var mu sync.Mutex
	var calls []seen
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "secure", Version: "1"}, nil)
	srv.AddTool(&mcpsdk.Tool{Name: "whoami", Description: "Say whose account this is", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			ti := req.Extra.TokenInfo
			tok, _ := ti.Extra["token"].(string)
			mu.Lock()
			calls = append(calls, seen{sub: ti.UserID, token: tok})
			mu.Unlock()
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "you are " + ti.UserID}}}, nil
		})
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	endpoint := hs.URL + "/mcp"
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: endpoint, AuthorizationServers: []string{as.URL}, ScopesSupported: []string{"mcp"},
	}))
	mux.Handle("/mcp", auth.RequireBearerToken(as.verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: hs.URL + "/.well-known/oauth-protected-resource/mcp",
	})(mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv }, nil)))
	return endpoint, func() []seen {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(calls)
	}
}

const testTokenKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// TestOAuthMCPPerUser: users' own MCP OAuth connections and HTTP-tool
// secrets end to end, through the real server: a local authorization server and an MCP server that requires its
// bearer token (both real HTTP), two users, the connect-first result, the
// flow (discovery, registration, PKCE checked by the server), each user's
// own token reaching the MCP server, refresh, revocation, per-user HTTP-tool
// secrets, and no token, secret or OAuth state in any workflow history or
// log (the tool result carries a Longhaul connect link, not the
// authorization URL, which would bind whoever opens it).
func TestOAuthMCPPerUser(t *testing.T) {
	as := newAuthServer(t)
	mcpURL, mcpCalls := secureMCP(t, as)
	var shopMu sync.Mutex
	var shopKeys []string
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		shopMu.Lock()
		shopKeys = append(shopKeys, r.Header.Get("X-Api-Key"))
		shopMu.Unlock()
		writeJSON(w, http.StatusOK, map[string]string{"status": "key accepted"})
	}))
	t.Cleanup(shop.Close)
	cfg, err := mcp.ParseConfig(fmt.Appendf(nil, `{"mcpServers": {"secure": {"url": %q, "auth": "oauth"}}}`, mcpURL))
	if err != nil {
		t.Fatal(err)
	}
	layer := fstest.MapFS{
		"secure.md": {Data: []byte(`---
skill: secure_ops
description: Uses the user's own accounts
tools: [secure__connect_account, secure__whoami, shop_key]
http_tools:
  - name: shop_key
    description: Check the user's shop key
    url: ${SHOP_URL}/key
    headers: {X-Api-Key: "${user.secret:SHOP}"}
---
Use the tools.`)},
		"securebot.md": {Data: []byte("---\nagent: securebot\ndescription: Acts as the user\nmode: chat\nskills: [secure_ops]\n---\nYou act for the user.\n")},
	}
	logs := &proctest.SyncBuffer{}
	env := testenv.Start(t, testenv.Options{
		Layers:   []fs.FS{layer},
		MCP:      &cfg,
		Env:      map[string]string{"SHOP_URL": shop.URL},
		TokenKey: testTokenKey,
		Log:      slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	// The scripted model calls the tool the user names, then repeats its
	// result.
	env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		msgs := r.Chat.Messages
		last := msgs[len(msgs)-1]
		if last.Role == openai.ChatMessageRoleTool {
			return llmtest.Text("RESULT: " + last.Content)
		}
		tool, _ := strings.CutPrefix(last.Content, "call ")
		return llmtest.ToolCalls(llmtest.ToolCall{Name: tool, Arguments: "{}"})
	}))
	user := func(id string) map[string]string { return map[string]string{"X-OpenWebUI-User-Id": id} }
	var runs []string
	ask := func(who, tool string) string {
		t.Helper()
		resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "securebot", "messages": userMsg("call " + tool)}, user(who))
		runs = append(runs, resp.Header.Get("X-Longhaul-Run-Id"))
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("%s calls %s: status %d: %s", who, tool, resp.StatusCode, b)
		}
		content := decode[openai.ChatCompletionResponse](t, resp).Choices[0].Message.Content
		// The model's own words, after the tool card (which carries the
		// result escaped for its attribute).
		i := strings.LastIndex(content, "RESULT: ")
		if i < 0 {
			t.Fatalf("%s calls %s: no tool result in %q", who, tool, content)
		}
		return content[i:]
	}
	linkRE := regexp.MustCompile(regexp.QuoteMeta(env.URL+usercreds.ConnectPath) + `[A-Z2-7]{26}`)
	// browser opens a connect link, confirms on its page, approves at the
	// authorization server logged in there as who, and follows its
	// redirect to Longhaul's callback.
	var states []string // every OAuth state: none may reach a history
	browser := func(who, link string) (callback string) {
		t.Helper()
		b := newBrowser(t, who)
		_, value := b.open(link)
		authURL := b.confirm(link, value)
		for _, want := range []string{as.URL + "/authorize?", "code_challenge_method=S256", "code_challenge=", "state=", "resource="} {
			if !strings.Contains(authURL, want) {
				t.Errorf("authorize URL %q lacks %s", authURL, want)
			}
		}
		if u, err := url.Parse(authURL); err == nil {
			states = append(states, u.Query().Get("state"))
		}
		callback = b.authorize(authURL)
		if !strings.HasPrefix(callback, env.URL+"/oauth/callback?") {
			t.Fatalf("the authorization server redirected to %q, want Longhaul's callback", callback)
		}
		status, _, body := b.do("GET", callback, nil)
		if status != http.StatusOK || !strings.Contains(body, "connected") {
			t.Fatalf("callback for %s: status %d: %s", who, status, body)
		}
		return callback
	}

	// Alice has never connected: the connect tool answers with her link,
	// a Longhaul link with no OAuth state in it.
	answer := ask("alice", "secure__connect_account")
	link := linkRE.FindString(answer)
	if !strings.Contains(answer, "NOT CONNECTED") || link == "" || strings.Contains(answer, "state=") {
		t.Fatalf("a user who never connected got %q, want the connect-first result with a link to %s", answer, env.URL+usercreds.ConnectPath)
	}
	callback := browser("alice", link)
	// The state is single-use: the same callback again is refused.
	if resp, err := http.Get(callback); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a replayed callback: status %d, want 400", resp.StatusCode)
	}
	if answer := ask("alice", "secure__connect_account"); !strings.Contains(answer, "CONNECTED: ") || !strings.Contains(answer, "secure__whoami") {
		t.Fatalf("connected user's connect tool: %q, want the server's tools", answer)
	}

	// A worker that starts now offers the tools a user last listed.
	reg, err := tools.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	restarted := mcp.New(cfg, reg, nil)
	restarted.UserTokens = env.Credentials
	if err := restarted.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !reg.Has("secure__whoami") || !reg.Has("secure__connect_account") {
		t.Errorf("a restarted worker offers %v, want the kept tool list", reg.Names())
	}
	_ = restarted.Close()

	// Bob has not connected: the real tool gives him the connect-first result.
	if answer := ask("bob", "secure__whoami"); !strings.Contains(answer, "NOT CONNECTED") || !linkRE.MatchString(answer) {
		t.Fatalf("bob before connecting: %q, want the connect-first result", answer)
	}
	if n := len(mcpCalls()); n != 0 {
		t.Fatalf("the MCP server ran %d calls before any user's token reached it", n)
	}
	// Bob connects through the authorize route.
	resp := do(t, env, "GET", "/v1/connections/secure/authorize?redirect=false", nil, user("bob"))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("authorize route: status %d", resp.StatusCode)
	}
	browser("bob", decode[struct{ URL string }](t, resp).URL)

	// Each user's call reaches the MCP server with their own token.
	if answer := ask("alice", "secure__whoami"); !strings.Contains(answer, "you are alice") {
		t.Errorf("alice: %q", answer)
	}
	if answer := ask("bob", "secure__whoami"); !strings.Contains(answer, "you are bob") {
		t.Errorf("bob: %q", answer)
	}
	calls := mcpCalls()
	if len(calls) != 2 || calls[0].sub != "alice" || calls[1].sub != "bob" || calls[0].token == calls[1].token {
		t.Fatalf("the MCP server saw %+v, want alice's then bob's own token", calls)
	}
	as.mu.Lock()
	for _, c := range calls {
		// Access tokens live 30 s, less than the minute before expiry at
		// which Longhaul refreshes: each call refreshed first.
		if c.token == as.exchanged[c.sub] {
			t.Errorf("%s's call used the token of the code exchange, not a refreshed one", c.sub)
		}
	}
	if as.refreshes < 2 || as.pkceFails != 0 || len(as.clients) != 1 {
		t.Errorf("authorization server: %d refreshes (want >= 2), %d PKCE failures, %d registered clients (want 1)", as.refreshes, as.pkceFails, len(as.clients))
	}
	as.mu.Unlock()
	// A second call refreshes again with the rotated refresh token, which
	// the store kept.
	if answer := ask("alice", "secure__whoami"); !strings.Contains(answer, "you are alice") {
		t.Errorf("alice's second call: %q", answer)
	}

	// The connections list shows the state, never a token.
	resp = do(t, env, "GET", "/v1/connections", nil, user("alice"))
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"connected":true`) || strings.Contains(string(body), "at_") || strings.Contains(string(body), "rt_") {
		t.Errorf("GET /v1/connections: %d %s", resp.StatusCode, body)
	}
	// Bob disconnects: the tokens are revoked at the authorization server
	// and his next call is connect-first again.
	resp = do(t, env, "DELETE", "/v1/connections/secure", nil, user("bob"))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE connection: status %d", resp.StatusCode)
	}
	as.mu.Lock()
	revoked := as.revoked
	as.mu.Unlock()
	if revoked == 0 {
		t.Error("disconnecting revoked nothing at the authorization server")
	}
	if answer := ask("bob", "secure__whoami"); !strings.Contains(answer, "NOT CONNECTED") {
		t.Errorf("bob after disconnecting: %q, want connect-first", answer)
	}
	if resp := do(t, env, "DELETE", "/v1/connections/secure", nil, user("bob")); resp.StatusCode != http.StatusNotFound {
		t.Errorf("DELETE again: status %d, want 404", resp.StatusCode)
	}

	// Per-user HTTP-tool secrets.
	const aliceKey = "alice-shop-key-0123456789"
	if resp := do(t, env, "PUT", "/v1/secrets/SHOP", map[string]string{"value": aliceKey}, user("alice")); resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT secret: status %d", resp.StatusCode)
	}
	if resp := do(t, env, "PUT", "/v1/secrets/bad%20name", map[string]string{"value": "x"}, user("alice")); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("PUT a bad secret name: status %d, want 400", resp.StatusCode)
	}
	if answer := ask("alice", "shop_key"); !strings.Contains(answer, "key accepted") {
		t.Errorf("alice's shop call: %q", answer)
	}
	answer = ask("bob", "shop_key")
	if !strings.Contains(answer, "MISSING SECRET") || !strings.Contains(answer, "PUT /v1/secrets/SHOP") {
		t.Errorf("bob's shop call without the secret: %q, want how to set it", answer)
	}
	shopMu.Lock()
	if len(shopKeys) != 1 || shopKeys[0] != aliceKey {
		t.Errorf("the shop received keys %q, want alice's alone (bob's call must not reach it)", shopKeys)
	}
	shopMu.Unlock()
	resp = do(t, env, "GET", "/v1/secrets", nil, user("bob"))
	if l := decode[struct{ Data []map[string]any }](t, resp); len(l.Data) != 0 {
		t.Errorf("bob lists alice's secrets: %v", l.Data)
	}
	resp = do(t, env, "GET", "/v1/secrets", nil, user("alice"))
	body, _ = io.ReadAll(resp.Body)
	if !strings.Contains(string(body), `"name":"SHOP"`) || strings.Contains(string(body), aliceKey) {
		t.Errorf("alice's secrets list: %s", body)
	}
	if resp := do(t, env, "DELETE", "/v1/secrets/SHOP", nil, user("bob")); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob deletes alice's secret: status %d, want 404", resp.StatusCode)
	}

	// Alice deletes her data: her connection is revoked at the
	// authorization server and her secret goes with it.
	as.mu.Lock()
	revoked = as.revoked
	as.mu.Unlock()
	resp = do(t, env, "DELETE", "/v1/me", nil, user("alice"))
	if gone := decode[wire.UserDeleted](t, resp); gone.Connections != 1 || gone.Credentials < 1 {
		t.Errorf("DELETE /v1/me = %+v, want one connection revoked and her secret deleted", gone)
	}
	as.mu.Lock()
	if as.revoked == revoked {
		t.Error("DELETE /v1/me revoked nothing at the authorization server")
	}
	as.mu.Unlock()
	if answer := ask("alice", "secure__whoami"); !strings.Contains(answer, "NOT CONNECTED") {
		t.Errorf("alice after DELETE /v1/me: %q, want connect-first", answer)
	}
	if l := decode[struct{ Data []map[string]any }](t, do(t, env, "GET", "/v1/secrets", nil, user("alice"))); len(l.Data) != 0 {
		t.Errorf("alice's secrets after DELETE /v1/me: %v", l.Data)
	}

	// No token and no secret in any workflow history, nor in the logs.
	as.mu.Lock()
	secrets := append(slices.Clone(as.issued), aliceKey)
	secrets = append(secrets, states...)
	as.mu.Unlock()
	ctx := within(t, time.Minute)
	// Every run of the test, by the ids the API answered, and whatever
	// else visibility lists.
	list, err := env.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: env.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range list.Executions {
		if !slices.Contains(runs, ex.Execution.WorkflowId) {
			runs = append(runs, ex.Execution.WorkflowId)
		}
	}
	if len(runs) < 9 || slices.Contains(runs, "") {
		t.Fatalf("runs %q, want the 9 of the test", runs)
	}
	sawResult := false // the grep reads payloads: a tool result is found
	events := 0
	for _, id := range runs {
		it := env.Client.GetWorkflowHistory(ctx, id, "", false, 0)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			events++
			raw, err := proto.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			sawResult = sawResult || bytes.Contains(raw, []byte("you are alice"))
			for _, s := range secrets {
				if bytes.Contains(raw, []byte(s)) {
					t.Errorf("workflow %s event %d (%s) holds a token or secret", id, ev.EventId, ev.EventType)
				}
			}
		}
	}
	t.Logf("%d runs, %d history events, %d tokens and secrets searched", len(runs), events, len(secrets))
	if !sawResult {
		t.Error("no history holds the tool result \"you are alice\": the search reads nothing")
	}
	logText := logs.String()
	if !strings.Contains(logText, "refreshed a user's token") {
		t.Errorf("the logs do not show the refresh; captured %d bytes", len(logText))
	}
	for _, s := range secrets {
		if strings.Contains(logText, s) {
			t.Errorf("the logs hold a token or secret")
			break
		}
	}
}
