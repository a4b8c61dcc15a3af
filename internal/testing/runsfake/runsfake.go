// Package runsfake is an in-memory runs.Service for handler tests: runs
// whose events, result and waits a test scripts, so the HTTP handlers are
// tested without Temporal, a worker or a model. A run started through the
// fake runs OnStart (when set) and otherwise stays running until the test
// finishes it (Run.Finish, Run.Fail) or cancels it.
package runsfake

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
)

// ErrUnreachable is what a runs service says when its engine does not
// answer (a StartErr).
var ErrUnreachable = errors.New("connection refused")

// Service keeps runs in memory.
type Service struct {
	// OnStart, when set, is called with each run Start creates, outside
	// the fake's lock: it scripts the run.
	OnStart func(*Run)
	// OnInput, when set, is called with each input a waiting run takes.
	OnInput func(*Run, contract.InputRequest)
	// StartErr, when set, is what Start answers.
	StartErr error
	// NoForkQuery makes ForkSource answer as a worker of a release
	// before the fork query does (runs.ErrUnknownQuery).
	NoForkQuery bool

	mu   sync.Mutex
	runs map[string]*Run
	// reads counts the reads of each run by what read it (see Reads).
	reads map[string]map[string]int
	// Ingested are the ingestion inputs StartIngest was given, in order.
	Ingested []contract.IngestInput
}

var _ runs.Service = (*Service)(nil)

// New returns a fake with no runs.
func New() *Service { return &Service{runs: map[string]*Run{}} }

// Run is one run of the fake.
type Run struct {
	ID      string
	Input   contract.AgentInput
	Owner   string
	Memo    map[string]string
	Started time.Time
	// ScheduledBy is the schedule that started the run (Schedules.Fire),
	// which the run's search attributes name as Temporal's do.
	ScheduledBy string
	// Chat is the chat the run answers a message of (runs.Start's).
	Chat string

	mu     sync.Mutex
	state  contract.RunState
	events []longhaul.Event
	closed *time.Time
	result contract.AgentResult
	err    error
	inputs []contract.InputRequest
	wake   chan struct{}
	// steers and refuseSteer: see Steer.
	steers      []string
	refuseSteer bool
}

// Add puts a running run of owner under id, as if started elsewhere.
func (s *Service) Add(id, owner string, in contract.AgentInput) *Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addLocked(id, owner, in)
}

func (s *Service) addLocked(id, owner string, in contract.AgentInput) *Run {
	r := &Run{ID: id, Input: in, Owner: owner, Memo: map[string]string{runs.MemoOwner: owner}, Started: time.Now(),
		state: contract.RunState{Agent: in.Agent, User: owner, Status: contract.StatusRunning}, wake: make(chan struct{})}
	s.runs[id] = r
	return r
}

// Len is the number of runs the fake holds.
func (s *Service) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.runs)
}

// Run is the run under id, or nil.
func (s *Service) Run(id string) *Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[id]
}

func (s *Service) get(id string) (*Run, error) {
	if r := s.Run(id); r != nil {
		return r, nil
	}
	return nil, fmt.Errorf("run %s: %w", id, runs.ErrNotFound)
}

// Emit appends an event of type typ with data to the run's log.
func (r *Run) Emit(typ longhaul.EventType, data any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emitLocked(typ, data)
}

func (r *Run) emitLocked(typ longhaul.EventType, data any) {
	e := longhaul.NewEvent(typ, time.Now(), data)
	e.Offset = int64(len(r.events) + 1)
	r.events = append(r.events, e)
	r.notifyLocked()
}

func (r *Run) notifyLocked() {
	close(r.wake)
	r.wake = make(chan struct{})
}

// Say appends the model's whole answer text as one content event.
func (r *Run) Say(call, text string) {
	r.Emit(longhaul.EventContent, longhaul.ContentData{Call: call, Text: text})
}

// Finish ends the run completed with res: its done event, its state and
// its result.
func (r *Run) Finish(res contract.AgentResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reason := res.FinishReason
	if reason == "" {
		reason = "stop"
	}
	r.emitLocked(longhaul.EventDone, longhaul.DoneData{Status: contract.StatusCompleted, FinishReason: reason})
	r.result = res
	r.closeLocked(contract.StatusCompleted, "")
}

