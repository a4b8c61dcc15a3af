package api_test

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"go.temporal.io/sdk/client"
)

// hardeningAPI trusts Open WebUI's proxy key and one plain key.
var hardeningAPI = api.Config{Keys: []identity.Key{
	{Name: "owui", Secret: "sk-owui", Proxy: true},
	{Name: "app", Secret: "sk-app"},
}}

// TestProxyKeyWithoutSignedUser: behind Open WebUI's proxy key, every
// route that reads or writes a user's data refuses a request without the
// signed user (or with plain user headers when a secret is set), naming
// the header; models and embeddings are served without a user.
func TestProxyKeyWithoutSignedUser(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Runs: runsfake.New(), Memory: true, API: hardeningAPI})
	signed := env.StartAPI(func(c *api.Config) { c.JWTSecret = []byte(owuiSecret) })
	proxy := map[string]string{"Authorization": "Bearer sk-owui"}

	// Every route that reads or writes a user's data refuses it.
	for _, r := range []struct{ method, path string }{
		{"POST", "/v1/chat/completions"},
		{"POST", "/v1/runs"},
		{"GET", "/v1/runs"},
		{"GET", "/v1/runs/"},
		{"GET", "/V1/RUNS"},
		{"GET", "/v1/runs/run-1"},
		{"GET", "/v1/runs/run-1/events"},
		{"POST", "/v1/runs/run-1/cancel"},
		{"POST", "/v1/runs/run-1/input"},
		{"GET", "/v1/runs/run-1/outputs/o1"},
		{"POST", "/v1/responses"},
		{"GET", "/v1/responses/resp_x.0"},
		{"POST", "/v1/responses/resp_x.0/cancel"},
		{"DELETE", "/v1/responses/resp_x.0"},
		{"GET", "/v1/responses/resp_x.0/input_items"},
		{"GET", "/v1/conversations"},
		{"GET", "/v1/conversations/c1"},
		{"DELETE", "/v1/conversations/c1"},
		{"GET", "/v1/memories"},
		{"DELETE", "/v1/memories/m1"},
		{"GET", "/v1/backlog"},
		{"GET", "/v1/connections"},
		{"GET", "/v1/connections/secure/authorize"},
		{"DELETE", "/v1/connections/secure"},
		{"GET", "/v1/secrets"},
		{"PUT", "/v1/secrets/SHOP"},
		{"DELETE", "/v1/secrets/SHOP"},
		{"DELETE", "/v1/me"},
		{"POST", "/v1/files"},
		{"GET", "/v1/files"},
		{"GET", "/v1/files/file-1"},
		{"GET", "/v1/files/file-1/content"},
		{"DELETE", "/v1/files/file-1"},
		{"POST", "/v1/vector_stores"},
		{"GET", "/v1/vector_stores"},
		{"GET", "/v1/vector_stores/vs_1"},
		{"POST", "/v1/vector_stores/vs_1"},
		{"DELETE", "/v1/vector_stores/vs_1"},
		{"POST", "/v1/vector_stores/vs_1/search"},
		{"POST", "/v1/vector_stores/vs_1/files"},
		{"GET", "/v1/vector_stores/vs_1/files"},
		{"GET", "/v1/vector_stores/vs_1/files/file-1"},
		{"POST", "/v1/vector_stores/vs_1/files/file-1"},
		{"DELETE", "/v1/vector_stores/vs_1/files/file-1"},
		{"GET", "/v1/vector_stores/vs_1/files/file-1/content"},
		{"POST", "/v1/vector_stores/vs_1/file_batches"},
		{"GET", "/v1/vector_stores/vs_1/file_batches/vsfb_1"},
		{"GET", "/v1/vector_stores/vs_1/file_batches/vsfb_1/files"},
		{"POST", "/v1/vector_stores/vs_1/file_batches/vsfb_1/cancel"},
	} {
		resp := doAt(t, signed.URL, r.method, r.path, chatBody{"model": "assistant", "messages": userMsg("Hi"), "input": "Hi"}, proxy)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), `"error"`) || !strings.Contains(string(b), "X-OpenWebUI-User-Jwt") {
			t.Errorf("%s %s without a signed user = %d %s, want 401 naming the header", r.method, r.path, resp.StatusCode, b)
		}
	}
	// Plain user headers name nobody there either.
	resp := doAt(t, signed.URL, "GET", "/v1/runs", nil, merge(proxy, map[string]string{"X-OpenWebUI-User-Id": "ann"}))
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/runs with plain user headers = %d, want 401", resp.StatusCode)
	}
	// Open WebUI lists models (and may embed) without a user.
	if resp := doAt(t, signed.URL, "GET", "/v1/models", nil, proxy); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/models without a signed user = %d, want 200", resp.StatusCode)
	}
	if resp := doAt(t, signed.URL, "POST", "/v1/embeddings", map[string]any{"model": "llmtest-embed", "input": "hi"}, proxy); resp.StatusCode == http.StatusUnauthorized {
		t.Errorf("POST /v1/embeddings without a signed user = 401")
	}
	// The signed user, and a plain key, are served.
	for name, h := range map[string]map[string]string{
		"signed user": merge(proxy, map[string]string{"X-OpenWebUI-User-Jwt": userToken(t, owuiSecret, "ann")}),
		"plain key":   {"Authorization": "Bearer sk-app"},
	} {
		if resp := doAt(t, signed.URL, "GET", "/v1/runs", nil, h); resp.StatusCode != http.StatusOK {
			t.Errorf("GET /v1/runs as the %s = %d, want 200", name, resp.StatusCode)
		}
	}
	// Without the secret too, the proxy key itself is no principal:
	// refused, with the fix on each side named.
	resp = doAt(t, env.URL, "GET", "/v1/runs", nil, proxy)
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(raw), "ENABLE_FORWARD_USER_INFO_HEADERS") ||
		!strings.Contains(string(raw), "X-OpenWebUI-User-Id") {
		t.Errorf("GET /v1/runs, proxy key, no secret = %d %s, want 401 naming the fix", resp.StatusCode, raw)
	}
}

