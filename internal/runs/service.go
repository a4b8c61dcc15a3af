package runs

import (
	"context"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
)

// Service is everything the HTTP API does to runs. Temporal is the one
// that runs them; internal/testing/runsfake keeps them in memory for
// handler tests. Errors are of this package's kinds (errors.go).
type Service interface {
	// Start starts run r.ID, or attaches to the open run under it (a
	// repeated request); ErrAlreadyStarted when a closed run holds the id.
	Start(ctx context.Context, r Start) error
	// Describe is what the engine knows of run id without asking it.
	Describe(ctx context.Context, id string) (Info, error)
	// State is run id's state, from the workflow's state query.
	State(ctx context.Context, id string) (contract.RunState, error)
	// Events is a page of run id's event log after offset after.
	Events(ctx context.Context, id string, after int64) (contract.EventsPage, error)
	// Archived reads the archived stretches of run id's log that an events
	// page named, after offset after.
	Archived(ctx context.Context, id string, archives []contract.EventArchive, after int64) ([]longhaul.Event, error)
	// LastOffset is the offset of the last event of run id's log.
	LastOffset(ctx context.Context, id string) (int64, error)
	// Follow follows run id's log and live text; Release the follower.
	Follow(id string) Follower
	// Result waits, as long as ctx lets it, for run id's result; a failed
	// run answers a *Failure.
	Result(ctx context.Context, id string) (contract.AgentResult, error)
	// Input hands run id a person's input or a client's tool results and
	// waits until the run took it; updateID, when set, makes a repeat
	// answer the first outcome. A run that waits for nothing answers a
	// *Failure whose message says so (contract.ErrNotWaiting).
	Input(ctx context.Context, id, updateID string, in contract.InputRequest) (contract.InputResult, error)
	// Cancel asks run id to stop.
	Cancel(ctx context.Context, id string) error
	// Delete deletes run id, terminating it first if it still runs.
	Delete(ctx context.Context, id string) error
	// ForkSource is what a fork of run id is decided from, in one read of
	// the run (its fork query, contract.QueryFork).
	ForkSource(ctx context.Context, id string) (contract.ForkSource, error)
	// FirstInput is the input run id's first execution started with (the
	// one the client's request made), and when it started.
	FirstInput(ctx context.Context, id string) (contract.AgentInput, time.Time, error)
	// Inputs are the inputs delivered to run id's current execution, in
	// order.
	Inputs(ctx context.Context, id string) ([]contract.InputRequest, error)
	// List is a page of the runs f finds, open runs first; token
	// continues a previous page.
	List(ctx context.Context, f Filter, size int, token []byte) (Page, error)
	// Count counts the runs f finds.
	Count(ctx context.Context, f Filter) (int64, error)
	// Health reports whether the engine answers.
	Health(ctx context.Context) error
	// Pollers counts the workers seen polling for runs lately.
	Pollers(ctx context.Context) (int, error)
	Ingestions
	// Steer hands running run id a user message for its next model call
	// (contract.UpdateSteer); updateID, when set, makes a repeat answer the
	// first outcome. A run that takes none now answers a *Failure whose
	// message starts with contract.ErrNotSteerable.
	Steer(ctx context.Context, id, updateID string, req contract.SteerRequest) (contract.SteerResult, error)
}

// Ingestions starts, awaits and cancels the runs that read documents into
// vector stores.
type Ingestions interface {
	// StartIngest starts the ingestion run of in. A fresh attachment's run
	// replaces any run under its id (one of an earlier attachment,
	// detached since); otherwise a running run is kept, and a failed one
	// (or none) started again.
	StartIngest(ctx context.Context, in contract.IngestInput, fresh bool) error
	// AwaitIngest waits, as long as ctx lets it, for ingestion run run's
	// result.
	AwaitIngest(ctx context.Context, run string) (contract.IngestResult, error)
	// CancelIngest asks an ingestion run to stop; one that ended, or never
	// started, is no error.
	CancelIngest(ctx context.Context, workflowID string) error
}

// Follower reads one run's feed; *Feed is one.
type Follower interface {
	// Next waits for durable events after offset after (see Feed.Next).
	Next(ctx context.Context, after int64) ([]longhaul.Event, bool, error)
	// Join is the cursor of a follower that starts at c now.
	Join(c Cursor) Cursor
	// Read waits for what is after c (see Feed.Read).
	Read(ctx context.Context, c Cursor) ([]Item, bool, error)
	// Release stops following.
	Release()
}

var _ Follower = (*Feed)(nil)

// Start is a run to start.
type Start struct {
	ID    string
	Input contract.AgentInput
	// Owner is the principal the run is counted against (its user search
	// attribute).
	Owner string
	// Summary is the run's one-line summary, shown by the engine's UI.
	Summary string
	// Memo is what run listings show without describing each run (see the
	// Memo* keys).
	Memo map[string]string
	// Chat is the chat the run answers a message of (see ChatOf), set as
	// its chat search attribute from the start so the chat's next message
	// finds it; empty for none.
	Chat string
}

// The memo fields of a run.
const (
	// MemoSummary holds a run's summary, so a listing shows it without
	// describing each run.
	MemoSummary = "summary"
	// MemoOwner holds the principal a run was started for; the same key
	// as contract.MemoOwner, which workflows set on the runs they start.
	MemoOwner = contract.MemoOwner
	// MemoAsked holds the key of the conversation a chat turn's run
	// answers.
	MemoAsked = "asked"
	// MemoDoor holds the protocol a run was asked through (Request.Door).
	MemoDoor = "door"
)

// Info is what the engine knows of a run without asking it.
type Info struct {
	ID string
	// Type is the workflow type; contract.AgentWorkflowName for an agent
	// run.
	Type string
	// Status is the execution's status as the engine says it, lower case:
	// running, completed, failed, canceled, terminated, continued_as_new or
	// timed_out.
	Status string
	// Memo holds the run's string memo fields; a field that is not a
	// string is there, empty.
	Memo map[string]string
	// Attrs holds the run's keyword search attributes.
	Attrs           map[string]string
	Started, Closed *time.Time
}

// The execution statuses of Info.Status.
const (
	ExecRunning   = "running"
	ExecCompleted = "completed"
	ExecCanceled  = "canceled"
)

// Page is one page of a listing.
type Page struct {
	Runs []Info
	// Next continues the listing; empty on its last page.
	Next []byte
}
