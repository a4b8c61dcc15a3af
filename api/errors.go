package api

import (
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// The handlers' names for web's errors.
type apiError = web.Error

var (
	errBadRequest      = web.BadRequest
	errNotFound        = web.NotFound
	errModelNotFound   = web.ModelNotFound
	errUnauthorized    = web.Unauthorized
	errUpstream        = web.Upstream
	errTooMany         = web.TooMany
	errPayloadTooLarge = web.PayloadTooLarge
	errInternal        = web.Internal
)

// handleError is the one place errors become HTTP statuses and OpenAI
// envelopes.
func (s *Server) handleError(c *fiber.Ctx, err error) error {
	var ae *apiError
	var fe *fiber.Error
	switch {
	case c.Locals(panickedKey{}) != nil:
		// Logged with its stack already (see panicked).
		ae = web.New(web.KindInternal, "internal error")
	case errors.As(err, &ae):
	case errors.As(err, &fe):
		switch fe.Code {
		case fiber.StatusRequestEntityTooLarge:
			ae = web.New(web.KindPayloadTooLarge, "request body is larger than the limit (LONGHAUL_MAX_BODY_BYTES)")
		case fiber.StatusNotFound:
			ae = web.New(web.KindNotFound, fe.Message)
		case fiber.StatusMethodNotAllowed:
			ae = web.New(web.KindMethodNotAllowed, fe.Message)
		default:
			typ := "invalid_request_error"
			if fe.Code >= 500 {
				typ = "server_error"
			}
			ae = &apiError{Status: fe.Code, Type: typ, Code: "", Message: fe.Message}
		}
	case errors.As(runweb.Error(err), &ae):
		// A runs service error a handler passed on as it was: its kind
		// says the status.
	default:
		s.log.ErrorContext(c.UserContext(), "request failed", "method", c.Method(), "path", c.Path(), "run", c.GetRespHeader(HeaderRunID), "error", err)
		ae = web.New(web.KindInternal, "internal error")
	}
	if ae.RetryAfter > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(ae.RetryAfter))
	}
	return c.Status(ae.Status).JSON(wire.ErrorBody{Error: wire.ErrorDetail{Message: ae.Message, Type: ae.Type, Code: ae.Code}})
}
