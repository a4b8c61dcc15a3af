package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"github.com/longhaul-dev/longhaul/skills"
)

// This file is the API's side of client tools (see workflows/clienttools.go)
// and of content parts: a request's tools are checked against the agent's,
// the response that reaches the client's tool calls hands them over as
// OpenAI does, and the client's next request, carrying the results,
// continues the same run; big inline images go to the claim-check store.

// checkClientTools refuses a request (of either API) whose tools clash
// with the agent's own by name, or whose tool_choice (in the Chat
// Completions form) names a tool nobody offers. path locates tool i in the
// request.
func (s *Server) checkClientTools(agent *skills.Agent, user longhaul.User, specs []longhaul.ToolSpec, choice json.RawMessage, path string) error {
	if len(specs) == 0 && len(choice) == 0 {
		return nil
	}
	own := s.visibleTools(agent, user)
	for i, t := range specs {
		if slices.Contains(own, t.Name) {
			return errBadRequest(fmt.Sprintf(path+".name: %q is a tool of agent %s already; rename the client's tool", i, t.Name, agent.ID))
		}
	}
	name, _ := wire.ChoiceName(choice)
	if name == "" {
		return nil
	}
	if !slices.Contains(own, name) && !slices.ContainsFunc(specs, func(t longhaul.ToolSpec) bool { return t.Name == name }) {
		return errBadRequest(fmt.Sprintf("tool_choice: no tool %q is offered", name))
	}
	return nil
}

// agentFor is the agent a request names as its model. An agent whose
// allow: does not admit user is not found, in the very words of an unknown
// one: a user learns nothing of the agents they may not use.
func (s *Server) agentFor(model string, user longhaul.User) (*skills.Agent, error) {
	agent, ok := s.catalog.AgentFor(model, user)
	if !ok {
		return nil, errModelNotFound(fmt.Sprintf("the model %q does not exist; GET /v1/models lists the agents", model))
	}
	return agent, nil
}

// visibleTools are the tools of agent that user may see, as far as the
// catalog knows: those of the skills user may use, less the HTTP tools
// whose own allow: refuses user. (MCP tools' rules are the worker's; it
// filters them in ResolveAgent and CallTool.)
func (s *Server) visibleTools(agent *skills.Agent, user longhaul.User) []string {
	names := s.catalog.AgentToolsFor(agent, user)
	for _, h := range s.catalog.HTTPTools() {
		if !h.Allow.Allows(user) {
			names = slices.DeleteFunc(names, func(n string) bool { return n == h.Name })
		}
	}
	return names
}

// continueClient delivers the results of client tool calls to run, which
// waits for them, and returns where the response goes on: after the
// client_tool_calls event. A retried request finds the results taken and
// attaches the same way. nil means the run stopped waiting without them
// (its wait timed out): the conversation then starts a new run.
func (s *Server) continueClient(ctx context.Context, in contract.AgentInput, run string, results []contract.ToolResult) (*resumeAt, error) {
	if _, err := s.runsWeb.ReadState(ctx, run, in.User.Key()); err != nil {
		return nil, err
	}
	at, err := s.clientCallsAt(ctx, run, results[0].ToolCallID)
	if err != nil {
		return nil, err
	}
	_, err = s.runsWeb.DeliverAs(ctx, run, resultsUpdateID(results), contract.InputRequest{ToolResults: results})
	var ae *apiError
	switch {
	case err == nil:
	case errors.As(err, &ae) && ae.Status == http.StatusConflict:
		took, terr := s.tookResults(ctx, run, at)
		if terr != nil {
			return nil, terr
		}
		if !took {
			s.log.Info("the run no longer waits for the client's tool results; a new run takes the conversation", "run", run)
			return nil, nil
		}
	case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
		// Closed: it ended waiting (or its results arrived before).
		took, terr := s.tookResults(ctx, run, at)
		if terr != nil || !took {
			return nil, terr
		}
	default:
		return nil, err
	}
	return &resumeAt{after: at}, nil
}

// resultsUpdateID names the update that delivers results, so that a
// retried request's update is the same one and Temporal answers it from
// the first.
func resultsUpdateID(results []contract.ToolResult) string {
	h := sha256.New()
	for _, r := range results {
		h.Write([]byte(r.ToolCallID))
		h.Write([]byte{0})
	}
	return "tool-results-" + hex.EncodeToString(h.Sum(nil)[:12])
}

// clientCallsAt is the offset of the client_tool_calls event of run that
// holds the call with id.
func (s *Server) clientCallsAt(ctx context.Context, run, id string) (int64, error) {
	var at int64
	found, err := s.scanLog(ctx, run, 0, func(e longhaul.Event) bool {
		var d longhaul.ClientToolCallsData
		if e.Type == longhaul.EventClientToolCalls && e.Decode(&d) == nil &&
			slices.ContainsFunc(d.Calls, func(c longhaul.ToolCall) bool { return c.ID == id }) {
			at = e.Offset
			return true
		}
		return false
	})
	if err == nil && !found {
		err = errBadRequest("tool_call_id " + id + ": run " + run + " made no such call")
	}
	return at, err
}

// tookResults reports whether run went on after its client_tool_calls
// event at offset at, rather than ending there unanswered.
func (s *Server) tookResults(ctx context.Context, run string, at int64) (bool, error) {
	took := false
	_, err := s.scanLog(ctx, run, at, func(e longhaul.Event) bool {
		var d longhaul.DoneData
		switch e.Type {
		case longhaul.EventUsage:
			return false
		case longhaul.EventDone:
			took = e.Decode(&d) == nil && d.FinishReason != "tool_calls"
		default:
			took = true
		}
		return true
	})
	return took, err
}

// scanLog shows run's durable events after offset after to visit, as they
// come, until visit returns true (scanLog then does too) or the log ends.
func (s *Server) scanLog(ctx context.Context, run string, after int64, visit func(longhaul.Event) bool) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, pickUpTimeout)
	defer cancel()
	f := s.runs.Follow(run)
	defer f.Release()
	for {
		events, done, err := f.Next(ctx, after)
		if err != nil {
			return false, errUnavailable("cannot read run " + run + ": " + err.Error())
		}
		for _, e := range events {
			after = e.Offset
			if visit(e) {
				return true, nil
			}
		}
		if done {
			return false, nil
		}
	}
}

// wireCalls are tool calls in OpenAI's wire form; indexed, for stream
// deltas.
func wireCalls(calls []longhaul.ToolCall, indexed bool) []wire.WireToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]wire.WireToolCall, len(calls))
	for i, c := range calls {
		w := wire.WireToolCall{ID: c.ID, Type: "function"}
		if indexed {
			w.Index = &i
		}
		w.Function.Name, w.Function.Arguments = c.Name, c.Arguments
		out[i] = w
	}
	return out
}
