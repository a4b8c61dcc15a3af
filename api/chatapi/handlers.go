// Package chatapi serves OpenAI's Chat Completions API (POST
// /v1/chat/completions), the API Open WebUI and the OpenAI SDKs talk to. A
// request starts (or attaches to) a chat turn's run and answers with its
// result, or streams it as OpenAI chunks (render.go); a chat message that
// answers a run waiting for a person is delivered to it (approval.go); the
// results of a client's tool calls continue the run that made them; the
// file parts of a chat are stored and searched as the documents package's
// files are (docs_chat.go). The package reaches runs through the runs
// service and its Gate only (internal/runs), so its tests serve it from
// the fake (internal/testing/runsfake); it imports no Temporal client. The
// server (package api) builds a Handlers and registers its methods in its
// routes table.
package chatapi

import (
	"context"
	"time"

	"github.com/longhaul-dev/longhaul/api/documents"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/runs"
)

// Handlers serves the chat completions route.
type Handlers struct {
	// Runs reads runs for their owner and hands them a person's input or
	// a client's tool results.
	Runs *runweb.Runs
	// Gate starts runs, queues their starts and bounds each principal's
	// streams.
	Gate *runs.Gate
	// Agents finds the agent a request names, and its tools.
	Agents *runweb.Agents
	// Streams writes the chat streams, and ends them when the server shuts
	// down.
	Streams *sse.Streams
	// Docs stores a chat's file parts, attaches them to the chat's vector
	// store and ingests them, as uploads are.
	Docs *documents.Handlers
	// Headers names the headers end users, chats and messages are read
	// from (Open WebUI's, or what the operator renamed them to).
	Headers identity.Headers
	// Images says which image URLs a request's messages may send.
	Images runweb.ImagePolicy
	// MCPApproval reports whether an MCP tool (by its engine name) needs a
	// person's approval; nil means none.
	MCPApproval func(tool string) bool
	// RequestTimeout bounds the wait for an answer that is not streamed.
	RequestTimeout time.Duration
	// FirstText, when set, is told when a streamed chat sends its first
	// text, with when the request came (the time-to-first-token metric).
	FirstText func(model string, start time.Time)
	// Multitask is the chats' multitask strategy (LONGHAUL_CHAT_MULTITASK):
	// what a chat's new message does while a run of the chat still goes;
	// empty is runs.DefaultChatMultitask.
	Multitask string
}

func (h *Handlers) firstText(model string, start time.Time) {
	if h.FirstText != nil {
		h.FirstText(model, start)
	}
}

// admit waits for the request's turn to start a run (see runs.Admission)
// and returns what lets the next one go; calling it again does nothing.
func (h *Handlers) admit(ctx context.Context) (func(), error) {
	release, err := h.Gate.Admit(ctx)
	return release, runweb.Refused(err)
}

// takeStream takes one of the principal's streams, or says no: the caller
// must call the release it returns when the stream ends.
func (h *Handlers) takeStream(principal string) (func(), error) {
	return runweb.Stream(h.Gate, principal)
}
