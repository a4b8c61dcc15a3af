// Package web is what every HTTP handler package shares below the server:
// OpenAI's error envelope as a Go error (Error and its constructors), who a
// request acts for (Principal, put there by the server's authentication),
// and strict JSON bodies. It imports no handler package and no run engine,
// so each API's package (chat, responses, runs, documents, account) builds
// on it alone and the server (package api) registers them all.
package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/internal/identity"
)

// Error is an error with its HTTP status and OpenAI error type and code;
// the server's error handler writes it as {"error": {...}}.
type Error struct {
	Status  int
	Type    string
	Code    string
	Message string
	// RetryAfter, in seconds, is sent as Retry-After when set.
	RetryAfter int
}

func (e *Error) Error() string { return e.Message }

// Kind is what went wrong with a request, in the API's words; Kinds maps
// each to its HTTP status and OpenAI error type and code: the one table
// every error of the API is written from (as benbjohnson/wtf's
// http/http.go maps its codes to statuses).
type Kind int

// The kinds of error the API answers with.
const (
	KindBadRequest Kind = iota + 1
	KindNotFound
	KindConflict
	KindModelNotFound
	KindUnauthorized
	KindForbidden
	KindUpstream
	KindModelBadOutput
	KindModelOutputTooLarge
	KindContextLength
	KindRunInProgress
	KindTimeout
	KindTooMany
	KindInsufficientQuota
	KindPayloadTooLarge
	KindInternal
	KindUnavailable
	KindQuotaExceeded
	KindMethodNotAllowed
)

// Shape is how a kind of error is written: its status, OpenAI error type
// and code.
type Shape struct {
	Status     int
	Type, Code string
}

// Kinds is the one table from a kind of error to how it is written.
var Kinds = map[Kind]Shape{
	KindBadRequest:          {http.StatusBadRequest, "invalid_request_error", "invalid_request"},
	KindNotFound:            {http.StatusNotFound, "invalid_request_error", "not_found"},
	KindConflict:            {http.StatusConflict, "invalid_request_error", "conflict"},
	KindModelNotFound:       {http.StatusNotFound, "invalid_request_error", "model_not_found"},
	KindUnauthorized:        {http.StatusUnauthorized, "authentication_error", "invalid_api_key"},
	KindForbidden:           {http.StatusForbidden, "permission_error", "forbidden"},
	KindUpstream:            {http.StatusBadGateway, "api_error", "upstream_error"},
	KindModelBadOutput:      {http.StatusBadGateway, "api_error", "model_bad_output"},
	KindModelOutputTooLarge: {http.StatusBadGateway, "api_error", "model_output_too_large"},
	KindContextLength:       {http.StatusBadRequest, "invalid_request_error", "context_length_exceeded"},
	KindRunInProgress:       {http.StatusConflict, "invalid_request_error", "run_in_progress"},
	KindTimeout:             {http.StatusGatewayTimeout, "timeout_error", "run_timeout"},
	KindTooMany:             {http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded"},
	KindInsufficientQuota:   {http.StatusTooManyRequests, "insufficient_quota", "insufficient_quota"},
	KindPayloadTooLarge:     {http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large"},
	KindInternal:            {http.StatusInternalServerError, "server_error", "internal_error"},
	KindUnavailable:         {http.StatusServiceUnavailable, "server_error", "unavailable"},
	// A principal holds as much as a quota allows: asking again will not
	// help until something is deleted (a 429 would be retried by OpenAI's
	// client libraries).
	KindQuotaExceeded:    {http.StatusForbidden, "invalid_request_error", "quota_exceeded"},
	KindMethodNotAllowed: {http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed"},
}

// New is an error of kind k saying msg, written as Kinds says. A 503
// carries Retry-After (RetryUnavailable).
func New(k Kind, msg string) *Error {
	sh, ok := Kinds[k]
	if !ok {
		sh = Kinds[KindInternal]
	}
	e := &Error{Status: sh.Status, Type: sh.Type, Code: sh.Code, Message: msg}
	if k == KindUnavailable {
		e.RetryAfter = RetryUnavailable
	}
	return e
}

// BadRequest is a 400 invalid_request.
func BadRequest(msg string) error { return New(KindBadRequest, msg) }

// NotFound is a 404 not_found.
func NotFound(msg string) error { return New(KindNotFound, msg) }

// Conflict is a 409.
func Conflict(msg string) error { return New(KindConflict, msg) }

// ModelNotFound is OpenAI's 404 for a model (agent) it does not serve.
func ModelNotFound(msg string) error { return New(KindModelNotFound, msg) }

// Unauthorized is a 401 invalid_api_key.
func Unauthorized(msg string) error { return New(KindUnauthorized, msg) }

// Forbidden is a 403.
func Forbidden(msg string) error { return New(KindForbidden, msg) }

// Upstream is a 502: the model endpoint failed.
func Upstream(msg string) error { return New(KindUpstream, msg) }

// Timeout is a 504: the run did not finish within the request's time.
func Timeout(msg string) error { return New(KindTimeout, msg) }

// TooMany is a 429 with Retry-After.
func TooMany(msg string, retryAfter int) error {
	e := New(KindTooMany, msg)
	e.RetryAfter = retryAfter
	return e
}

// InsufficientQuota is OpenAI's 429 for a used-up quota: here a budget
// (LONGHAUL_BUDGETS) that applies to the request; the message names the
// limit and when it resets. Retrying before then cannot help, so it has no
// Retry-After.
func InsufficientQuota(msg string) error { return New(KindInsufficientQuota, msg) }

// PayloadTooLarge is a 413.
func PayloadTooLarge(msg string) error { return New(KindPayloadTooLarge, msg) }

// Internal is a 500 whose message the caller may read: say what failed,
// never why (that goes to the log).
func Internal(msg string) error { return New(KindInternal, msg) }

// Unavailable is a 503: Temporal did not answer in time, or not at all.
// Clients retry it, after Retry-After.
func Unavailable(msg string) error { return New(KindUnavailable, msg) }

// RetryUnavailable is the Retry-After of a 503, in seconds.
const RetryUnavailable = 5

// HasStatus reports whether err is an Error with the status.
func HasStatus(err error, status int) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == status
}

// HeaderRunID names, in an answer, the run that answers it: every API that
// runs agents sets it, and the server's log, traces and the opening
// comment of an event stream read it.
const HeaderRunID = "X-Longhaul-Run-Id"

type principalKey struct{}

// SetPrincipal keeps who c's request acts for; the server's authentication
// calls it before any handler runs.
func SetPrincipal(c *fiber.Ctx, p identity.Principal) { c.Locals(principalKey{}, p) }

// Principal is who the request acts for.
func Principal(c *fiber.Ctx) identity.Principal {
	p, _ := c.Locals(principalKey{}).(identity.Principal)
	return p
}

// ClientChatID is the id the client knows a stored chat by.
func ClientChatID(c *fiber.Ctx, chat string) string {
	return identity.ClientChatID(Principal(c).Name, chat)
}

// DecodeStrict decodes a JSON body into v, refusing unknown fields and
// trailing data: the native API names its mistakes instead of ignoring them.
func DecodeStrict(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New("request body is empty")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid JSON body: %s", strings.TrimPrefix(JSONProblem(err), "json: "))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("invalid JSON body: data after the object")
	}
	return nil
}

// DecodeJSON reads a JSON body into v (empty is {}), refusing unknown
// fields as OpenAI does; a mistake is a 400.
func DecodeJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := DecodeStrict(body, v); err != nil {
		return BadRequest(err.Error())
	}
	return nil
}

