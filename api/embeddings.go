package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/internal/redact"
)

// Upstream is an OpenAI-compatible endpoint the API passes requests on to.
type Upstream struct {
	// BaseURL ends in /v1, e.g. http://localhost:11434/v1.
	BaseURL string
	// APIKey is sent as a bearer token when set.
	APIKey string
	// HTTPClient makes the calls; nil is a client without a time limit of
	// its own (the request's context and ModelTimeout bound each call).
	HTTPClient *http.Client
}

// EmbeddingsPolicy bounds what POST /v1/embeddings asks of the embeddings
// endpoint with the operator's key.
type EmbeddingsPolicy struct {
	// Models are the embedding models a request may name; "*" is any
	// model. None is no model: the route answers 404.
	Models []string
	// PerPrincipal is the most embeddings requests one principal may have
	// in flight on one API process (429 beyond); 0 is no limit.
	PerPrincipal int
	// MaxAnswer bounds, in bytes, the endpoint's answer to one request,
	// which is read whole before it is passed on: beyond it the request is
	// a 502, and no more than MaxAnswer+1 bytes are read. 0 is
	// DefaultMaxEmbeddingsAnswer.
	MaxAnswer int
}

// DefaultMaxEmbeddingsAnswer is EmbeddingsPolicy.MaxAnswer's default: 32
// MiB, the JSON of about a thousand float vectors of 1536 dimensions, or
// four thousand in base64.
const DefaultMaxEmbeddingsAnswer = 32 << 20

// retryEmbeddings is the Retry-After, in seconds, of an embeddings request
// refused because the principal has too many in flight.
const retryEmbeddings = 1

// allows reports whether model may be asked for.
func (p EmbeddingsPolicy) allows(model string) bool {
	return slices.Contains(p.Models, model) || slices.Contains(p.Models, "*")
}

// maxAnswer is MaxAnswer or its default.
func (p EmbeddingsPolicy) maxAnswer() int {
	if p.MaxAnswer > 0 {
		return p.MaxAnswer
	}
	return DefaultMaxEmbeddingsAnswer
}

// embeddingsRequest is what the API reads of an embeddings request; the
// body itself goes on to the model endpoint unchanged.
type embeddingsRequest struct {
	Model string          `json:"model"`
	Input json.RawMessage `json:"input"`
}

// embeddings passes POST /v1/embeddings on to the model endpoint: the body as
// the client sent it (so encoding_format, dimensions and any field the
// endpoint knows reach it), the endpoint's JSON answer returned as is. It is
// not a run: nothing durable happens, nothing is recorded.
func (s *Server) embeddings(c *fiber.Ctx) error {
	up := s.cfg.Embeddings
	if up.BaseURL == "" {
		return errNotFound("embeddings are not configured on this server")
	}
	policy := s.cfg.EmbeddingsPolicy
	if len(policy.Models) == 0 {
		return errNotFound("embeddings are not enabled on this server: no embedding model is allowed (LONGHAUL_EMBED_MODELS, LONGHAUL_EMBED_MODEL)")
	}
	body := c.Body()
	model, err := checkEmbeddingsRequest(body)
	if err != nil {
		return err
	}
	if !policy.allows(model) {
		return errModelNotFound(fmt.Sprintf("model: %q is not an embedding model of this server; allowed: %s (LONGHAUL_EMBED_MODELS)",
			model, strings.Join(policy.Models, ", ")))
	}
	release, ok := s.embeds.take(principal(c).Name, policy.PerPrincipal)
	if !ok {
		return errTooMany(fmt.Sprintf("too many embeddings requests: at most %d at once (LONGHAUL_MAX_EMBEDDINGS)", policy.PerPrincipal), retryEmbeddings)
	}
	defer release()
	ctx := c.UserContext()
	if s.cfg.ModelTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.ModelTimeout)
		defer cancel()
	}
	status, ctype, answer, err := up.post(ctx, "/embeddings", body, policy.maxAnswer())
	if err != nil {
		return err
	}
	if status >= 300 {
		return upstreamError(status, answer)
	}
	c.Set(fiber.HeaderContentType, ctype)
	return c.Status(fiber.StatusOK).Send(answer)
}

