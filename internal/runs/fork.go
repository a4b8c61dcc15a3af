package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/client"
)

// The memo fields of a fork (see contract.Fork).
const (
	// MemoForkedFrom holds the run a fork was forked from, and MemoForkAt
	// the point.
	MemoForkedFrom = "forked_from"
	MemoForkAt     = "fork_at"
)

// ForkAt is a fork point as a client names it: an event offset, or a
// name (contract.ForkStart, "end", a plan step, a tool call id); neither
// is the run's latest point.
type ForkAt struct {
	Offset *int64
	Name   string
}

// ForkEnd names the run's latest point (as no point at all does).
const ForkEnd = "end"

// ErrForkPoint is a fork point the run does not have; the error's message
// lists the points it has.
var ErrForkPoint = errors.New("no such fork point")

// ForkPoint decides, once, the point of a fork of a run whose state is st
// and whose event log is log (what one read of the run answers,
// contract.ForkSource): the fork's At with its Step or Call, and what the
// fork reuses (State): how the run went and, at a step, the run's plans
// cut there (contract.ForkPlans), so the fork's workflow reads no state
// again. A plan step is a point of an agentic run once every step it needs
// finished; a tool call of a run's own tool loop once its result is in the
// log. An offset, and "end", are the latest such point at or before it.
func ForkPoint(st contract.RunState, log []longhaul.Event, at ForkAt) (contract.Fork, error) {
	f, err := forkPoint(st, log, at)
	if err == nil && f.Call != "" {
		f.State = &contract.ForkState{Mode: st.Mode, Skill: st.Skill}
	}
	return f, err
}

func forkPoint(st contract.RunState, log []longhaul.Event, at ForkAt) (contract.Fork, error) {
	if at.Offset != nil {
		return pointAt(st, log, *at.Offset), nil
	}
	switch name := strings.TrimSpace(at.Name); {
	case name == "" || name == ForkEnd:
		return pointAt(st, log, lastOffset(log)), nil
	case name == contract.ForkStart:
		return contract.Fork{At: contract.ForkStart}, nil
	case st.Mode == contract.ModeAgentic && contract.ForkStepID(name) != "":
		if f, ok := stepFork(st, contract.ForkStepID(name)); ok {
			return f, nil
		}
	case st.Mode != contract.ModeAgentic:
		for _, c := range finishedCalls(log) {
			if c == name {
				return contract.Fork{At: name, Call: name}, nil
			}
		}
	}
	return contract.Fork{}, fmt.Errorf("%w: %q; the run's points are %s", ErrForkPoint, at.Name, strings.Join(forkPoints(st, log), ", "))
}

