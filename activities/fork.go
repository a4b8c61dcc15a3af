package activities

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// ForkReader reads the run a fork starts from: its state query and its
// recorded history; client.Client is one.
type ForkReader interface {
	QueryWorkflow(ctx context.Context, workflowID string, runID string, queryType string, args ...any) (converter.EncodedValue, error)
	GetWorkflowHistory(ctx context.Context, workflowID string, runID string, isLongPoll bool, filterType enums.HistoryEventFilterType) client.HistoryEventIterator
}

// maxForkExecutions bounds the executions of a run ReadFork walks.
const maxForkExecutions = 1000

// ownTurn names the model calls of a run's own tool loop ("turn-3"); a
// plan step's loop prefixes its calls ("step-2-turn-1").
var ownTurn = regexp.MustCompile(`^turn-([0-9]+)$`)

// ReadFork reads what a fork reuses of run req.Run (see
// contract.ForkState): for a plan step, its plans from its state query
// (a closed run answers it by replay); for a tool call, the model answers
// and tool results its own loop recorded in its history, across every
// execution it continued as new into. Nothing is called again: the tool
// results are the recorded ones. A point the run does not have is a
// non-retryable error. A request whose point the API decided already
// (req.Decided) reads only the recorded loop: the fork has the rest.
func (a *Activities) ReadFork(ctx context.Context, req contract.ForkRequest) (contract.ForkState, error) {
	if a.Forks == nil {
		return contract.ForkState{}, nonRetryable(longhaul.ErrTypeNoTemporal, errors.New("this worker cannot read other runs"))
	}
	if req.Decided {
		return a.readLoop(ctx, req, contract.ForkState{})
	}
	v, err := a.Forks.QueryWorkflow(ctx, req.Run, "", contract.QueryState)
	if err != nil {
		return contract.ForkState{}, fmt.Errorf("read the state of run %s: %w", req.Run, err)
	}
	var st contract.RunState
	if err := v.Get(&st); err != nil {
		return contract.ForkState{}, nonRetryable(longhaul.ErrTypeBadInput, fmt.Errorf("decode the state of run %s: %w", req.Run, err))
	}
	out := contract.ForkState{Mode: st.Mode, Skill: st.Skill}
	if req.Step != "" {
		plans, reviews, ok := contract.ForkPlans(st.Plans, st.Reviews, req.Step)
		if !ok {
			return out, nonRetryable(longhaul.ErrTypeBadInput, fmt.Errorf("run %s has no step %s whose earlier steps all finished", req.Run, req.Step))
		}
		out.Plans, out.Reviews, out.StepSeq = plans, reviews, contract.ForkStepSeq(plans)
		return out, nil
	}
	return a.readLoop(ctx, req, out)
}

// readLoop adds to out the recorded loop of run req.Run up to req.Call.
func (a *Activities) readLoop(ctx context.Context, req contract.ForkRequest, out contract.ForkState) (contract.ForkState, error) {
	rec, err := a.recordedLoop(ctx, req.Run)
	if err != nil {
		return out, err
	}
	out.Messages, out.Turn, out.ToolSeq, err = rec.upTo(req.Call)
	if err != nil {
		return out, nonRetryable(longhaul.ErrTypeBadInput, fmt.Errorf("run %s: %w", req.Run, err))
	}
	return out, nil
}

// recorded is what a run's history holds of its own tool loop: each
// turn's model answer, and each tool call's result by call id.
type recorded struct {
	turns   []recordedTurn
	results map[string]recordedResult
}

type recordedTurn struct {
	n   int
	msg longhaul.Message
}

type recordedResult struct {
	msg longhaul.Message
	seq int64
}

// upTo is the conversation the loop had added once the turn that made
// call had its tool results, the turn after it and the highest tool call
// number used by then.
func (rec *recorded) upTo(call string) ([]longhaul.Message, int, int64, error) {
	var msgs []longhaul.Message
	var seq int64
	for _, t := range rec.turns {
		msgs = append(msgs, t.msg)
		found := false
		for _, c := range t.msg.ToolCalls {
			res, ok := rec.results[c.ID]
			if !ok {
				if c.ID == call {
					return nil, 0, 0, fmt.Errorf("tool call %s has no recorded result (a call the client ran, or one a person denied)", call)
				}
				return nil, 0, 0, fmt.Errorf("tool call %s, of the turns up to %s, has no recorded result", c.ID, call)
			}
			msgs = append(msgs, res.msg)
			seq = max(seq, res.seq)
			found = found || c.ID == call
		}
		if found {
			return msgs, t.n + 1, seq, nil
		}
	}
	return nil, 0, 0, fmt.Errorf("no tool call %s in the run's own tool loop", call)
}