// checkEmbeddingsRequest rejects what no endpoint would take: a body that is
// not a JSON object, or one without a model or an input. It returns the
// model.
func checkEmbeddingsRequest(body []byte) (string, error) {
	var req embeddingsRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return "", errBadRequest("invalid JSON body: " + err.Error())
	}
	if strings.TrimSpace(req.Model) == "" {
		return "", errBadRequest("model is required: the embedding model to use")
	}
	if len(req.Input) == 0 || string(req.Input) == "null" {
		return "", errBadRequest("input is required: a string, an array of strings or token arrays")
	}
	return req.Model, nil
}

// take takes one of key's places, of which there are limit (0: no limit),
// or says no: the caller must call the release it returns when done.
func (sc *streamCounter) take(key string, limit int) (release func(), ok bool) {
	if limit <= 0 {
		return func() {}, true
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.open == nil {
		sc.open = map[string]int{}
	}
	if sc.open[key] >= limit {
		return nil, false
	}
	sc.open[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			sc.mu.Lock()
			defer sc.mu.Unlock()
			if sc.open[key]--; sc.open[key] <= 0 {
				delete(sc.open, key)
			}
		})
	}, true
}

// post sends body to the endpoint's path and returns the answer's status,
// content type and body. A failure to reach the endpoint, or to read its
// whole answer, is a 502, and so is an answer over limit bytes: no more
// than limit+1 are read.
func (u Upstream) post(ctx context.Context, path string, body []byte, limit int) (int, string, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(u.BaseURL, "/")+path, bytes.NewReader(body))
	if err != nil {
		return 0, "", nil, errInternal("model endpoint URL: " + redact.URLs(err.Error()))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if u.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+u.APIKey)
	}
	hc := u.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return 0, "", nil, &apiError{Status: http.StatusGatewayTimeout, Type: "timeout_error", Code: "upstream_timeout",
				Message: "the model endpoint did not answer in time (LONGHAUL_LLM_TIMEOUT)"}
		}
		return 0, "", nil, errUpstream("model endpoint unreachable: " + redact.URLs(err.Error()))
	}
	defer resp.Body.Close()
	tooLarge := errUpstream(fmt.Sprintf("the model endpoint's answer is larger than %s, the most this server passes on (LONGHAUL_MAX_EMBEDDINGS_BYTES): "+
		"send fewer inputs at once, or ask for fewer dimensions or encoding_format base64", sizeOf(limit)))
	if resp.ContentLength > int64(limit) {
		return 0, "", nil, tooLarge
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return 0, "", nil, errUpstream("reading the model endpoint's answer: " + redact.URLs(err.Error()))
	}
	if len(answer) > limit {
		return 0, "", nil, tooLarge
	}
	ctype := resp.Header.Get("Content-Type")
	if ctype == "" {
		ctype = fiber.MIMEApplicationJSON
	}
	return resp.StatusCode, ctype, answer, nil
}

// upstreamError turns the model endpoint's error answer into the API's: its
// own 4xx with its status, message, type and code (a bad input, an unknown
// model, its rate limit), anything else a 502 that quotes it.
func upstreamError(status int, answer []byte) error {
	var env struct {
		Error struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	msg := ""
	if json.Unmarshal(answer, &env) == nil && env.Error.Message != "" {
		msg = env.Error.Message
	} else {
		msg = strings.TrimSpace(string(answer))
		if len(msg) > 500 {
			msg = msg[:500] + "…"
		}
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	if status >= 400 && status < 500 {
		typ := env.Error.Type
		if typ == "" {
			typ = "invalid_request_error"
		}
		var code string
		_ = json.Unmarshal(env.Error.Code, &code) // a string code, or none
		return &apiError{Status: status, Type: typ, Code: code, Message: "model endpoint: " + msg}
	}
	return errUpstream(fmt.Sprintf("model endpoint answered %d: %s", status, msg))
}

// sizeOf writes a byte count for a person: whole MiB, KiB or bytes.
func sizeOf(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
