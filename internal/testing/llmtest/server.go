package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// ErrClosed is returned by the wait methods of a Server that has been closed.
var ErrClosed = errors.New("llmtest: server closed")

// maxBody bounds the size of request bodies the server reads.
const maxBody = 64 << 20

// Server is a scripted OpenAI-compatible HTTP server. Its methods are safe
// for concurrent use.
type Server struct {
	hs        *httptest.Server
	tb        testing.TB // nil when started with Start
	done      chan struct{}
	closeOnce sync.Once
	started   time.Time
	callSeq   atomic.Int64 // generated tool-call ids

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced whenever observable state changes
	rules    []rule
	queue    []*reply
	def      *reply
	reqs     []Request
	embReqs  []EmbeddingRequest
	inflight int
	dim      int
	vectors  map[string][]float32
	key      string
	models   []string // GET /v1/models's list; nil = no such route
	// window and behaviour are SetWindow's; 0 is unlimited.
	window    int
	behaviour Behaviour
	// flavour, ollama and used serve the native endpoints (SetFlavour):
	// SetOllamaModel's models, and the models chat requests named.
	flavour Flavour
	ollama  map[string]OllamaModel
	used    []string
	// pulled is SetPulled's models (nil: every model); noAutoTools is
	// SetAutoToolChoice(false).
	pulled      []string
	noAutoTools bool
}

type rule struct {
	match func(Request) bool
	reply *reply
}

// New starts a Server on a free 127.0.0.1 port and closes it when tb and its
// subtests complete. Requests that find no scripted reply are also logged to
// tb.
func New(tb testing.TB) *Server {
	tb.Helper()
	s, err := start(tb)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Start starts a Server on a free 127.0.0.1 port, for use outside tests. The
// caller must call Close.
func Start() (*Server, error) {
	return start(nil)
}

func start(tb testing.TB) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("llmtest: listen on loopback: %w", err)
	}
	s := &Server{
		tb:      tb,
		done:    make(chan struct{}),
		started: time.Now(),
		changed: make(chan struct{}),
		dim:     64,
	}
	s.hs = &httptest.Server{
		Listener: ln,
		Config:   &http.Server{Handler: http.HandlerFunc(s.serveHTTP), ReadHeaderTimeout: time.Minute},
	}
	s.hs.Start()
	return s, nil
}

// Close stops the server. Requests still being served (delays, Hang,
// StallAfter) are abandoned and their connections closed without completing
// the response, so Close returns promptly and no client mistakes a closing
// server for a finished answer. Close is idempotent.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.hs.CloseClientConnections()
		s.hs.Close()
	})
}

// URL returns the base URL of the OpenAI API, ending in "/v1", such as
// "http://127.0.0.1:41234/v1".
func (s *Server) URL() string {
	return s.hs.URL + "/v1"
}

// ClientConfig returns a go-openai configuration pointing at the server,
// using the key set with RequireKey (or "sk-llmtest").
func (s *Server) ClientConfig() openai.ClientConfig {
	s.mu.Lock()
	key := s.key
	s.mu.Unlock()
	if key == "" {
		key = "sk-llmtest"
	}
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = s.URL()
	return cfg
}

// Enqueue appends replies to the FIFO queue consumed by chat requests that no
// rule matches. It panics on a zero Reply.
func (s *Server) Enqueue(replies ...Reply) {
	for _, r := range replies {
		mustValid(r, "Enqueue")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range replies {
		s.queue = append(s.queue, r.r)
	}
	s.notifyLocked()
}

// On adds a rule consulted before the queue: every chat request for which
// match returns true gets reply, which is not consumed. Rules are checked in
// the order they were added. match runs without any lock held, on the
// handler goroutine. On panics on a nil match or a zero Reply.
func (s *Server) On(match func(Request) bool, reply Reply) {
	if match == nil {
		panic("llmtest: On with nil matcher")
	}
	mustValid(reply, "On")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, rule{match: match, reply: reply.r})
}

// SetDefault sets the reply for chat requests that match no rule when the
// queue is empty. The zero Reply restores the built-in default, an HTTP 500
// whose message is "llmtest: no scripted reply for request N".
func (s *Server) SetDefault(reply Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.def = reply.r
}

// Pending returns the number of queued replies not yet consumed.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// SetEmbeddingDimensions sets the length of the vectors returned by
// POST /v1/embeddings when the request does not ask for a dimension. It
// panics if n is not positive.
func (s *Server) SetEmbeddingDimensions(n int) {
	if n <= 0 {
		panic("llmtest: SetEmbeddingDimensions with a non-positive dimension")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dim = n
}

// SetEmbedding makes POST /v1/embeddings answer v for the text input
// text (when the request's dimension is len(v)), instead of Embed's
// vector: tests of search by meaning give two different texts vectors of
// a chosen similarity.
func (s *Server) SetEmbedding(text string, v []float32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vectors == nil {
		s.vectors = map[string][]float32{}
	}
	s.vectors[text] = append([]float32(nil), v...)
}

// RequireKey makes every endpoint demand the header
// "Authorization: Bearer <key>" and answer 401 otherwise. An empty key turns
// the check off.
func (s *Server) RequireKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// SetModels makes GET /v1/models list names, as OpenAI's API does
// ({"object":"list","data":[{"id":...,"object":"model"}]}). Until it is
// called the route answers 404, as an endpoint without a model list.
func (s *Server) SetModels(names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = append([]string{}, names...)
}

// Requests returns every chat request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// EmbeddingRequests returns every embeddings request received so far, in
// order.
func (s *Server) EmbeddingRequests() []EmbeddingRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]EmbeddingRequest(nil), s.embReqs...)
}