// recordedLoop reads run's own tool loop from its history, every
// execution from the first.
func (a *Activities) recordedLoop(ctx context.Context, run string) (*recorded, error) {
	exec, err := a.firstExecution(ctx, run)
	if err != nil {
		return nil, err
	}
	rec := &recorded{results: map[string]recordedResult{}}
	for range maxForkExecutions {
		activity.RecordHeartbeat(ctx, exec)
		next, err := a.readExecution(ctx, run, exec, rec)
		if err != nil || next == "" {
			return rec, err
		}
		exec = next
	}
	return rec, nonRetryable(longhaul.ErrTypeBadInput, fmt.Errorf("run %s continued as new more than %d times", run, maxForkExecutions))
}

// firstExecution is the run id of run's first execution.
func (a *Activities) firstExecution(ctx context.Context, run string) (string, error) {
	it := a.Forks.GetWorkflowHistory(ctx, run, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return "", nonRetryable(longhaul.ErrTypeBadInput, fmt.Errorf("run %s has no history", run))
	}
	e, err := it.Next()
	if err != nil {
		return "", fmt.Errorf("read the history of run %s: %w", run, err)
	}
	first := e.GetWorkflowExecutionStartedEventAttributes().GetFirstExecutionRunId()
	if first == "" {
		return "", nonRetryable(longhaul.ErrTypeBadInput, fmt.Errorf("run %s has no start event", run))
	}
	return first, nil
}

// readExecution adds what execution exec of run recorded of its own loop
// to rec, and returns the execution it continued as new into, if any.
func (a *Activities) readExecution(ctx context.Context, run, exec string, rec *recorded) (string, error) {
	dc := converter.GetDefaultDataConverter()
	scheduled := map[int64]*historypb.ActivityTaskScheduledEventAttributes{}
	it := a.Forks.GetWorkflowHistory(ctx, run, exec, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return "", fmt.Errorf("read the history of run %s: %w", run, err)
		}
		switch {
		case e.GetActivityTaskScheduledEventAttributes() != nil:
			scheduled[e.GetEventId()] = e.GetActivityTaskScheduledEventAttributes()
		case e.GetActivityTaskCompletedEventAttributes() != nil:
			at := e.GetActivityTaskCompletedEventAttributes()
			rec.completed(dc, scheduled[at.GetScheduledEventId()], at)
		case e.GetActivityTaskFailedEventAttributes() != nil:
			at := e.GetActivityTaskFailedEventAttributes()
			rec.failed(dc, scheduled[at.GetScheduledEventId()], at.GetFailure().GetMessage())
		case e.GetWorkflowExecutionContinuedAsNewEventAttributes() != nil:
			return e.GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId(), nil
		}
	}
	return "", nil
}

// completed records a model answer of the run's own loop, or a tool
// result.
func (rec *recorded) completed(dc converter.DataConverter, s *historypb.ActivityTaskScheduledEventAttributes, at *historypb.ActivityTaskCompletedEventAttributes) {
	switch s.GetActivityType().GetName() {
	case "ChatCompletion":
		var req contract.ModelRequest
		var resp contract.ModelResponse
		if dc.FromPayloads(s.GetInput(), &req) != nil || dc.FromPayloads(at.GetResult(), &resp) != nil {
			return
		}
		m := ownTurn.FindStringSubmatch(req.Call)
		if m == nil {
			return
		}
		n, _ := strconv.Atoi(m[1])
		rec.turns = append(rec.turns, recordedTurn{n: n, msg: resp.Message})
	case "CallTool":
		var req contract.ToolRequest
		var resp contract.ToolResponse
		if dc.FromPayloads(s.GetInput(), &req) != nil || dc.FromPayloads(at.GetResult(), &resp) != nil {
			return
		}
		rec.results[req.Call.ID] = recordedResult{seq: req.Seq, msg: longhaul.Message{
			Role: longhaul.RoleTool, ToolCallID: req.Call.ID, Name: req.Call.Name, Content: resp.Content, Ref: resp.Ref,
		}}
	}
}

// failed records a tool call that failed as the loop gave it to the
// model: an error message.
func (rec *recorded) failed(dc converter.DataConverter, s *historypb.ActivityTaskScheduledEventAttributes, message string) {
	if s.GetActivityType().GetName() != "CallTool" {
		return
	}
	var req contract.ToolRequest
	if dc.FromPayloads(s.GetInput(), &req) != nil {
		return
	}
	rec.results[req.Call.ID] = recordedResult{seq: req.Seq, msg: longhaul.Message{
		Role: longhaul.RoleTool, ToolCallID: req.Call.ID, Name: req.Call.Name, Content: "error: " + message,
	}}
}
