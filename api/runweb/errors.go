package runweb

import (
	"errors"

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

// refusals maps each kind of the runs gate's refusal (of a start, a
// stream, a payload) to the API's kind of error (web.Kinds says how it is
// written); a kind not in it is a 500.
var refusals = map[error]web.Kind{
	runs.ErrTooMany:       web.KindTooMany,
	runs.ErrOverBudget:    web.KindInsufficientQuota,
	runs.ErrTooLarge:      web.KindPayloadTooLarge,
	runs.ErrUnreachable:   web.KindUnavailable,
	runs.ErrNotFound:      web.KindNotFound,
	runs.ErrInvalid:       web.KindBadRequest,
	runs.ErrNoAgent:       web.KindModelNotFound,
	runs.ErrRunInProgress: web.KindRunInProgress,
}

// failures maps the type of a failed run's error to the API's kind of
// error; a type not in it is a 500.
var failures = map[string]web.Kind{
	longhaul.ErrTypeModelRejected:       web.KindUpstream,
	longhaul.ErrTypeModelUnavailable:    web.KindUpstream,
	longhaul.ErrTypeModelBadOutput:      web.KindModelBadOutput,
	longhaul.ErrTypeModelOutputTooLarge: web.KindModelOutputTooLarge,
	longhaul.ErrTypeUnknownAgent:        web.KindModelNotFound,
	longhaul.ErrTypeBadInput:            web.KindBadRequest,
	longhaul.ErrTypeInsufficientQuota:   web.KindInsufficientQuota,
	longhaul.ErrTypeContextLength:       web.KindContextLength,
}

// refusalError translates the runs gate's refusal, in its own words.
func refusalError(r *runs.Refusal) error {
	k, ok := refusals[r.Kind]
	if !ok {
		k = web.KindInternal
	}
	e := web.New(k, r.Message)
	if k == web.KindTooMany {
		e.RetryAfter = r.RetryAfter
	}
	return e
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
		k, ok := failures[appErr.Type]
		if !ok {
			k = web.KindInternal
		}
		return web.New(k, appErr.Message)
	}
	if errors.Is(err, runs.ErrCanceled) {
		return web.Internal("the run was cancelled")
	}
	return web.Internal(err.Error())
}
