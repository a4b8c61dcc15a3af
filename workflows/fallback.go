package workflows

import (
	"errors"
	"strconv"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// versionModelFallbacks marks runs whose model calls go down a fallback
// list (model: [a, b]) one activity per model. A list is new with it, so no
// run recorded before has one; the marker keeps a worker that predates it
// from replaying a run that took a fallback.
const versionModelFallbacks = "model-fallbacks"

// The attempts of one model of a model call: a model with a fallback is
// given up on sooner, since another answers (two attempts ride out a
// dropped connection without a minute of backoff); the last model of the
// list, or the only one, retries as every tool loop call always did.
const (
	modelAttempts    = 5
	fallbackAttempts = 2
)

// callModel runs a tool loop's model call. When its model is a fallback
// list, each model that fails after its retries with a failure another
// model may not share (fallbackReason) hands the call to the next one:
// a separate activity, its summary naming the model and why the one before
// it was passed over, and a model_fallback event saying the same. The next
// model's attempts are numbered on from the last one's, so a follower drops
// the text the failed model streamed, as after a retry.
func (r *run) callModel(ctx workflow.Context, req contract.ModelRequest, label string, answer bool) (contract.ModelResponse, error) {
	models := longhaul.ModelList(req.Model)
	if len(models) < 2 || workflow.GetVersion(ctx, versionModelFallbacks, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		resp, err := r.callOneModel(ctx, req, label+" llm "+req.Model, answer, modelAttempts)
		if err == nil && resp.Model != "" {
			// The endpoint's answer names the model it used; keep using it.
			r.model = resp.Model
		}
		return resp, err
	}
	// The list stays the run's model: the next call starts at its top again.
	var passed *longhaul.ModelFallbackData
	base := 0
	for i, m := range models {
		try := req
		try.Model, try.AttemptBase, try.Fallback = m, base, i < len(models)-1
		attempts := int32(fallbackAttempts)
		if !try.Fallback {
			attempts = modelAttempts
		}
		summary := label + " llm " + m
		if passed != nil {
			summary += " (" + passed.Model + " failed: " + fallbackWhy(*passed) + ")"
		}
		resp, err := r.callOneModel(ctx, try, summary, answer, attempts)
		if err == nil || !try.Fallback {
			return resp, err
		}
		d, ok := fallbackReason(err)
		if !ok {
			return resp, err
		}
		d.Call, d.Model, d.Next = req.Call, m, models[i+1]
		r.log.emit(workflow.Now(ctx), longhaul.EventModelFallback, d)
		passed = &d
		base += int(attempts)
	}
	panic("unreachable: the last model returns")
}

// fallbackReason says whether a model call's failure hands the call to the
// next model, and how the fallback event reports it: an endpoint that did
// not answer (refused connection, 429, 5xx, a silent stream), one cooling
// down, a call out of time, a request too long for the model's window
// (a later model may have a larger one; a smaller one fails the same check
// at once, before any request is sent). A request the endpoint refused, an
// answer too large or a cancelled run would fail alike on any model.
func fallbackReason(err error) (longhaul.ModelFallbackData, bool) {
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return longhaul.ModelFallbackData{Reason: "the model call timed out (" + timeout.TimeoutType().String() + ")", Code: "timeout"}, true
	}
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		return longhaul.ModelFallbackData{}, false
	}
	switch appErr.Type() {
	case longhaul.ErrTypeModelUnavailable, longhaul.ErrTypeModelCoolingDown, longhaul.ErrTypeContextLength:
	default:
		return longhaul.ModelFallbackData{}, false
	}
	d := longhaul.ModelFallbackData{Reason: appErr.Message(), Code: appErr.Type()}
	if appErr.HasDetails() {
		_ = appErr.Details(&d.Status)
	}
	return d, true
}

// fallbackWhy is a fallback's reason in a few words, for an activity
// summary: the HTTP status, else the kind.
func fallbackWhy(d longhaul.ModelFallbackData) string {
	if d.Status != 0 {
		return strconv.Itoa(d.Status)
	}
	return d.Code
}