// WaitRequests blocks until at least n chat requests have been received
// (their handlers may still be running), ctx is done or the server is
// closed.
func (s *Server) WaitRequests(ctx context.Context, n int) error {
	return s.waitFor(ctx, func() bool { return len(s.reqs) >= n },
		func() string { return fmt.Sprintf("%d chat requests (have %d)", n, len(s.reqs)) })
}

// WaitIdle blocks until no request is being served, ctx is done or the
// server is closed. Tests use it to prove that a handler stopped after its
// client went away.
func (s *Server) WaitIdle(ctx context.Context) error {
	return s.waitFor(ctx, func() bool { return s.inflight == 0 },
		func() string { return fmt.Sprintf("idle server (%d requests in flight)", s.inflight) })
}

// waitFor waits until cond, evaluated under s.mu, holds.
func (s *Server) waitFor(ctx context.Context, cond func() bool, what func() string) error {
	for {
		s.mu.Lock()
		if cond() {
			s.mu.Unlock()
			return nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-s.done:
			return ErrClosed
		case <-ctx.Done():
			s.mu.Lock()
			desc := what()
			s.mu.Unlock()
			return fmt.Errorf("llmtest: waiting for %s: %w", desc, ctx.Err())
		}
	}
}

// notifyLocked wakes every waiter; s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.inflight++
	key := s.key
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inflight--
		s.notifyLocked()
		s.mu.Unlock()
	}()

	if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
		writeError(w, http.StatusUnauthorized, "llmtest: incorrect API key provided",
			"invalid_request_error", "invalid_api_key")
		return
	}

	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case s.serveNative(w, r, path):
	case path == "/v1/chat/completions":
		if allow(w, r, http.MethodPost) {
			s.handleChat(w, r)
		}
	case path == "/v1/models" && s.listModels(w, r):
	case path == "/v1/embeddings":
		if allow(w, r, http.MethodPost) {
			s.handleEmbeddings(w, r)
		}
	default:
		writeError(w, http.StatusNotFound,
			fmt.Sprintf("llmtest: unknown path %s %s", r.Method, r.URL.Path),
			"invalid_request_error", "unknown_url")
	}
}

// listModels answers GET /v1/models when SetModels was called, and
// reports whether it did.
func (s *Server) listModels(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	models := s.models
	s.mu.Unlock()
	if models == nil || r.Method != http.MethodGet {
		return false
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		OwnedBy string `json:"owned_by"`
	}
	data := make([]model, 0, len(models))
	for _, m := range models {
		data = append(data, model{ID: m, Object: "model", OwnedBy: "llmtest"})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	return true
}

// allow answers 405 and returns false unless r uses method.
func allow(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method {
		return true
	}
	w.Header().Set("Allow", method)
	writeError(w, http.StatusMethodNotAllowed,
		fmt.Sprintf("llmtest: method %s not allowed on %s, use %s", r.Method, r.URL.Path, method),
		"invalid_request_error", nil)
	return false
}

// readJSONBody reads r's body and checks that it is a JSON object. On failure
// it answers 400 and returns false.
func readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, map[string]json.RawMessage, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("llmtest: reading request body: %v", err),
			"invalid_request_error", nil)
		return nil, nil, false
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		msg := "llmtest: request body is not a JSON object"
		if err != nil {
			msg = fmt.Sprintf("llmtest: invalid JSON in request body: %v", err)
		}
		writeError(w, http.StatusBadRequest, msg, "invalid_request_error", nil)
		return nil, nil, false
	}
	return body, fields, true
}

// errorEnvelope is OpenAI's error response body.
type errorEnvelope struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    any     `json:"code"`
}

// writeError sends an OpenAI error envelope with the given status. A nil or
// empty code is sent as null.
func writeError(w http.ResponseWriter, status int, message, typ string, code any) {
	if c, ok := code.(string); ok && c == "" {
		code = nil
	}
	writeJSON(w, status, errorEnvelope{Error: errorBody{Message: message, Type: typ, Code: code}})
}

// errorTypeFor returns the error type OpenAI-style APIs use for status.
func errorTypeFor(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

// errorCodeFor returns a default error code for status, or "" for null.
func errorCodeFor(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	case status == http.StatusUnauthorized:
		return "invalid_api_key"
	case status >= 500:
		return "server_error"
	default:
		return ""
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Every value passed here is built from plain structs; failing to
		// encode one is a bug in this package.
		panic(fmt.Errorf("llmtest: encoding response: %w", err))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// wait pauses for d, returning false early when the client goes away. When
// the server closes it aborts the response (see abort), so a closing server
// never looks like a complete answer to the client.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-s.done:
		abort()
		return false
	default:
		if d <= 0 {
			return true
		}
	}
	select {
	case <-timeout:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		abort()
		return false
	}
}

// waitGone blocks until the client goes away, or aborts the response when
// the server closes.
func (s *Server) waitGone(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-s.done:
		abort()
	}
}

// abort ends the current handler by closing its connection without
// completing the response; net/http recovers the panic silently.
func abort() {
	panic(http.ErrAbortHandler)
}

func (s *Server) logf(format string, args ...any) {
	if s.tb != nil {
		s.tb.Logf(format, args...)
	}
}
