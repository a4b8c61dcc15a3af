package workflows

import (
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/workflow"
)

// A pinned replay (contract.Pinned) is a run an evaluation starts from a
// recorded one: its model calls are made for real, its tool calls are
// answered from the recording and never scheduled, so replaying a run that
// once sent an e-mail sends nothing. Only runs started with Pinned take
// these paths, so no recorded history changes.

// versionPinned marks the first pinned tool answer of a run, so the
// Temporal UI and a later change of this path can tell such runs.
const versionPinned = "pinned-tools"

// PinnedState is what a pinned replay keeps of its tool calls, across
// continue-as-new (Checkpoint.Pinned).
type PinnedState struct {
	// Used marks the recorded calls already given out.
	Used   []bool              `json:"used"`
	Replay contract.ReplayData `json:"replay"`
}

// pinnedModels swaps spec's models as p asks: every call's first, then the
// single roles'.
func pinnedModels(spec contract.AgentSpec, p *contract.Pinned) contract.AgentSpec {
	if p.Model != "" {
		spec = forkModel(spec, p.Model)
	}
	m := &spec.Models
	for _, o := range []struct {
		to   *string
		from string
	}{
		{&m.Plan, p.Models.Plan}, {&m.Review, p.Models.Review}, {&m.Classify, p.Models.Classify},
		{&m.Answer, p.Models.Answer}, {&m.Translate, p.Models.Translate}, {&m.Compact, p.Models.Compact},
	} {
		if o.from != "" {
			*o.to = o.from
		}
	}
	return spec
}

// pinnedResult answers call c from the recording: the recorded result of
// the matching call, or NotRecorded (a tool error the model reads), which
// is counted.
func (r *run) pinnedResult(ctx workflow.Context, c longhaul.ToolCall) contract.PinnedCall {
	_ = workflow.GetVersion(ctx, versionPinned, workflow.DefaultVersion, 1)
	calls := r.in.Pinned.Calls
	if r.pinned == nil {
		r.pinned = &PinnedState{Used: make([]bool, len(calls))}
	}
	i, how := contract.PinnedMatch(calls, r.pinned.Used, c.Name, c.Arguments)
	got := contract.PinnedCall{Name: c.Name, Arguments: contract.CanonicalJSON(c.Arguments), Match: how}
	if i < 0 {
		got.Content, got.Error = contract.NotRecorded, true
		r.pinned.Replay.NotRecorded++
	} else {
		r.pinned.Used[i] = true
		got.Content, got.Error = calls[i].Content, calls[i].Error
	}
	r.pinned.Replay.Calls = append(r.pinned.Replay.Calls, got)
	return got
}

// replayData is what the pinned run reports: its calls and its last plan.
func (r *run) replayData() *contract.ReplayData {
	out := contract.ReplayData{}
	if r.pinned != nil {
		out = r.pinned.Replay
	}
	if n := len(r.state.Plans); n > 0 {
		out.Plan = nil
		for _, s := range r.state.Plans[n-1].Steps {
			out.Plan = append(out.Plan, s.Title)
		}
	}
	return &out
}

// toolResult is a call's result: the activity's, or the recorded one of
// a pinned replay.
func toolResult(ctx workflow.Context, f workflow.Future, pinned *contract.PinnedCall) (res contract.ToolResponse, content string, failed bool) {
	if pinned != nil {
		return contract.ToolResponse{Content: pinned.Content}, pinned.Content, pinned.Error
	}
	if err := f.Get(ctx, &res); err != nil {
		return res, "error: " + errorMessage(err), true
	}
	return res, res.Content, false
}
