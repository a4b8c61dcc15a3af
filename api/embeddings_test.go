package api_test

import (
	"encoding/base64"
	"encoding/binary"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"github.com/longhaul-dev/longhaul/skills"
)

// embeddingsAPI serves an API whose embeddings go to model (nothing else of
// it is used: embeddings are not runs, so Temporal is never called) with
// two API keys, "sk-ann" and "sk-bob", and the embedding models "m" and
// "nomic-embed-text", and returns its base URL.
func embeddingsAPI(t *testing.T, up api.Upstream, edit ...func(*api.Config)) string {
	t.Helper()
	catalog, err := skills.Load(skills.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	cfg := api.Config{TaskQueue: "q", Embeddings: up, EmbeddingsPolicy: api.EmbeddingsPolicy{Models: []string{"m", "nomic-embed-text"}},
		Keys: []identity.Key{{Name: "ann", Secret: "sk-ann"}, {Name: "bob", Secret: "sk-bob"}}}
	for _, f := range edit {
		f(&cfg)
	}
	return serve(t, api.New(cfg, runs.NewTemporal(panicking{}, runs.Config{TaskQueue: cfg.TaskQueue}), catalog, nil))
}

var annKey = map[string]string{"Authorization": "Bearer sk-ann"}

// embeddingList is the part of an embeddings answer the tests read.
type embeddingList struct {
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Index     int `json:"index"`
		Embedding any `json:"embedding"`
	} `json:"data"`
}

func TestEmbeddingsPassThrough(t *testing.T) {
	model := llmtest.New(t)
	model.RequireKey("sk-upstream")
	base := embeddingsAPI(t, api.Upstream{BaseURL: model.URL(), APIKey: "sk-upstream"})

	body := `{"model":"nomic-embed-text","input":["alpha","beta"],"dimensions":8,"user":"ann"}`
	resp := doAt(t, base, "POST", "/v1/embeddings", body, annKey)
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	got := decode[embeddingList](t, resp)
	if got.Object != "list" || got.Model != "nomic-embed-text" || len(got.Data) != 2 {
		t.Fatalf("answer %+v", got)
	}
	for i, text := range []string{"alpha", "beta"} {
		want := llmtest.Embed(text, 8)
		vec, _ := got.Data[i].Embedding.([]any)
		if len(vec) != len(want) {
			t.Fatalf("data[%d]: %d dimensions, want %d", i, len(vec), len(want))
		}
		for j, f := range vec {
			if float32(f.(float64)) != want[j] {
				t.Errorf("data[%d][%d] = %v, want %v", i, j, f, want[j])
			}
		}
	}
	reqs := model.EmbeddingRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests reached the model endpoint, want 1", len(reqs))
	}
	if diff := cmp.Diff(body, string(reqs[0].Body)); diff != "" {
		t.Errorf("the body reached the endpoint changed (-sent +received):\n%s", diff)
	}
	if reqs[0].Header.Get("Authorization") != "Bearer sk-upstream" {
		t.Errorf("the endpoint got Authorization %q, want the endpoint's own key", reqs[0].Header.Get("Authorization"))
	}
}

func TestEmbeddingsBase64PassesThrough(t *testing.T) {
	model := llmtest.New(t)
	base := embeddingsAPI(t, api.Upstream{BaseURL: model.URL()})
	resp := doAt(t, base, "POST", "/v1/embeddings",
		`{"model":"m","input":"alpha","encoding_format":"base64","dimensions":4}`, annKey)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	got := decode[embeddingList](t, resp)
	s, ok := got.Data[0].Embedding.(string)
	if !ok {
		t.Fatalf("embedding %T, want the endpoint's base64 string", got.Data[0].Embedding)
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(raw) != 16 {
		t.Fatalf("base64 %q: %v", s, err)
	}
	want := llmtest.Embed("alpha", 4)
	for j := range want {
		if f := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:])); f != want[j] {
			t.Errorf("dimension %d = %v, want %v", j, f, want[j])
		}
	}
}

