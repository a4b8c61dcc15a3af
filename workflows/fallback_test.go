package workflows_test

import (
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/temporal"
)

// fallbackCall is what the tests compare of a model call down a fallback
// list.
type fallbackCall struct {
	Model       string
	AttemptBase int
	Fallback    bool
	Attempt     int32
}

func (h *harness) fallbackCalls() []fallbackCall {
	var out []fallbackCall
	for i, r := range h.modelCalls() {
		out = append(out, fallbackCall{r.Model, r.AttemptBase, r.Fallback, h.attempts[i]})
	}
	return out
}

// TestModelFallbackList: an agent's model list a,b,c whose a answers 503
// (retried once, as a model with a fallback is) and whose b is too small
// for the request: c answers. Each model is its own activity, attempts
// numbered on from the ones before so the answer's text replaces theirs; a
// model_fallback event says why each was passed over; the usage is c's.
func TestModelFallbackList(t *testing.T) {
	h := newHarness(t)
	s := spec
	s.Model = "a,b,c"
	h.resolve(s)
	unavailable := reply{err: temporal.NewApplicationErrorWithCause("model endpoint answered 503: down", longhaul.ErrTypeModelUnavailable, nil, 503)}
	tooLong := reply{err: temporal.NewNonRetryableApplicationError("the request does not fit b's window", longhaul.ErrTypeContextLength, nil)}
	ok := answer("From c.", usage(10, 3))
	ok.resp.Attempt = 5
	h.scriptModel(unavailable, unavailable, tooLong, ok)
	h.run(contract.AgentInput{Agent: "assistant", Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "Hi"}}})
	res := h.result()
	if res.Content != "From c." || res.Model != "test-model-v2" {
		t.Errorf("result = %q on %q, want c's answer, on the model c's endpoint named", res.Content, res.Model)
	}
	diff(t, "model calls", []fallbackCall{
		{"a", 0, true, 1}, {"a", 0, true, 2}, {"b", 2, true, 1}, {"c", 4, false, 1},
	}, h.fallbackCalls())
	var fallbacks []longhaul.ModelFallbackData
	var content []longhaul.ContentData
	for _, e := range h.events() {
		switch e.Type {
		case longhaul.EventModelFallback:
			var d longhaul.ModelFallbackData
			_ = e.Decode(&d)
			fallbacks = append(fallbacks, d)
		case longhaul.EventContent:
			var d longhaul.ContentData
			_ = e.Decode(&d)
			content = append(content, d)
		}
	}
	diff(t, "fallback events", []longhaul.ModelFallbackData{
		{Call: "turn-1", Model: "a", Next: "b", Reason: "model endpoint answered 503: down", Code: longhaul.ErrTypeModelUnavailable, Status: 503},
		{Call: "turn-1", Model: "b", Next: "c", Reason: "the request does not fit b's window", Code: longhaul.ErrTypeContextLength},
	}, fallbacks)
	if len(content) != 1 || content[0].Text != "From c." || content[0].Attempt != 5 {
		t.Errorf("content events = %+v, want c's text at attempt 5", content)
	}
	if got := fallbacks[0].Message(); got != "model a failed (503), answering with b" {
		t.Errorf("status line = %q", got)
	}
	diff(t, "usage by model", []longhaul.ModelUsage{{Model: "c", Usage: usage(10, 3)}}, contract.ModelUsage(h.state().Calls))
}

// TestModelFallbackNotOnRejection: a request the endpoint refused (400)
// would be refused by any model: the run fails on the first, and the next
// is never asked.
func TestModelFallbackNotOnRejection(t *testing.T) {
	h := newHarness(t)
	s := spec
	s.Model = "a,b"
	h.resolve(s)
	h.scriptModel(reply{err: temporal.NewNonRetryableApplicationError("model endpoint answered 400: bad request", longhaul.ErrTypeModelRejected, nil, 400)})
	h.run(contract.AgentInput{Agent: "assistant", Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "Hi"}}})
	if appErr := appError(t, h.env.GetWorkflowError()); appErr.Type() != longhaul.ErrTypeModelRejected {
		t.Errorf("error type = %q", appErr.Type())
	}
	diff(t, "model calls", []fallbackCall{{"a", 0, true, 1}}, h.fallbackCalls())
}