// JSONProblem says what is wrong with a JSON body in words a client can
// act on: where the syntax broke, which field has the wrong type.
func JSONProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("field %q has the wrong type (%s)", te.Field, te.Value)
	}
	return err.Error()
}

type drainedKey struct{}

// Drain reads what is left of a streamed request body (an upload's
// multipart epilogue), at most n bytes, and marks the body read when it
// ended, so the server may keep the connection for another request (see
// Drained).
func Drain(c *fiber.Ctx, n int64) {
	stream := c.Context().RequestBodyStream()
	if stream == nil || Discard(stream, n) {
		c.Locals(drainedKey{}, true)
	}
}

// Drained reports whether the handler read c's streamed body to its end
// (Drain): the unread bytes of one that did not would be parsed as the
// connection's next request, so the server closes it.
func Drained(c *fiber.Ctx) bool { return c.Locals(drainedKey{}) != nil }

// Discard reads and drops up to n bytes of r, reporting whether r ended.
func Discard(r io.Reader, n int64) bool {
	m, err := io.Copy(io.Discard, io.LimitReader(r, n+1))
	return err == nil && m <= n
}

// Bounds of a list's limit query parameter.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

// ListLimit is a list's limit query parameter: DefaultListLimit when
// absent, a 400 when not from 1 to MaxListLimit.
func ListLimit(c *fiber.Ctx) (int, error) {
	v := c.Query("limit")
	if v == "" {
		return DefaultListLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxListLimit {
		return 0, BadRequest(fmt.Sprintf("limit: must be a number from 1 to %d", MaxListLimit))
	}
	return n, nil
}

// pageCheckLen is the length of the check that starts a page token.
const pageCheckLen = 8

// SealPageToken wraps a list's page token (a store's cursor, Temporal's
// token) with a check of the query it belongs to, so that a damaged
// token, or one of other filters, is a 400 (OpenPageToken fails) rather
// than the backend's internal error or a wrong page. It is not a secret:
// the query always holds the caller's user, so no token reaches another's
// items.
func SealPageToken(query string, token []byte) string {
	sum := pageCheck(query, token)
	return base64.RawURLEncoding.EncodeToString(append(sum[:pageCheckLen:pageCheckLen], token...))
}

// OpenPageToken unwraps a page token sealed for query.
func OpenPageToken(query, v string) ([]byte, bool) {
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(b) <= pageCheckLen {
		return nil, false
	}
	token := b[pageCheckLen:]
	sum := pageCheck(query, token)
	return token, bytes.Equal(sum[:pageCheckLen], b[:pageCheckLen])
}

func pageCheck(query string, token []byte) [sha256.Size]byte {
	return sha256.Sum256(append([]byte(query+"\x00"), token...))
}