func TestEmbeddingsErrors(t *testing.T) {
	model := llmtest.New(t)
	base := embeddingsAPI(t, api.Upstream{BaseURL: model.URL()}, func(c *api.Config) { c.MaxBodyBytes = 4096 })
	for _, tc := range []struct {
		name    string
		body    string
		headers map[string]string
		status  int
		typ     string
		message string // a part of the message
		// reaches says the request goes on to the model endpoint (whose
		// refusal the message quotes); the others the API refuses itself.
		reaches bool
	}{
		{name: "no key", body: `{"model":"m","input":"a"}`, status: 401, typ: "authentication_error", message: "key"},
		{name: "invalid JSON", body: `{"model":`, headers: annKey, status: 400, typ: "invalid_request_error", message: "invalid JSON"},
		{name: "not an object", body: `["a"]`, headers: annKey, status: 400, typ: "invalid_request_error", message: "invalid JSON"},
		{name: "no model", body: `{"input":"a"}`, headers: annKey, status: 400, typ: "invalid_request_error", message: "model is required"},
		{name: "no input", body: `{"model":"m"}`, headers: annKey, status: 400, typ: "invalid_request_error", message: "input is required"},
		{name: "null input", body: `{"model":"m","input":null}`, headers: annKey, status: 400, typ: "invalid_request_error", message: "input is required"},
		{name: "too large", body: `{"model":"m","input":"` + strings.Repeat("a", 5000) + `"}`, headers: annKey, status: 413, typ: "invalid_request_error", message: "larger than the limit"},
		{name: "the endpoint's 400", body: `{"model":"m","input":""}`, headers: annKey, status: 400, typ: "invalid_request_error",
			message: "model endpoint: llmtest: embeddings input must not be empty", reaches: true},
		{name: "the endpoint's 400 on a field it knows", body: `{"model":"m","input":"a","encoding_format":"hex"}`, headers: annKey, status: 400,
			typ: "invalid_request_error", message: `unsupported encoding_format "hex"`, reaches: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(model.EmbeddingRequests())
			resp := doAt(t, base, "POST", "/v1/embeddings", tc.body, tc.headers)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			e := decode[wire.ErrorBody](t, resp)
			if e.Error.Type != tc.typ || !strings.Contains(e.Error.Message, tc.message) {
				t.Errorf("error %+v, want type %s and a message with %q", e.Error, tc.typ, tc.message)
			}
			if !tc.reaches && len(model.EmbeddingRequests()) > before {
				t.Error("the request reached the model endpoint")
			}
		})
	}
}

func TestEmbeddingsEndpointFailures(t *testing.T) {
	// A port nothing listens on: the endpoint is down.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String() + "/v1"
	_ = ln.Close()
	// An endpoint whose key Longhaul has wrong: its 401 is surfaced as is.
	locked := llmtest.New(t)
	locked.RequireKey("sk-right")
	// An endpoint that fails: a 502 quoting it.
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":{"message":"out of memory","type":"server_error","code":null}}`)
	}))
	t.Cleanup(broken.Close)
	for _, tc := range []struct {
		name    string
		up      api.Upstream
		status  int
		message string
	}{
		{name: "unreachable", up: api.Upstream{BaseURL: down}, status: 502, message: "model endpoint unreachable"},
		{name: "wrong endpoint key", up: api.Upstream{BaseURL: locked.URL(), APIKey: "sk-wrong"}, status: 401, message: "model endpoint: "},
		{name: "the endpoint fails", up: api.Upstream{BaseURL: broken.URL + "/v1"}, status: 502, message: "model endpoint answered 500: out of memory"},
		{name: "not configured", up: api.Upstream{}, status: 404, message: "embeddings are not configured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := embeddingsAPI(t, tc.up)
			resp := doAt(t, base, "POST", "/v1/embeddings", `{"model":"m","input":"a"}`, annKey)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if e := decode[wire.ErrorBody](t, resp); !strings.Contains(e.Error.Message, tc.message) {
				t.Errorf("error %+v, want a message with %q", e.Error, tc.message)
			}
		})
	}
}
