package runweb

import (
	"errors"
	"net/http"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/runs"
)

// Error translates an error of the runs service that no handler translated
// with words of its own, or returns nil for any other error. The server's
// error handler calls it for whatever a handler passed on as it was.
func Error(err error) error {
	var failure *runs.Failure
	var refusal *runs.Refusal
	switch {
	case errors.As(err, &refusal):
		return refusalError(refusal)
	case errors.As(err, &failure):
		return RunError(err)
	case errors.Is(err, runs.ErrNotFound):
		return web.NotFound("no such run")
	case errors.Is(err, runs.ErrInvalid):
		return web.BadRequest(err.Error())
	case errors.Is(err, runs.ErrCanceled):
		return web.Conflict("the run was cancelled")
	case errors.Is(err, runs.ErrUnreachable), errors.Is(err, runs.ErrTimeout), errors.Is(err, runs.ErrNoNamespace):
		return web.Unavailable("Temporal did not answer: " + err.Error())
	}
	return nil
}

// refusalError translates the runs gate's refusal (of a start, a stream,
// a payload), in its own words.
func refusalError(r *runs.Refusal) error {
	switch r.Kind {
	case runs.ErrTooMany:
		return web.TooMany(r.Message, r.RetryAfter)
	case runs.ErrOverBudget:
		return web.InsufficientQuota(r.Message)
	case runs.ErrTooLarge:
		return web.PayloadTooLarge(r.Message)
	case runs.ErrUnreachable:
		return web.Unavailable(r.Message)
	case runs.ErrNotFound:
		return web.NotFound(r.Message)
	case runs.ErrInvalid:
		return web.BadRequest(r.Message)
	case runs.ErrNoAgent:
		return web.ModelNotFound(r.Message)
	case runs.ErrRunInProgress:
		return &web.Error{Status: http.StatusConflict, Type: "invalid_request_error", Code: "run_in_progress", Message: r.Message}
	}
	return web.Internal(r.Message)
}

// Refused is err with a refusal of the runs gate translated at once, so
// that whatever looks at the error sees the API's (see refusalError).
func Refused(err error) error {
	var r *runs.Refusal
	if errors.As(err, &r) {
		return refusalError(r)
	}
	return err
}

// CheckPayload refuses, with a 413, a value that Temporal would refuse as a
// payload (see runs.CheckPayload).
func CheckPayload(what string, v any) error { return Refused(runs.CheckPayload(what, v)) }

// RunError translates a failed run into an API error.
func RunError(err error) error {
	var appErr *runs.Failure
	if errors.As(err, &appErr) {
		switch appErr.Type {
		case longhaul.ErrTypeModelRejected, longhaul.ErrTypeModelUnavailable:
			return web.Upstream(appErr.Message)
		case longhaul.ErrTypeModelBadOutput:
			return &web.Error{Status: http.StatusBadGateway, Type: "api_error", Code: "model_bad_output", Message: appErr.Message}
		case longhaul.ErrTypeModelOutputTooLarge:
			return &web.Error{Status: http.StatusBadGateway, Type: "api_error", Code: "model_output_too_large", Message: appErr.Message}
		case longhaul.ErrTypeUnknownAgent:
			return web.ModelNotFound(appErr.Message)
		case longhaul.ErrTypeBadInput:
			return web.BadRequest(appErr.Message)
		case longhaul.ErrTypeInsufficientQuota:
			return web.InsufficientQuota(appErr.Message)
		case longhaul.ErrTypeContextLength:
			return &web.Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: longhaul.ErrTypeContextLength, Message: appErr.Message}
		}
		return web.Internal(appErr.Message)
	}
	if errors.Is(err, runs.ErrCanceled) {
		return web.Internal("the run was cancelled")
	}
	return web.Internal(err.Error())
}
