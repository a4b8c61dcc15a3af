// Package tools defines what the engine needs to know about a tool the
// model can call: its name, description and argument schema for the model,
// a Call method that runs inside a durable activity, and a Registry that
// validates arguments before anything runs. It also holds the built-in
// tools current_time and web_fetch, and the HTTP tools that skill files
// declare as data.
package tools

import (
	"context"
	"encoding/json"
	"errors"
)

// ErrPermanent is wrapped by errors that retrying the same call cannot fix,
// such as an HTTP tool's 4xx answer other than 429 or a redirect to another
// host. The activity layer turns them into non-retryable errors; any other
// error from Call may be retried.
var ErrPermanent = errors.New("permanent failure")

// Tool is something the model can call. Implementations must be safe for
// concurrent use: the engine may run several calls at once.
type Tool interface {
	// Name is the function name shown to the model. It must match
	// ^[a-zA-Z0-9_-]{1,64}$ (the OpenAI function name rule).
	Name() string
	// Description tells the model what the tool does and when to use it.
	Description() string
	// Parameters is the JSON schema of the arguments object.
	Parameters() json.RawMessage
	// Call runs the tool. An error is reported to the model as the tool's
	// failure; errors wrapping ErrInvalidArguments mean the model should
	// fix its arguments.
	Call(ctx context.Context, call Call) (Result, error)
}

// Targeter is implemented by tools that can name what a call acts on (for
// example the host web_fetch would contact) before the call runs, so a user
// interface can summarise a pending call.
type Targeter interface {
	// Target returns a short name for what a call with args acts on, or ""
	// when args do not say.
	Target(args json.RawMessage) string
}

// Approver is implemented by tools a person may have to approve: an HTTP
// tool marked approval: required, an MCP tool whose server configuration
// requires approval.
type Approver interface {
	// RequiresApproval reports whether each call needs a person's approval.
	RequiresApproval() bool
}

// NeedsApproval reports whether every call of t needs a person's approval.
func NeedsApproval(t Tool) bool {
	a, ok := t.(Approver)
	return ok && a.RequiresApproval()
}

// Call is one invocation of a tool by the model.
type Call struct {
	// ID is the tool call id the model assigned.
	ID string
	// IdempotencyKey is stable across retries of the same call, also after
	// the run continued as new, and no two calls share it, so a tool with
	// side effects can avoid doing them twice.
	IdempotencyKey string
	// Arguments is the JSON arguments object the model sent.
	Arguments json.RawMessage
	// User is the key of the user the run acts for, and Chat the run's
	// chat id (empty outside a chat): set by the engine from the run,
	// never from the model's arguments. Tools that keep data per user (the
	// memory tools) scope it by them.
	User string
	Chat string
	// Run is the run's workflow id.
	Run string
	// VectorStores are the vector stores the run may search (the agent's
	// and the request's), set by the engine like User: what
	// document_search searches, as User.
	VectorStores []string
	// Progress, when not nil, receives human-readable progress and a
	// fraction between 0 and 1. It must be cheap to call.
	Progress func(message string, progress float64)
}

// report sends progress if the caller asked for it.
func (c Call) report(message string, progress float64) {
	if c.Progress != nil {
		c.Progress(message, progress)
	}
}

// Result is what a successful call returns.
type Result struct {
	// Content is the text given to the model.
	Content string
	// Truncated reports that Content was cut to fit a limit.
	Truncated bool
	// Target names what the call acted on, e.g. the host fetched, for
	// user interface summaries.
	Target string
	// Connect, when set, says the call did not run because the user has
	// not connected the account it needs (Content says so, with the
	// link): the server and the connect link.
	Connect *Connect
}

// Connect is an account a call needs its user to connect.
type Connect struct {
	Server, URL string
}
