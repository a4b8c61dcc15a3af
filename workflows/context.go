package workflows

import (
	"fmt"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/workflow"
)

// maxCompactions bounds the compactions before one model call: each covers
// more of the conversation than the last, so two always suffice; the bound
// only guards the loop.
const maxCompactions = 3

// callFitted runs one model call that fits its model's window: when the
// call answers that the older turns must be compacted first, it runs
// Compact with the compact role's model, keeps the summary on req (the
// caller carries it to its next calls and across continue-as-new), and
// calls again. Each shortened request and each compaction is a context
// event.
func (r *run) callFitted(ctx workflow.Context, req *contract.ModelRequest, label string, answer bool) (contract.ModelResponse, error) {
	req.Window = r.spec.Context
	for i := 0; ; i++ {
		resp, err := r.callModel(ctx, *req, label, answer)
		if err != nil || resp.Compact == 0 || i == maxCompactions {
			if resp.Context != nil {
				r.log.emit(workflow.Now(ctx), longhaul.EventContext, *resp.Context)
			}
			return resp, err
		}
		sum, err := r.compact(ctx, *req, resp)
		if err != nil {
			return contract.ModelResponse{}, err
		}
		req.Summary = &sum
	}
}

// compact summarizes the older turns of req's conversation, up to where
// the model call resp said, and emits the context event that says so.
func (r *run) compact(ctx workflow.Context, req contract.ModelRequest, resp contract.ModelResponse) (longhaul.Summary, error) {
	model := r.roleModel(roleCompact)
	data := longhaul.ContextData{Model: req.Model}
	if resp.Context != nil {
		data = *resp.Context
	}
	from := 0
	if req.Summary != nil {
		from = req.Summary.Covers
	}
	summary := fmt.Sprintf("%s compact messages %d-%d for %s (window %d, %d tokens over)",
		callName(req), from, resp.Compact, data.Model, data.Window, max(data.Used+data.Reserved-data.Window, 0))
	actx := r.structuredOptions(ctx, summary)
	var out contract.CompactResponse
	err := workflow.ExecuteActivity(actx, a.Compact, contract.CompactRequest{
		Call: req.Call + "-compact", Caller: r.caller(model), Messages: req.Messages, ConvRef: req.ConvRef,
		Previous: req.Summary, Upto: resp.Compact, Window: r.spec.Context,
	}).Get(ctx, &out)
	r.addUsage(req.Call+"-compact", model, out.Usage)
	if err != nil {
		return longhaul.Summary{}, err
	}
	data.Call = req.Call
	data.Compacted = true
	data.Summarized = out.Summary.Covers
	data.SummaryTokens = out.Summary.Tokens
	r.log.emit(workflow.Now(ctx), longhaul.EventContext, data)
	return out.Summary, nil
}

// callName is how a call is named in activity summaries.
func callName(req contract.ModelRequest) string {
	if req.Call == "" {
		return "llm"
	}
	return req.Call
}
