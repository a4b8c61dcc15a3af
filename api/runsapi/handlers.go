// Package runsapi serves the native runs API, for long tasks that outlive
// a request: start a run (POST /v1/runs), read it, list a user's runs,
// follow its events, cancel it, answer it when it waits for a person, and
// read its stored outputs and audit trail. A run is an AgentWorkflow; its
// state comes from the workflow's state query, its events from its event
// log (the same feed the chat stream reads), its listing from the engine's
// visibility and Longhaul's search attributes. The package reaches runs
// through the runs service and its Gate only (internal/runs), so its
// tests serve it from the fake (internal/testing/runsfake); it imports no
// Temporal client. The server (package api) builds a Handlers and
// registers its methods in its routes table. Its wire types are in
// internal/wire (runs.go).
package runsapi

import (
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/store"
)

// Handlers serves the runs API's routes.
type Handlers struct {
	// Runs reads runs for their owner and hands them input.
	Runs *runweb.Runs
	// Gate starts runs and bounds each principal's streams.
	Gate *runs.Gate
	// Models says which models a fork may name.
	Models runweb.Models
	// Streams writes the event streams, and ends them when the server
	// shuts down.
	Streams *sse.Streams
	// Blobs keeps the stored tool outputs a run's events reference; nil
	// keeps none, and GET /v1/runs/{id}/outputs/{ref} answers 404.
	Blobs store.Store
	// Images says which image URLs a run's messages may send.
	Images runweb.ImagePolicy
	// Webhooks makes a run's own webhook; nil refuses one.
	Webhooks runweb.Webhooks
}

// runID is the run named in the path.
func runID(c *fiber.Ctx) (string, error) {
	id, err := url.PathUnescape(c.Params("id"))
	if err != nil || id == "" {
		return "", web.BadRequest("bad run id")
	}
	// fiber's strings point into the request's buffer, which is reused once
	// the handler returns; an event stream outlives it.
	return strings.Clone(id), nil
}
