package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"go.temporal.io/api/serviceerror"
)

// apiError is an error with its HTTP status and OpenAI error type and code.
type apiError struct {
	status int
	typ    string
	code   string
	msg    string
	// retryAfter, in seconds, is sent as Retry-After when set.
	retryAfter int
}

func (e *apiError) Error() string { return e.msg }

func errBadRequest(msg string) error {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", code: "invalid_request", msg: msg}
}
func errNotFound(msg string) error {
	return &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "not_found", msg: msg}
}
func errConflict(msg string) error {
	return &apiError{status: http.StatusConflict, typ: "invalid_request_error", code: "conflict", msg: msg}
}
func errModelNotFound(msg string) error {
	return &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "model_not_found", msg: msg}
}
func errUnauthorized(msg string) error {
	return &apiError{status: http.StatusUnauthorized, typ: "authentication_error", code: "invalid_api_key", msg: msg}
}
func errForbidden(msg string) error {
	return &apiError{status: http.StatusForbidden, typ: "permission_error", code: "forbidden", msg: msg}
}
func errUpstream(msg string) error {
	return &apiError{status: http.StatusBadGateway, typ: "api_error", code: "upstream_error", msg: msg}
}
func errTimeout(msg string) error {
	return &apiError{status: http.StatusGatewayTimeout, typ: "timeout_error", code: "run_timeout", msg: msg}
}
func errTooMany(msg string, retryAfter int) error {
	return &apiError{status: http.StatusTooManyRequests, typ: "rate_limit_error", code: "rate_limit_exceeded", msg: msg, retryAfter: retryAfter}
}
func errPayloadTooLarge(msg string) error {
	return &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error", code: "request_too_large", msg: msg}
}
func errInternal(msg string) error {
	return &apiError{status: http.StatusInternalServerError, typ: "server_error", code: "internal_error", msg: msg}
}

// errUnavailable is a 503: Temporal did not answer in time, or not at all.
// Clients retry it, after Retry-After.
func errUnavailable(msg string) error {
	return &apiError{status: http.StatusServiceUnavailable, typ: "server_error", code: "unavailable", msg: msg, retryAfter: retryUnavailable}
}

// retryUnavailable is the Retry-After of a 503, in seconds.
const retryUnavailable = 5

// unreachable reports whether err says Temporal could not be reached in
// time, as opposed to an answer it gave.
func unreachable(err error) bool {
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &unavailable) || errors.As(err, &deadline)
}

// handleError is the one place errors become HTTP statuses and OpenAI
// envelopes.
func (s *Server) handleError(c *fiber.Ctx, err error) error {
	var ae *apiError
	var fe *fiber.Error
	switch {
	case c.Locals(panickedKey{}) != nil:
		// Logged with its stack already (see panicked).
		ae = &apiError{status: http.StatusInternalServerError, typ: "server_error", code: "internal_error", msg: "internal error"}
	case errors.As(err, &ae):
	case errors.As(err, &fe):
		switch fe.Code {
		case fiber.StatusRequestEntityTooLarge:
			ae = &apiError{status: fe.Code, typ: "invalid_request_error", code: "request_too_large", msg: "request body is larger than the limit (LONGHAUL_MAX_BODY_BYTES)"}
		case fiber.StatusNotFound:
			ae = &apiError{status: fe.Code, typ: "invalid_request_error", code: "not_found", msg: fe.Message}
		case fiber.StatusMethodNotAllowed:
			ae = &apiError{status: fe.Code, typ: "invalid_request_error", code: "method_not_allowed", msg: fe.Message}
		default:
			typ := "invalid_request_error"
			if fe.Code >= 500 {
				typ = "server_error"
			}
			ae = &apiError{status: fe.Code, typ: typ, code: "", msg: fe.Message}
		}
	default:
		s.log.ErrorContext(c.UserContext(), "request failed", "method", c.Method(), "path", c.Path(), "run", c.GetRespHeader(HeaderRunID), "error", err)
		ae = &apiError{status: http.StatusInternalServerError, typ: "server_error", code: "internal_error", msg: "internal error"}
	}
	if ae.retryAfter > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(ae.retryAfter))
	}
	return c.Status(ae.status).JSON(wire.ErrorBody{Error: wire.ErrorDetail{Message: ae.msg, Type: ae.typ, Code: ae.code}})
}
