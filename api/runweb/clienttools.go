package runweb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"github.com/longhaul-dev/longhaul/skills"
)

// The APIs' side of client tools (see workflows/clienttools.go), shared by
// Chat Completions and Responses: a request's tools are checked against
// the agent's, and the client's next request, carrying the results,
// continues the same run.

// PickUpTimeout bounds reading a run's log up to where a previous response
// stopped.
const PickUpTimeout = 30 * time.Second

// Agents finds the agent a request names, and the tools it has, for the
// caller.
type Agents struct {
	Catalog *skills.Catalog
}

// CheckClientTools refuses a request (of either API) whose tools clash
// with the agent's own by name, or whose tool_choice (in the Chat
// Completions form) names a tool nobody offers. path locates tool i in the
// request.
func (a *Agents) CheckClientTools(agent *skills.Agent, user longhaul.User, specs []longhaul.ToolSpec, choice json.RawMessage, path string) error {
	if len(specs) == 0 && len(choice) == 0 {
		return nil
	}
	own := a.visibleTools(agent, user)
	for i, t := range specs {
		if slices.Contains(own, t.Name) {
			return web.BadRequest(fmt.Sprintf(path+".name: %q is a tool of agent %s already; rename the client's tool", i, t.Name, agent.ID))
		}
	}
	name, _ := wire.ChoiceName(choice)
	if name == "" {
		return nil
	}
	if !slices.Contains(own, name) && !slices.ContainsFunc(specs, func(t longhaul.ToolSpec) bool { return t.Name == name }) {
		return web.BadRequest(fmt.Sprintf("tool_choice: no tool %q is offered", name))
	}
	return nil
}

// AgentFor is the agent a request names as its model. An agent whose
// allow: does not admit user is not found, in the very words of an unknown
// one: a user learns nothing of the agents they may not use.
func (a *Agents) AgentFor(model string, user longhaul.User) (*skills.Agent, error) {
	agent, ok := a.Catalog.AgentFor(model, user)
	if !ok {
		return nil, Refused(runs.NoAgent(model))
	}
	return agent, nil
}

// AgentID resolves the agent a run's request names for user: the runs
// gate's resolver (runs.Agents), over the same catalog.
func (a *Agents) AgentID(name string, user longhaul.User) (string, bool) {
	agent, ok := a.Catalog.AgentFor(name, user)
	if !ok {
		return "", false
	}
	return agent.ID, true
}

// visibleTools are the tools of agent that user may see, as far as the
// catalog knows: those of the skills user may use, less the HTTP tools
// whose own allow: refuses user. (MCP tools' rules are the worker's; it
// filters them in ResolveAgent and CallTool.)
func (a *Agents) visibleTools(agent *skills.Agent, user longhaul.User) []string {
	names := a.Catalog.AgentToolsFor(agent, user)
	for _, h := range a.Catalog.HTTPTools() {
		if !h.Allow.Allows(user) {
			names = slices.DeleteFunc(names, func(n string) bool { return n == h.Name })
		}
	}
	return names
}

// ContinueClient delivers the results of client tool calls to run, which
// waits for them, for user, and returns where the response goes on: after
// the client_tool_calls event at offset at. A retried request finds the
// results taken and attaches the same way. took is false when the run
// stopped waiting without them (its wait timed out): the conversation then
// starts a new run.
func (r *Runs) ContinueClient(ctx context.Context, user longhaul.User, run string, results []contract.ToolResult) (at int64, took bool, err error) {
	if _, err := r.ReadState(ctx, run, user.Key()); err != nil {
		return 0, false, err
	}
	at, err = r.clientCallsAt(ctx, run, results[0].ToolCallID)
	if err != nil {
		return 0, false, err
	}
	_, err = r.DeliverAs(ctx, run, resultsUpdateID(results), contract.InputRequest{ToolResults: results})
	switch {
	case err == nil:
	case web.HasStatus(err, http.StatusConflict):
		took, terr := r.tookResults(ctx, run, at)
		if terr != nil {
			return 0, false, terr
		}
		if !took {
			r.Logger().Info("the run no longer waits for the client's tool results; a new run takes the conversation", "run", run)
			return 0, false, nil
		}
	case web.HasStatus(err, http.StatusNotFound):
		// Closed: it ended waiting (or its results arrived before).
		took, terr := r.tookResults(ctx, run, at)
		if terr != nil || !took {
			return 0, false, terr
		}
	default:
		return 0, false, err
	}
	return at, true, nil
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
func (r *Runs) clientCallsAt(ctx context.Context, run, id string) (int64, error) {
	var at int64
	found, err := r.scanLog(ctx, run, 0, func(e longhaul.Event) bool {
		var d longhaul.ClientToolCallsData
		if e.Type == longhaul.EventClientToolCalls && e.Decode(&d) == nil &&
			slices.ContainsFunc(d.Calls, func(c longhaul.ToolCall) bool { return c.ID == id }) {
			at = e.Offset
			return true
		}
		return false
	})
	if err == nil && !found {
		err = web.BadRequest("tool_call_id " + id + ": run " + run + " made no such call")
	}
	return at, err
}

// tookResults reports whether run went on after its client_tool_calls
// event at offset at, rather than ending there unanswered.
func (r *Runs) tookResults(ctx context.Context, run string, at int64) (bool, error) {
	took := false
	_, err := r.scanLog(ctx, run, at, func(e longhaul.Event) bool {
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
func (r *Runs) scanLog(ctx context.Context, run string, after int64, visit func(longhaul.Event) bool) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, PickUpTimeout)
	defer cancel()
	f := r.Service.Follow(run)
	defer f.Release()
	for {
		events, done, err := f.Next(ctx, after)
		if err != nil {
			return false, web.Unavailable("cannot read run " + run + ": " + err.Error())
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
