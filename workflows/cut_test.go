package workflows_test

import (
	"testing"

	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
)

// TestFinishReasonLengthAllThinking: a model that spent its whole limit
// thinking (finish_reason "length", reasoning, no text) ends the run with
// the cut named, so every client can say so rather than show nothing.
func TestFinishReasonLengthAllThinking(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	r := answer("", usage(4, 3))
	r.resp.FinishReason = "length"
	r.resp.Reasoning = "Let me weigh every option at length"
	h.scriptModel(r).Once()
	h.run(input(hi...))

	res := h.result()
	if res.FinishReason != "length" || res.Cut != longhaul.CutThinking {
		t.Errorf("result finishes %q, cut %q; want length, %q", res.FinishReason, res.Cut, longhaul.CutThinking)
	}
	evs := h.events()
	diff(t, "last event", ev(longhaul.EventDone, longhaul.DoneData{Status: contract.StatusCompleted, FinishReason: "length", Cut: longhaul.CutThinking}),
		evs[len(evs)-1], eventOpts, cmpopts.IgnoreFields(longhaul.Event{}, "Offset"))
}