// ParseForkAt reads a request's at: a JSON number (an event offset) or
// string; absent or null is the latest point.
func ParseForkAt(raw json.RawMessage) (ForkAt, error) {
	var at ForkAt
	if len(raw) == 0 || string(raw) == "null" {
		return at, nil
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err == nil {
		if n < 0 {
			return at, errors.New("at: an event offset is 0 or more")
		}
		at.Offset = &n
		return at, nil
	}
	if err := json.Unmarshal(raw, &at.Name); err != nil || strings.TrimSpace(at.Name) == "" {
		return at, errors.New(`at: an event offset (a whole number), "start", "end", a plan step ("step-3") or a tool call id`)
	}
	return at, nil
}

// forkPoints lists a run's points, for the error that names them.
func forkPoints(st contract.RunState, log []longhaul.Event) []string {
	points := []string{contract.ForkStart}
	if st.Mode == contract.ModeAgentic {
		seen := map[string]bool{}
		for _, p := range st.Plans {
			for _, s := range p.Steps {
				if _, _, ok := contract.ForkPlans(st.Plans, st.Reviews, s.ID); ok && !seen[s.ID] {
					seen[s.ID] = true
					points = append(points, contract.ForkStepPrefix+s.ID)
				}
			}
		}
	} else {
		points = append(points, finishedCalls(log)...)
	}
	return append(points, ForkEnd, fmt.Sprintf("an event offset from 0 to %d", lastOffset(log)))
}

func lastOffset(log []longhaul.Event) int64 {
	if len(log) == 0 {
		return 0
	}
	return log[len(log)-1].Offset
}

// finishedCalls are the tool calls whose result is in the log, in order.
func finishedCalls(log []longhaul.Event) []string {
	var out []string
	for _, e := range log {
		if e.Type != longhaul.EventToolOutput {
			continue
		}
		var d longhaul.ToolOutputData
		if e.Decode(&d) == nil && d.ToolCallID != "" {
			out = append(out, d.ToolCallID)
		}
	}
	return out
}

// pointAt is the latest point of the run at or before offset n.
func pointAt(st contract.RunState, log []longhaul.Event, n int64) contract.Fork {
	if st.Mode == contract.ModeAgentic {
		return stepAt(st, log, n)
	}
	return callAt(log, n)
}

// callAt is the last tool call whose result came by offset n while no
// other call was running: the end of a turn's tool calls.
func callAt(log []longhaul.Event, n int64) contract.Fork {
	point := contract.Fork{At: contract.ForkStart}
	running := map[string]bool{}
	for _, e := range log {
		if e.Offset > n {
			break
		}
		switch e.Type {
		case longhaul.EventToolStart:
			var d longhaul.ToolStartData
			if e.Decode(&d) == nil {
				running[d.ToolCallID] = true
			}
		case longhaul.EventToolOutput:
			var d longhaul.ToolOutputData
			if e.Decode(&d) == nil {
				delete(running, d.ToolCallID)
				if len(running) == 0 && d.ToolCallID != "" {
					point = contract.Fork{At: d.ToolCallID, Call: d.ToolCallID}
				}
			}
		}
	}
	return point
}

// stepAt is the first step of the plan revision active at offset n that
// had no result by then (the plan's completion step when all had): what a
// fork at n runs anew.
func stepAt(st contract.RunState, log []longhaul.Event, n int64) contract.Fork {
	rev := 0
	finished := map[string]bool{}
	for _, e := range log {
		if e.Offset > n {
			break
		}
		switch e.Type {
		case longhaul.EventPlan:
			var p longhaul.Plan
			if e.Decode(&p) == nil {
				rev = p.Revision
			}
		case longhaul.EventStepResult:
			var d longhaul.StepResultData
			if e.Decode(&d) == nil {
				finished[d.StepID] = true
			}
		}
	}
	for _, p := range st.Plans {
		if p.Revision != rev || len(p.Steps) == 0 {
			continue
		}
		step := p.Steps[len(p.Steps)-1].ID
		for _, s := range p.Steps {
			if !finished[s.ID] {
				step = s.ID
				break
			}
		}
		if f, ok := stepFork(st, step); ok {
			return f
		}
	}
	return contract.Fork{At: contract.ForkStart}
}

// stepFork is the fork of a run whose state is st at plan step id, with
// the plans it reuses; false when id is no point of the run.
func stepFork(st contract.RunState, id string) (contract.Fork, bool) {
	plans, reviews, ok := contract.ForkPlans(st.Plans, st.Reviews, id)
	if !ok {
		return contract.Fork{}, false
	}
	return contract.Fork{At: contract.ForkStepPrefix + id, Step: id, State: &contract.ForkState{
		Mode: st.Mode, Skill: st.Skill, Plans: plans, Reviews: reviews, StepSeq: contract.ForkStepSeq(plans),
	}}, true
}

// forkMemo adds a fork's lineage to memo, when f is set.
func forkMemo(memo map[string]string, f *contract.Fork) map[string]string {
	if f != nil {
		memo[MemoForkedFrom], memo[MemoForkAt] = f.Run, f.At
	}
	return memo
}

// forkOptions marks the start of r, a fork, for the Temporal UI: the
// run's details name the old run, with a link to it (Start sets the
// search attribute the old run finds it by). (The SDK sets a start's
// Links only for Nexus operations, go.temporal.io/sdk v1.50.0
// internal/client.go:1315-1316 and 1945-1951, so the link is Markdown.)
func forkOptions(opts *client.StartWorkflowOptions, r Start, namespace string) {
	f := r.Input.Fork
	opts.StaticDetails = fmt.Sprintf("Forked from [%s](/namespaces/%s/workflows/%s) at `%s`", f.Run, url.PathEscape(namespace), url.PathEscape(f.Run), f.At)
	if f.Model != "" {
		opts.StaticDetails += fmt.Sprintf(", every model call on `%s`", f.Model)
	}
}
