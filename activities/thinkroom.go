package activities

import (
	"strings"
	"sync"

	"github.com/longhaul-dev/longhaul/contract"
)

// Room to think. A thinking model (qwen3, deepseek-r1, gpt-oss: Ollama
// turns their thinking on by default) writes its thinking before its
// answer, out of the same output budget: Ollama's num_predict counts the
// thinking tokens (the runner predicts them like any other), and OpenAI's
// max_completion_tokens includes reasoning tokens. So when a request sets
// no max_tokens, the window's reserve for the answer (DefaultAnswerReserve)
// grows by a reserve for the thinking: from reasoning_effort when the
// request sets it, else, for a model known to think, DefaultThinkReserve.
// A model is known to think once it has thought on this worker (its answer
// carried reasoning), or from the start when the worker was told so
// (KnownThinkers: the start-up check reads Ollama's capabilities). A
// request's own max_tokens already counts the thinking, and is the reserve
// as ever.

// DefaultThinkReserve is the thinking reserve of a model known to think
// when the request sets no reasoning_effort: the "medium" effort's. It is
// an estimate, not a measurement: everyday questions to qwen3 and
// deepseek-r1 think for one to a few thousand tokens.
const DefaultThinkReserve = 4096

// effortReserve is the thinking reserve of each reasoning_effort, scaled
// from OpenAI's guidance to keep about 25,000 tokens for reasoning and
// output with high effort to the windows local models run with.
var effortReserve = map[string]int{
	"none":    0,
	"minimal": 512,
	"low":     1024,
	"medium":  DefaultThinkReserve,
	"high":    8192,
}

// thinkers are the models (by reference, see Activities.ref) known to
// think: whose answers carried reasoning on this worker, or that the
// worker was told think (KnownThinkers).
type thinkers struct{ m sync.Map }

// note records that model thought when resp carries reasoning.
func (t *thinkers) note(model string, resp contract.ModelResponse) {
	if strings.TrimSpace(resp.Reasoning) != "" {
		t.add(model)
	}
}

// add records that model thinks.
func (t *thinkers) add(model string) { t.m.Store(model, true) }

// KnownThinkers tells a that models think before any has answered here,
// so their first call keeps room to think: the models the endpoint named
// endpoint ("" the default) serves, by the ids it is sent (what
// modelcheck.Probe asked Ollama's /api/show of, and Result.Thinking
// lists). A model seen thinking is noted under the reference of its
// endpoint and id (finishResponse: a.ref(ep, ""), endpoints.Set.Ref),
// which is what a call's fitting asks about; a bare id would not do, as
// the same id on a named endpoint is "<endpoint>:<id>", and on the
// default endpoint an id that would resolve elsewhere is ":<id>". So each
// is noted under endpoints.Set.Ref(endpoint, id) too.
//
// It is a function, not a method: the worker registers every exported
// method of Activities as an activity, and the SDK refuses one that
// returns no error (go.temporal.io/sdk v1.50.0
// internal/internal_worker.go:922, registerActivityStructWithOptions).
func KnownThinkers(a *Activities, endpoint string, models ...string) {
	for _, m := range models {
		if m != "" {
			a.thinkers.add(a.ends.Ref(endpoint, m))
		}
	}
}

// thinks reports whether model thought before.
func (t *thinkers) thinks(model string) bool {
	_, ok := t.m.Load(model)
	return ok
}

// thinkReserve is the tokens kept for a call's thinking, of a window of
// tokens: at most a quarter of it, so the prompt keeps room in a small
// window.
func thinkReserve(effort string, thinks bool, tokens int) int {
	n, ok := effortReserve[strings.ToLower(strings.TrimSpace(effort))]
	if !ok {
		if !thinks {
			return 0
		}
		n = DefaultThinkReserve
	}
	return min(n, tokens/4)
}
