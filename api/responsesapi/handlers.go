// Package responsesapi serves OpenAI's Responses API (/v1/responses:
// create a response, read it or stream it again, cancel it, delete it,
// list its input items). A response is a run, or the segment of a run
// after it stopped for the client's function calls, and everything it
// shows is rebuilt from the run's durable state, so any API process
// answers for it. The package reaches runs through the runs service and
// its Gate only (internal/runs), so its tests serve it from the fake
// (internal/testing/runsfake); it imports no Temporal client. The server
// (package api) builds a Handlers and registers its methods in its routes
// table. Its wire types and stream renderer are in internal/wire.
package responsesapi

import (
	"context"
	"time"

	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// VectorStores checks the vector stores a file_search tool names: they
// must be the caller's.
type VectorStores interface {
	CheckVectorStores(ctx context.Context, owner string, ids []string) error
}

// Handlers serves the Responses API's routes.
type Handlers struct {
	// Runs reads runs for their owner and hands them the client's results.
	Runs *runweb.Runs
	// Gate starts runs and bounds each principal's streams.
	Gate *runs.Gate
	// Agents finds the agent a request names, and its tools.
	Agents *runweb.Agents
	// Streams writes the event streams, and ends them when the server
	// shuts down.
	Streams *sse.Streams
	// Blobs keeps the runs' stored outputs and the marks of deleted runs;
	// nil keeps neither.
	Blobs store.Store
	// VectorStores checks a file_search tool's stores, and Ranking its
	// ranker.
	VectorStores VectorStores
	Ranking      wire.RankingCheck
	// Images says which image URLs a request's input may send.
	Images runweb.ImagePolicy
	// Webhooks makes a background response's own webhook; nil refuses
	// one.
	Webhooks runweb.Webhooks
	// RequestTimeout bounds the wait for a response that is neither
	// streamed nor in the background.
	RequestTimeout time.Duration
}
