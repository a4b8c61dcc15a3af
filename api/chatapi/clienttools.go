package chatapi

import (
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// The chat's side of client tools (see workflows/clienttools.go): the
// response that reaches the client's tool calls hands them over as OpenAI
// does. Checking a request's tools and continuing the run with the
// client's results is runweb's (clienttools.go), shared with Responses.

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
