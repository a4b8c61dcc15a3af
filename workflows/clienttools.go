package workflows

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/workflow"
)

// This file is the client's side of a tool loop: tools the client declared
// in its request, which the model may call beside the agent's own. The run
// runs the agent's calls of a model answer, then hands the client's calls
// to the client (a client_tool_calls event, which ends the response) and
// waits for their results, which the client's next request delivers
// through UpdateInput; the loop then goes on in the same run.

// splitCalls parts a model answer's calls into the ones the run makes and
// the ones the client makes (when the loop offers client tools).
func (r *run) splitCalls(calls []longhaul.ToolCall, clientTools bool) (server, client []longhaul.ToolCall) {
	if !clientTools {
		return calls, nil
	}
	for _, c := range calls {
		if r.isClientTool(c.Name) {
			client = append(client, c)
		} else {
			server = append(server, c)
		}
	}
	return server, client
}

func (r *run) isClientTool(name string) bool {
	for _, t := range r.in.ClientTools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// awaitClient hands calls to the client and waits for their results, up to
// the input's ClientToolTimeout. It returns one tool message per call, in
// the order of calls, or answered false when the time ran out. call names
// the model call that made them.
func (r *run) awaitClient(ctx workflow.Context, call string, calls []longhaul.ToolCall) ([]longhaul.Message, bool, error) {
	// Their sequence numbers were given in the model call (see
	// ModelRequest.NextCall); the run's own calls took theirs already.
	r.toolSeq += int64(len(calls))
	now := workflow.Now(ctx)
	r.input, r.inputUpdate = nil, ""
	r.state.Waiting = &contract.Waiting{Kind: contract.WaitClientTools, Calls: calls, Since: now}
	r.setStatus(ctx, contract.StatusWaiting)
	r.log.emit(now, longhaul.EventClientToolCalls, longhaul.ClientToolCallsData{Calls: calls, Call: call})
	timeout := r.in.ClientToolTimeout
	if timeout <= 0 {
		timeout = contract.DefaultClientToolTimeout
	}
	answered, err := workflow.AwaitWithTimeout(ctx, timeout, func() bool { return r.input != nil })
	r.state.Waiting = nil
	if err != nil {
		return nil, false, err
	}
	if !answered {
		return nil, false, nil
	}
	r.setStatus(ctx, contract.StatusRunning)
	results := map[string]string{}
	for _, res := range r.input.ToolResults {
		results[res.ToolCallID] = res.Content
	}
	r.input = nil
	out := make([]longhaul.Message, len(calls))
	for i, c := range calls {
		out[i] = longhaul.Message{Role: longhaul.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: results[c.ID]}
	}
	return out, true, nil
}

// checkToolResults is the input validator's check of a client's results:
// exactly one for each call the run waits for.
func checkToolResults(w *contract.Waiting, in contract.InputRequest) error {
	if w.Kind != contract.WaitClientTools {
		if len(in.ToolResults) > 0 {
			return errors.New("the run waits for an approval, not for tool results")
		}
		return nil
	}
	if len(in.ToolResults) == 0 {
		return errors.New("the run waits for the results of the client's tool calls")
	}
	want := map[string]bool{}
	for _, c := range w.Calls {
		want[c.ID] = true
	}
	got := map[string]bool{}
	for _, res := range in.ToolResults {
		if !want[res.ToolCallID] {
			return fmt.Errorf("tool result %q answers no call the run waits for", res.ToolCallID)
		}
		if got[res.ToolCallID] {
			return fmt.Errorf("two tool results answer call %q", res.ToolCallID)
		}
		got[res.ToolCallID] = true
	}
	for _, c := range w.Calls {
		if !got[c.ID] {
			return fmt.Errorf("the result of tool call %q (%s) is missing", c.ID, c.Name)
		}
	}
	return nil
}

// inCallOrder orders tool messages as the calls they answer.
func inCallOrder(calls []longhaul.ToolCall, msgs []longhaul.Message) []longhaul.Message {
	byID := make(map[string]longhaul.Message, len(msgs))
	for _, m := range msgs {
		byID[m.ToolCallID] = m
	}
	out := make([]longhaul.Message, 0, len(calls))
	for _, c := range calls {
		if m, ok := byID[c.ID]; ok {
			out = append(out, m)
		}
	}
	return out
}

// callOptions are the request's options for a model call, with the
// agent's temperature when the request set none. What shapes the client's
// answer (response_format, tool_choice) goes only to calls that answer the
// client: not to a plan step's, whose result the plan reads.
func (r *run) callOptions(answers bool) longhaul.ModelOptions {
	opts := r.in.Options
	if opts.Temperature == nil {
		opts.Temperature = r.spec.Temperature
	}
	if !answers {
		opts.ResponseFormat, opts.ToolChoice = nil, nil
	}
	return opts
}

// publishes reports whether a call with opts streams its text as it comes:
// an answer in a JSON response format is checked before it is shown, so it
// arrives whole.
func publishes(opts longhaul.ModelOptions) bool {
	f := opts.ResponseFormat
	return f == nil || (f.Type != longhaul.FormatJSONObject && f.Type != longhaul.FormatJSONSchema)
}

// relaxChoice is tool_choice after the request's first model call: a
// choice that forces a call ("required", a named function) becomes the
// endpoint's default; "none" and "auto" stay.
func relaxChoice(choice json.RawMessage) json.RawMessage {
	var s string
	if json.Unmarshal(choice, &s) == nil && (s == "none" || s == "auto") {
		return choice
	}
	return nil
}
