package runsfake

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/longhaul-dev/longhaul/internal/runs"
)

// Schedules keeps schedules in memory. A fire happens only when a test
// calls Fire or the API triggers one: each starts a run on Runs (when
// set) as Temporal's scheduler would, under "run-<schedule>-<n>".
type Schedules struct {
	// Runs, when set, is where fires start their runs.
	Runs *Service
	// Err, when set, is what every call answers.
	Err error

	mu    sync.Mutex
	items map[string]*runs.Schedule
	fired map[string]int
}

var _ runs.Schedules = (*Schedules)(nil)

// NewSchedules returns a fake with no schedules, whose fires start runs
// on svc (nil: none).
func NewSchedules(svc *Service) *Schedules {
	return &Schedules{Runs: svc, items: map[string]*runs.Schedule{}, fired: map[string]int{}}
}

func notFound(id string) error { return fmt.Errorf("schedule %s: %w", id, runs.ErrNotFound) }

// Create implements runs.Schedules.
func (f *Schedules) Create(_ context.Context, s runs.Schedule) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Err != nil {
		return f.Err
	}
	if _, ok := f.items[s.ID]; ok {
		return fmt.Errorf("schedule %s: %w", s.ID, runs.ErrAlreadyStarted)
	}
	now := time.Now()
	s.Created, s.Updated = &now, &now
	f.items[s.ID] = &s
	return nil
}

// Get implements runs.Schedules: the schedule with its next fires, as
// the engine computes them.
func (f *Schedules) Get(_ context.Context, id string) (runs.Schedule, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Err != nil {
		return runs.Schedule{}, f.Err
	}
	s, ok := f.items[id]
	if !ok {
		return runs.Schedule{ID: id}, notFound(id)
	}
	out := *s
	out.Recent = slices.Clone(s.Recent)
	if !out.Paused {
		out.Next = runs.NextFires(s.Spec, time.Now(), 10)
	}
	return out, nil
}

// List implements runs.Schedules: owner's schedules, newest first, in
// pages whose token is the next index.
func (f *Schedules) List(ctx context.Context, owner string, size int, token []byte) (runs.SchedulePage, error) {
	f.mu.Lock()
	var ids []string
	for id, s := range f.items {
		if s.Owner == owner {
			ids = append(ids, id)
		}
	}
	err := f.Err
	f.mu.Unlock()
	if err != nil {
		return runs.SchedulePage{}, err
	}
	var all []runs.Schedule
	for _, id := range ids {
		if s, err := f.Get(ctx, id); err == nil {
			all = append(all, s)
		}
	}
	slices.SortFunc(all, func(a, b runs.Schedule) int { return b.Created.Compare(*a.Created) })
	from := 0
	if len(token) > 0 {
		from, _ = strconv.Atoi(string(token))
	}
	from = min(from, len(all))
	page := runs.SchedulePage{Schedules: all[from:min(from+size, len(all))]}
	if from+size < len(all) {
		page.Next = []byte(strconv.Itoa(from + size))
	}
	return page, nil
}

// Update implements runs.Schedules.
func (f *Schedules) Update(_ context.Context, s runs.Schedule) error {
	return f.edit(s.ID, func(old *runs.Schedule) {
		s.Created, s.Actions, s.Recent = old.Created, old.Actions, old.Recent
		now := time.Now()
		s.Updated = &now
		*old = s
	})
}

// Pause implements runs.Schedules.
func (f *Schedules) Pause(_ context.Context, id, _ string) error {
	return f.edit(id, func(s *runs.Schedule) { s.Paused = true })
}

// Resume implements runs.Schedules.
func (f *Schedules) Resume(_ context.Context, id, _ string) error {
	return f.edit(id, func(s *runs.Schedule) { s.Paused = false })
}

// Delete implements runs.Schedules.
func (f *Schedules) Delete(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Err != nil {
		return f.Err
	}
	if _, ok := f.items[id]; !ok {
		return notFound(id)
	}
	delete(f.items, id)
	return nil
}

// Count implements runs.Schedules.
func (f *Schedules) Count(_ context.Context, owner string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := int64(0)
	for _, s := range f.items {
		if s.Owner == owner {
			n++
		}
	}
	return n, f.Err
}

func (f *Schedules) edit(id string, change func(*runs.Schedule)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Err != nil {
		return f.Err
	}
	s, ok := f.items[id]
	if !ok {
		return notFound(id)
	}
	change(s)
	return nil
}

// Trigger implements runs.Schedules: a fire now, paused or not.
func (f *Schedules) Trigger(_ context.Context, id string) error {
	_, err := f.Fire(id)
	return err
}

// Fire fires schedule id as its spec would: a run of its input, owner and
// memo, recorded among its recent fires. It returns the run's id.
func (f *Schedules) Fire(id string) (string, error) {
	f.mu.Lock()
	s, ok := f.items[id]
	if !ok {
		f.mu.Unlock()
		return "", notFound(id)
	}
	f.fired[id]++
	run := runs.RunIDPrefix(id) + "-" + strconv.Itoa(f.fired[id])
	now := time.Now()
	s.Actions++
	s.Recent = append(s.Recent, runs.Fire{RunID: run, ScheduledAt: now, StartedAt: now})
	in, owner, summary := s.Input, s.Owner, s.Summary
	f.mu.Unlock()
	if f.Runs != nil {
		r := f.Runs.Add(run, owner, in)
		r.mu.Lock()
		r.Memo[runs.MemoSummary] = summary
		r.ScheduledBy = id
		r.mu.Unlock()
	}
	return run, nil
}
