package evals

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// Case is one case file: what the replay needs (contract.EvalCase) and
// where it came from.
type Case struct {
	contract.EvalCase
	// Run is the recorded run's id; Models the models its calls answered
	// with, in the order first used; Mode how it went ("agentic" when it
	// planned, else "chat").
	Run    string    `json:"run"`
	Models []string  `json:"models,omitempty"`
	Mode   string    `json:"mode"`
	At     time.Time `json:"recorded_at,omitzero"`
}

// ErrNotARun is a history that is not a finished AgentWorkflow's.
var ErrNotARun = errors.New("not a completed agent run")

// History reads a run's recorded history; client.Client is one.
type History interface {
	GetWorkflowHistory(ctx context.Context, workflowID string, runID string, isLongPoll bool, filterType enums.HistoryEventFilterType) client.HistoryEventIterator
}

// maxExecutions bounds the executions of a run ReadRun follows.
const maxExecutions = 1000

// ReadRun reads run's case from its history, every execution it continued
// as new into, from the first.
func ReadRun(ctx context.Context, h History, run string) (Case, error) {
	var events []*historypb.HistoryEvent
	exec := ""
	for range maxExecutions {
		it := h.GetWorkflowHistory(ctx, run, exec, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		next := ""
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				return Case{}, fmt.Errorf("read the history of run %s: %w", run, err)
			}
			if exec == "" && len(events) == 0 {
				// The latest execution answered first: start again at the first.
				if first := e.GetWorkflowExecutionStartedEventAttributes().GetFirstExecutionRunId(); first != "" {
					exec = first
					break
				}
			}
			events = append(events, e)
			if ca := e.GetWorkflowExecutionContinuedAsNewEventAttributes(); ca != nil {
				next = ca.GetNewExecutionRunId()
			}
		}
		if len(events) == 0 {
			if exec == "" {
				return Case{}, fmt.Errorf("run %s: %w (no history)", run, ErrNotARun)
			}
			continue
		}
		if next == "" {
			return Extract(run, events)
		}
		exec = next
	}
	return Case{}, fmt.Errorf("run %s continued as new more than %d times", run, maxExecutions)
}

// Extract reads a case from the events of run's executions, in order: the
// first execution's input, every tool call with its recorded result (a
// failed one as the "error: …" the model read), the last plan, the models
// and usage of the model calls, and the answer of the last execution.
func Extract(run string, events []*historypb.HistoryEvent) (Case, error) {
	x := extraction{dc: converter.GetDefaultDataConverter(), scheduled: map[int64]*historypb.ActivityTaskScheduledEventAttributes{}}
	x.c.Run, x.c.ID, x.c.Mode = run, CaseID(run), contract.ModeChat
	for _, e := range events {
		if err := x.add(e); err != nil {
			return Case{}, fmt.Errorf("run %s: %w", run, err)
		}
	}
	if !x.started || !x.completed {
		return Case{}, fmt.Errorf("run %s: %w", run, ErrNotARun)
	}
	return x.c, nil
}

type extraction struct {
	dc                 converter.DataConverter
	c                  Case
	scheduled          map[int64]*historypb.ActivityTaskScheduledEventAttributes
	started, completed bool
	// usage sums the model calls' usage, for a run whose result has none.
	usage longhaul.Usage
}

func (x *extraction) add(e *historypb.HistoryEvent) error {
	switch {
	case e.GetWorkflowExecutionStartedEventAttributes() != nil:
		return x.start(e)
	case e.GetActivityTaskScheduledEventAttributes() != nil:
		// A new execution numbers its events from 1 again.
		x.scheduled[e.GetEventId()] = e.GetActivityTaskScheduledEventAttributes()
	case e.GetActivityTaskCompletedEventAttributes() != nil:
		at := e.GetActivityTaskCompletedEventAttributes()
		x.activity(x.scheduled[at.GetScheduledEventId()], at)
	case e.GetActivityTaskFailedEventAttributes() != nil:
		at := e.GetActivityTaskFailedEventAttributes()
		x.failedTool(x.scheduled[at.GetScheduledEventId()], at.GetFailure().GetMessage())
	case e.GetWorkflowExecutionCompletedEventAttributes() != nil:
		var res contract.AgentResult
		if err := x.dc.FromPayloads(e.GetWorkflowExecutionCompletedEventAttributes().GetResult(), &res); err != nil {
			return fmt.Errorf("decode the result: %w", err)
		}
		x.c.Answer, x.c.Usage, x.completed = res.Content, res.Usage, true
		if x.c.Usage == (longhaul.Usage{}) {
			x.c.Usage = x.usage
		}
	}
	return nil
}

func (x *extraction) start(e *historypb.HistoryEvent) error {
	if x.started {
		return nil
	}
	st := e.GetWorkflowExecutionStartedEventAttributes()
	if st.GetWorkflowType().GetName() != contract.AgentWorkflowName {
		return fmt.Errorf("%w: a %s", ErrNotARun, st.GetWorkflowType().GetName())
	}
	var in contract.AgentInput
	if err := x.dc.FromPayloads(st.GetInput(), &in); err != nil {
		return fmt.Errorf("decode the input: %w", err)
	}
	x.c.Agent, x.c.Messages, x.started = in.Agent, in.Messages, true
	if t := e.GetEventTime(); t != nil {
		x.c.At = t.AsTime().UTC()
	}
	return nil
}

// activity records a tool call's result, a model call's model and usage,
// or a plan.
func (x *extraction) activity(s *historypb.ActivityTaskScheduledEventAttributes, at *historypb.ActivityTaskCompletedEventAttributes) {
	switch s.GetActivityType().GetName() {
	case "CallTool":
		var req contract.ToolRequest
		var resp contract.ToolResponse
		if x.dc.FromPayloads(s.GetInput(), &req) != nil || x.dc.FromPayloads(at.GetResult(), &resp) != nil {
			return
		}
		x.c.Calls = append(x.c.Calls, contract.PinnedCall{Name: req.Call.Name, Arguments: contract.CanonicalJSON(req.Call.Arguments), Content: resp.Content})
	case "ChatCompletion":
		var resp contract.ModelResponse
		if x.dc.FromPayloads(at.GetResult(), &resp) != nil {
			return
		}
		x.usage = x.usage.Add(resp.Usage)
		x.model(resp.Model)
	case "Plan":
		var resp contract.PlanResponse
		if x.dc.FromPayloads(at.GetResult(), &resp) != nil {
			return
		}
		x.c.Mode, x.c.Plan = contract.ModeAgentic, nil
		for _, s := range resp.Steps {
			x.c.Plan = append(x.c.Plan, s.Title)
		}
	}
}

func (x *extraction) model(m string) {
	if m == "" {
		return
	}
	for _, have := range x.c.Models {
		if have == m {
			return
		}
	}
	x.c.Models = append(x.c.Models, m)
}

// failedTool records a tool call that failed as the model read it.
func (x *extraction) failedTool(s *historypb.ActivityTaskScheduledEventAttributes, message string) {
	if s.GetActivityType().GetName() != "CallTool" {
		return
	}
	var req contract.ToolRequest
	if x.dc.FromPayloads(s.GetInput(), &req) != nil {
		return
	}
	x.c.Calls = append(x.c.Calls, contract.PinnedCall{Name: req.Call.Name, Arguments: contract.CanonicalJSON(req.Call.Arguments), Content: "error: " + message, Error: true})
}

var unsafeID = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// CaseID is the case id (and file name) of run: its id with what a file
// name should not hold replaced.
func CaseID(run string) string {
	return unsafeID.ReplaceAllString(run, "_")
}