// Answered scripts a run that says text and completes (a Service's
// OnStart, or a run Add put).
func Answered(text string) func(*Run) {
	return func(r *Run) {
		r.Say("c1", text)
		r.Finish(contract.AgentResult{Content: text, FinishReason: "stop"})
	}
}

// Fail ends the run failed with an error of type typ (longhaul.ErrType*).
func (r *Run) Fail(typ, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emitLocked(longhaul.EventError, longhaul.ErrorData{Code: typ, Message: msg})
	r.emitLocked(longhaul.EventDone, longhaul.DoneData{Status: contract.StatusFailed})
	r.err = runs.NewFailure(typ, msg)
	r.closeLocked(contract.StatusFailed, msg)
}

// SetState changes the run's state with change (a plan, a mode).
func (r *Run) SetState(change func(*contract.RunState)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	change(&r.state)
	r.notifyLocked()
}

// Wait marks the run waiting for a person: Input then takes input.
func (r *Run) Wait() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state.Status = contract.StatusWaiting
	r.notifyLocked()
}

func (r *Run) closeLocked(status, msg string) {
	now := time.Now()
	r.closed = &now
	r.state.Status, r.state.Error = status, msg
	r.notifyLocked()
}

// Inputs are the inputs the run took, in order.
func (r *Run) Inputs() []contract.InputRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]contract.InputRequest(nil), r.inputs...)
}

// Start implements runs.Service: a new run, or the open one under the id.
func (s *Service) Start(_ context.Context, st runs.Start) error {
	if s.StartErr != nil {
		return s.StartErr
	}
	// One of two concurrent starts of an id starts the run, as in the
	// engine: the check and the add are one step.
	s.mu.Lock()
	if r := s.runs[st.ID]; r != nil {
		s.mu.Unlock()
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.closed != nil {
			return fmt.Errorf("run %s: %w", st.ID, runs.ErrAlreadyStarted)
		}
		return nil
	}
	r := s.addLocked(st.ID, st.Owner, st.Input)
	r.Chat = st.Chat
	for k, v := range st.Memo {
		r.Memo[k] = v
	}
	s.mu.Unlock()
	if s.OnStart != nil {
		s.OnStart(r)
	}
	return nil
}

// Describe implements runs.Service.
func (s *Service) Describe(_ context.Context, id string) (runs.Info, error) {
	s.read(id, "Describe")
	r, err := s.get(id)
	if err != nil {
		return runs.Info{}, err
	}
	return r.info(), nil
}

func (r *Run) info() runs.Info {
	r.mu.Lock()
	defer r.mu.Unlock()
	started := r.Started
	info := runs.Info{ID: r.ID, Type: contract.AgentWorkflowName, Status: runs.ExecRunning, Memo: map[string]string{},
		Attrs: map[string]string{
			contract.SearchAttrUser.GetName():   r.Owner,
			contract.SearchAttrAgent.GetName():  r.Input.Agent,
			contract.SearchAttrStatus.GetName(): r.state.Status,
		},
		Started: &started, Closed: r.closed}
	for k, v := range r.Memo {
		info.Memo[k] = v
	}
	if r.ScheduledBy != "" {
		info.Attrs[runs.SearchAttrScheduledBy] = r.ScheduledBy
	}
	switch r.state.Status {
	case contract.StatusCompleted:
		info.Status = runs.ExecCompleted
	case contract.StatusCancelled:
		info.Status = runs.ExecCanceled
	case contract.StatusFailed:
		info.Status = "failed"
	}
	return info
}

