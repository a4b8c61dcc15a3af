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

// BadRequest is a 400 invalid_request.
func BadRequest(msg string) error {
	return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "invalid_request", Message: msg}
}

// NotFound is a 404 not_found.
func NotFound(msg string) error {
	return &Error{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "not_found", Message: msg}
}

// Conflict is a 409.
func Conflict(msg string) error {
	return &Error{Status: http.StatusConflict, Type: "invalid_request_error", Code: "conflict", Message: msg}
}

// ModelNotFound is OpenAI's 404 for a model (agent) it does not serve.
func ModelNotFound(msg string) error {
	return &Error{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "model_not_found", Message: msg}
}

// Unauthorized is a 401 invalid_api_key.
func Unauthorized(msg string) error {
	return &Error{Status: http.StatusUnauthorized, Type: "authentication_error", Code: "invalid_api_key", Message: msg}
}

// Forbidden is a 403.
func Forbidden(msg string) error {
	return &Error{Status: http.StatusForbidden, Type: "permission_error", Code: "forbidden", Message: msg}
}

// Upstream is a 502: the model endpoint failed.
func Upstream(msg string) error {
	return &Error{Status: http.StatusBadGateway, Type: "api_error", Code: "upstream_error", Message: msg}
}

// Timeout is a 504: the run did not finish within the request's time.
func Timeout(msg string) error {
	return &Error{Status: http.StatusGatewayTimeout, Type: "timeout_error", Code: "run_timeout", Message: msg}
}

// TooMany is a 429 with Retry-After.
func TooMany(msg string, retryAfter int) error {
	return &Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "rate_limit_exceeded", Message: msg, RetryAfter: retryAfter}
}

// InsufficientQuota is OpenAI's 429 for a used-up quota: here a budget
// (LONGHAUL_BUDGETS) that applies to the request; the message names the
// limit and when it resets. Retrying before then cannot help, so it has no
// Retry-After.
func InsufficientQuota(msg string) error {
	return &Error{Status: http.StatusTooManyRequests, Type: "insufficient_quota", Code: "insufficient_quota", Message: msg}
}

// PayloadTooLarge is a 413.
func PayloadTooLarge(msg string) error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "request_too_large", Message: msg}
}

// Internal is a 500 whose message the caller may read: say what failed,
// never why (that goes to the log).
func Internal(msg string) error {
	return &Error{Status: http.StatusInternalServerError, Type: "server_error", Code: "internal_error", Message: msg}
}

// Unavailable is a 503: Temporal did not answer in time, or not at all.
// Clients retry it, after Retry-After.
func Unavailable(msg string) error {
	return &Error{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "unavailable", Message: msg, RetryAfter: RetryUnavailable}
}

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
