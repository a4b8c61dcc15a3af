package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

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

// maxEmbeddingsAnswer bounds the model endpoint's answer to one embeddings
// request: a batch of 2048 inputs of 3072 float dimensions is about 130 MB
// of JSON.
const maxEmbeddingsAnswer = 256 << 20

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
	body := c.Body()
	if err := checkEmbeddingsRequest(body); err != nil {
		return err
	}
	ctx := c.UserContext()
	if s.cfg.ModelTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.ModelTimeout)
		defer cancel()
	}
	status, ctype, answer, err := up.post(ctx, "/embeddings", body)
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
// not a JSON object, or one without a model or an input.
func checkEmbeddingsRequest(body []byte) error {
	var req embeddingsRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return errBadRequest("invalid JSON body: " + err.Error())
	}
	if strings.TrimSpace(req.Model) == "" {
		return errBadRequest("model is required: the embedding model to use")
	}
	if len(req.Input) == 0 || string(req.Input) == "null" {
		return errBadRequest("input is required: a string, an array of strings or token arrays")
	}
	return nil
}

// post sends body to the endpoint's path and returns the answer's status,
// content type and body. A failure to reach the endpoint, or to read its
// whole answer, is a 502.
func (u Upstream) post(ctx context.Context, path string, body []byte) (int, string, []byte, error) {
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
			return 0, "", nil, &apiError{status: http.StatusGatewayTimeout, typ: "timeout_error", code: "upstream_timeout",
				msg: "the model endpoint did not answer in time (LONGHAUL_LLM_TIMEOUT)"}
		}
		return 0, "", nil, errUpstream("model endpoint unreachable: " + redact.URLs(err.Error()))
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxEmbeddingsAnswer+1))
	if err != nil {
		return 0, "", nil, errUpstream("reading the model endpoint's answer: " + redact.URLs(err.Error()))
	}
	if len(answer) > maxEmbeddingsAnswer {
		return 0, "", nil, errUpstream(fmt.Sprintf("the model endpoint's answer is larger than %d bytes", maxEmbeddingsAnswer))
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
		return &apiError{status: status, typ: typ, code: code, msg: "model endpoint: " + msg}
	}
	return errUpstream(fmt.Sprintf("model endpoint answered %d: %s", status, msg))
}