// TestIdentityHardening, through the whole stack: chat ids whose parts
// join alike are two chats with two runs, and a workflow id that is not a
// Longhaul run answers as an unknown run does.
func TestIdentityHardening(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Memory: true, API: hardeningAPI})
	proxy := map[string]string{"Authorization": "Bearer sk-owui"}

	t.Run("chat ids whose parts join alike", func(t *testing.T) {
		// User m/x's chat c9 and user m's chat x/c9 are two chats.
		runs := map[string]string{}
		for _, who := range [][2]string{{"m/x", "c9"}, {"m", "x/c9"}} {
			env.Model.Enqueue(llmtest.Text("Hello " + who[0] + "."))
			h := merge(proxy, map[string]string{"X-OpenWebUI-User-Id": who[0], "X-OpenWebUI-Chat-Id": who[1], "X-OpenWebUI-Message-Id": "m1"})
			resp := doAt(t, env.URL, "POST", "/v1/chat/completions", chatBody{"model": "assistant", "messages": userMsg("Hi")}, h)
			b, _ := io.ReadAll(resp.Body)
			run := resp.Header.Get(api.HeaderRunID)
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "Hello "+who[0]+".") {
				t.Fatalf("user %q chat %q = %d (run %q) %s", who[0], who[1], resp.StatusCode, run, b)
			}
			if other, ok := runs[run]; ok {
				t.Errorf("user %q chat %q ran as %q, the run of user %q", who[0], who[1], run, other)
			}
			runs[run] = who[0]
		}
		// The client reads its chat id back as it sent it.
		h := merge(proxy, map[string]string{"X-OpenWebUI-User-Id": "m"})
		resp := doAt(t, env.URL, "GET", "/v1/conversations", nil, h)
		if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"id":"x/c9"`) {
			t.Errorf("GET /v1/conversations = %d %s, want chat x/c9", resp.StatusCode, b)
		}
		if resp := doAt(t, env.URL, "GET", "/v1/conversations/x%2Fc9", nil, h); resp.StatusCode != http.StatusOK {
			t.Errorf("GET /v1/conversations/x%%2Fc9 = %d", resp.StatusCode)
		}
	})

	t.Run("a workflow that is not a run", func(t *testing.T) {
		// The retention job runs in the namespace: its id must answer as
		// any unknown id does, not with Temporal's word on it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		const id = "longhaul-retention-probe"
		wr, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: testenv.TaskQueue},
			contract.RetentionWorkflowName, contract.RetentionInput{Retention: 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if err := wr.Get(ctx, nil); err != nil {
			t.Fatal(err)
		}
		h := merge(proxy, map[string]string{"X-OpenWebUI-User-Id": "ann"})
		for _, run := range []string{id, "no-such-run"} {
			resp := "resp_" + base64.RawURLEncoding.EncodeToString([]byte(run)) + ".0"
			for _, r := range []struct{ method, path string }{
				{"GET", "/v1/runs/" + run},
				{"GET", "/v1/runs/" + run + "/events"},
				{"POST", "/v1/runs/" + run + "/cancel"},
				{"POST", "/v1/runs/" + run + "/input"},
				{"GET", "/v1/runs/" + run + "/outputs/o1"},
				{"GET", "/v1/responses/" + resp},
				{"POST", "/v1/responses/" + resp + "/cancel"},
				{"DELETE", "/v1/responses/" + resp},
				{"GET", "/v1/responses/" + resp + "/input_items"},
			} {
				got := doAt(t, env.URL, r.method, r.path, map[string]any{"approve": true}, h)
				b, _ := io.ReadAll(got.Body)
				if got.StatusCode != http.StatusNotFound || strings.Contains(strings.ToLower(string(b)), "query") || strings.Contains(string(b), "Temporal") {
					t.Errorf("%s %s = %d %s, want 404 as for any unknown run", r.method, r.path, got.StatusCode, b)
				}
			}
		}
	})
}
