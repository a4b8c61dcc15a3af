package api

import (
	"errors"
	"net/http"

	"github.com/gofiber/fiber/v2"
)

// apiError is an error with its HTTP status and OpenAI error type and code.
type apiError struct {
	status int
	typ    string
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func errBadRequest(msg string) error {
	return &apiError{http.StatusBadRequest, "invalid_request_error", "invalid_request", msg}
}
func errNotFound(msg string) error {
	return &apiError{http.StatusNotFound, "invalid_request_error", "not_found", msg}
}
func errConflict(msg string) error {
	return &apiError{http.StatusConflict, "invalid_request_error", "conflict", msg}
}
func errModelNotFound(msg string) error {
	return &apiError{http.StatusNotFound, "invalid_request_error", "model_not_found", msg}
}
func errUnauthorized(msg string) error {
	return &apiError{http.StatusUnauthorized, "authentication_error", "invalid_api_key", msg}
}
func errUpstream(msg string) error {
	return &apiError{http.StatusBadGateway, "api_error", "upstream_error", msg}
}
func errTimeout(msg string) error {
	return &apiError{http.StatusGatewayTimeout, "timeout_error", "run_timeout", msg}
}
func errInternal(msg string) error {
	return &apiError{http.StatusInternalServerError, "server_error", "internal_error", msg}
}
func errUnavailable(msg string) error {
	return &apiError{http.StatusServiceUnavailable, "server_error", "unavailable", msg}
}

// handleError is the one place errors become HTTP statuses and OpenAI
// envelopes.
func (s *Server) handleError(c *fiber.Ctx, err error) error {
	var ae *apiError
	var fe *fiber.Error
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &fe):
		switch fe.Code {
		case fiber.StatusRequestEntityTooLarge:
			ae = &apiError{fe.Code, "invalid_request_error", "request_too_large", "request body is larger than the limit (LONGHAUL_MAX_BODY_BYTES)"}
		case fiber.StatusNotFound:
			ae = &apiError{fe.Code, "invalid_request_error", "not_found", fe.Message}
		case fiber.StatusMethodNotAllowed:
			ae = &apiError{fe.Code, "invalid_request_error", "method_not_allowed", fe.Message}
		default:
			typ := "invalid_request_error"
			if fe.Code >= 500 {
				typ = "server_error"
			}
			ae = &apiError{fe.Code, typ, "", fe.Message}
		}
	default:
		s.log.Error("request failed", "method", c.Method(), "path", c.Path(), "error", err)
		ae = &apiError{http.StatusInternalServerError, "server_error", "internal_error", "internal error"}
	}
	return c.Status(ae.status).JSON(ErrorBody{Error: ErrorDetail{Message: ae.msg, Type: ae.typ, Code: ae.code}})
}