// State implements runs.Service.
func (s *Service) State(_ context.Context, id string) (contract.RunState, error) {
	s.read(id, "State")
	r, err := s.get(id)
	if err != nil {
		return contract.RunState{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state, nil
}

// ForkSource implements runs.Service: the run's state, its input and its
// events that fork points are found by, as the workflow's fork query
// answers them.
func (s *Service) ForkSource(_ context.Context, id string) (contract.ForkSource, error) {
	r, err := s.get(id)
	if err != nil {
		return contract.ForkSource{}, err
	}
	s.read(id, "ForkSource")
	if s.NoForkQuery {
		return contract.ForkSource{}, fmt.Errorf("run %s: %w", id, runs.ErrUnknownQuery)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	in := r.Input
	src := contract.ForkSource{State: r.state, Request: &in, Last: int64(len(r.events)), Events: []longhaul.Event{}}
	for _, e := range r.events {
		if contract.IsForkEvent(e.Type) {
			src.Events = append(src.Events, e)
		}
	}
	return src, nil
}

// Reads counts the reads of run id so far by the method that read it
// (Describe, State, Events, FirstInput, ForkSource): each is one call to
// the engine about the run.
func (s *Service) Reads(id string) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.reads[id] {
		out[k] = v
	}
	return out
}

func (s *Service) read(id, method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reads == nil {
		s.reads = map[string]map[string]int{}
	}
	if s.reads[id] == nil {
		s.reads[id] = map[string]int{}
	}
	s.reads[id][method]++
}

// Events implements runs.Service.
func (s *Service) Events(_ context.Context, id string, after int64) (contract.EventsPage, error) {
	s.read(id, "Events")
	r, err := s.get(id)
	if err != nil {
		return contract.EventsPage{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return contract.EventsPage{Events: r.after(after), Last: int64(len(r.events)), Done: r.closed != nil}, nil
}

// after is the run's events after offset after; r.mu is held.
func (r *Run) after(after int64) []longhaul.Event {
	return append([]longhaul.Event(nil), r.events[min(max(after, 0), int64(len(r.events))):]...)
}

// Archived implements runs.Service: the fake archives nothing.
func (s *Service) Archived(context.Context, string, []contract.EventArchive, int64) ([]longhaul.Event, error) {
	return nil, nil
}

// LastOffset implements runs.Service.
func (s *Service) LastOffset(_ context.Context, id string) (int64, error) {
	r, err := s.get(id)
	if err != nil {
		return 0, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return int64(len(r.events)), nil
}

// Follow implements runs.Service: the run's durable events as they come
// (the fake has no live text).
func (s *Service) Follow(id string) runs.Follower { return &follower{s: s, id: id} }

type follower struct {
	s  *Service
	id string
}

func (f *follower) Join(c runs.Cursor) runs.Cursor { return c }
func (f *follower) Release()                       {}

func (f *follower) Next(ctx context.Context, after int64) ([]longhaul.Event, bool, error) {
	r, err := f.s.get(f.id)
	if err != nil {
		return nil, false, err
	}
	for {
		r.mu.Lock()
		events, done, wake := r.after(after), r.closed != nil, r.wake
		r.mu.Unlock()
		if len(events) > 0 || done {
			return events, done && (len(events) == 0 || events[len(events)-1].Offset == int64(len(r.events))), nil
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-wake:
		}
	}
}

func (f *follower) Read(ctx context.Context, c runs.Cursor) ([]runs.Item, bool, error) {
	events, done, err := f.Next(ctx, c.Offset())
	items := make([]runs.Item, len(events))
	for i, e := range events {
		items[i] = runs.Item{Event: e, Pos: runs.After(e.Offset)}
	}
	return items, done, err
}

// Result implements runs.Service: it waits for the run to end.
func (s *Service) Result(ctx context.Context, id string) (contract.AgentResult, error) {
	r, err := s.get(id)
	if err != nil {
		return contract.AgentResult{}, err
	}
	for {
		r.mu.Lock()
		closed, res, rerr, wake := r.closed, r.result, r.err, r.wake
		r.mu.Unlock()
		if closed != nil {
			return res, rerr
		}
		select {
		case <-ctx.Done():
			return contract.AgentResult{}, fmt.Errorf("%w: %w", runs.ErrTimeout, ctx.Err())
		case <-wake:
		}
	}
}

// Input implements runs.Service: a waiting run takes it and runs on.
func (s *Service) Input(_ context.Context, id, _ string, in contract.InputRequest) (contract.InputResult, error) {
	r, err := s.get(id)
	if err != nil {
		return contract.InputResult{}, err
	}
	r.mu.Lock()
	if r.closed != nil {
		r.mu.Unlock()
		return contract.InputResult{}, fmt.Errorf("run %s: %w", id, runs.ErrNotFound)
	}
	if r.state.Status != contract.StatusWaiting {
		r.mu.Unlock()
		return contract.InputResult{}, runs.NewFailure("", contract.ErrNotWaiting)
	}
	r.inputs = append(r.inputs, in)
	r.state.Status = contract.StatusRunning
	r.notifyLocked()
	r.mu.Unlock()
	if s.OnInput != nil {
		s.OnInput(r, in)
	}
	return contract.InputResult{}, nil
}

// Cancel implements runs.Service: the run ends cancelled at once.
func (s *Service) Cancel(_ context.Context, id string) error {
	r, err := s.get(id)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed != nil {
		return fmt.Errorf("run %s: %w", id, runs.ErrNotFound)
	}
	r.emitLocked(longhaul.EventDone, longhaul.DoneData{Status: contract.StatusCancelled})
	r.err = fmt.Errorf("run %s: %w", id, runs.ErrCanceled)
	r.closeLocked(contract.StatusCancelled, "")
	return nil
}

// Delete implements runs.Service.
func (s *Service) Delete(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runs[id] == nil {
		return fmt.Errorf("run %s: %w", id, runs.ErrNotFound)
	}
	delete(s.runs, id)
	return nil
}

// FirstInput implements runs.Service.
func (s *Service) FirstInput(_ context.Context, id string) (contract.AgentInput, time.Time, error) {
	s.read(id, "FirstInput")
	r, err := s.get(id)
	if err != nil {
		return contract.AgentInput{}, time.Time{}, err
	}
	return r.Input, r.Started, nil
}

// Inputs implements runs.Service.
func (s *Service) Inputs(_ context.Context, id string) ([]contract.InputRequest, error) {
	r, err := s.get(id)
	if err != nil {
		return nil, err
	}
	return r.Inputs(), nil
}

// List implements runs.Service: the runs f finds, as Temporal's
// visibility would, one page.
func (s *Service) List(_ context.Context, f runs.Filter, size int, _ []byte) (runs.Page, error) {
	var page runs.Page
	for _, r := range s.named(f) {
		if len(page.Runs) < size {
			page.Runs = append(page.Runs, r.info())
		}
	}
	return page, nil
}

// Count implements runs.Service: the runs List would list.
func (s *Service) Count(_ context.Context, f runs.Filter) (int64, error) {
	return int64(len(s.named(f))), nil
}

// named are the runs f finds.
func (s *Service) named(f runs.Filter) []*Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Run
	for _, r := range s.runs {
		if r.matches(f) {
			out = append(out, r)
		}
	}
	return out
}

// matches reports whether f finds r.
func (r *Run) matches(f runs.Filter) bool {
	info := r.info()
	status := info.Attrs[contract.SearchAttrStatus.GetName()]
	switch {
	case !f.AllOwners && r.Owner != f.Owner,
		f.Schedule != "" && r.ScheduledBy != f.Schedule,
		f.Chat != "" && r.Chat != f.Chat,
		f.ForkedFrom != "" && (r.Input.Fork == nil || r.Input.Fork.Run != f.ForkedFrom),
		f.Agent != "" && r.Input.Agent != f.Agent,
		f.Status != "" && status != f.Status,
		(f.Running || f.Status == contract.StatusRunning || f.Status == contract.StatusWaiting) && info.Closed != nil:
		return false
	}
	return true
}

// Health implements runs.Service: the fake always answers.
func (s *Service) Health(context.Context) error { return nil }

// Pollers implements runs.Service: one worker, always.
func (s *Service) Pollers(context.Context) (int, error) { return 1, nil }

// StartIngest implements runs.Service: it records in.
func (s *Service) StartIngest(_ context.Context, in contract.IngestInput, _ bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Ingested = append(s.Ingested, in)
	return nil
}

// AwaitIngest implements runs.Service: every ingestion completed.
func (s *Service) AwaitIngest(context.Context, string) (contract.IngestResult, error) {
	return contract.IngestResult{Status: "completed"}, nil
}

// CancelIngest implements runs.Service.
func (s *Service) CancelIngest(context.Context, string) error { return nil }
