package wire

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The wire types of the schedules API (api/schedulesapi) and their checks.

// ScheduleRequest is the body of POST /v1/schedules: a run request (agent,
// input or messages, metadata) and when to start it, every Every (a Go
// duration: "90s", "6h") or at the times Cron names, in Timezone.
type ScheduleRequest struct {
	Agent    string            `json:"agent"`
	Messages []ChatMessage     `json:"messages,omitempty"`
	Input    *string           `json:"input,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Every    string            `json:"every,omitempty"`
	Cron     string            `json:"cron,omitempty"`
	Timezone string            `json:"timezone,omitempty"`
	// Overlap is skip (the default), buffer_one or allow.
	Overlap string `json:"overlap,omitempty"`
	// CatchupWindow (a Go duration, at least 10s) is how late a fire
	// missed while the engine was down may still start.
	CatchupWindow string `json:"catchup_window,omitempty"`
	Paused        bool   `json:"paused,omitempty"`
}

// SchedulePatch is the body of PATCH /v1/schedules/{id}: what it names
// changes, the rest stays. Every or Cron replaces the other; input or
// messages replaces the conversation.
type SchedulePatch struct {
	Agent         *string            `json:"agent,omitempty"`
	Messages      []ChatMessage      `json:"messages,omitempty"`
	Input         *string            `json:"input,omitempty"`
	Metadata      *map[string]string `json:"metadata,omitempty"`
	Every         *string            `json:"every,omitempty"`
	Cron          *string            `json:"cron,omitempty"`
	Timezone      *string            `json:"timezone,omitempty"`
	Overlap       *string            `json:"overlap,omitempty"`
	CatchupWindow *string            `json:"catchup_window,omitempty"`
	Paused        *bool              `json:"paused,omitempty"`
}

// Schedule answers the schedules routes. NextRunAt is null while it is
// paused (or never fires again).
type Schedule struct {
	ID       string            `json:"id"`
	Object   string            `json:"object"`
	Agent    string            `json:"agent"`
	Input    string            `json:"input"`
	Metadata map[string]string `json:"metadata"`
	Every    string            `json:"every,omitempty"`
	Cron     string            `json:"cron,omitempty"`
	Timezone string            `json:"timezone"`
	Overlap  string            `json:"overlap"`
	// CatchupWindow is a Go duration.
	CatchupWindow string         `json:"catchup_window"`
	Paused        bool           `json:"paused"`
	NextRunAt     *time.Time     `json:"next_run_at"`
	NextRuns      []time.Time    `json:"next_runs"`
	RunCount      int64          `json:"run_count"`
	RecentRuns    []ScheduledRun `json:"recent_runs"`
	CreatedAt     *time.Time     `json:"created_at"`
	UpdatedAt     *time.Time     `json:"updated_at"`
	RunsURL       string         `json:"runs_url"`
}

// ScheduledRun is one run a schedule started.
type ScheduledRun struct {
	ID          string    `json:"id"`
	ScheduledAt time.Time `json:"scheduled_at"`
	StartedAt   time.Time `json:"started_at"`
}

// ScheduleList answers GET /v1/schedules.
type ScheduleList = Page[Schedule]

// ScheduleDeleted answers DELETE /v1/schedules/{id}.
type ScheduleDeleted = Deleted

// ScheduleOverlaps are the overlap policies a schedule may name, as
// runs.Overlaps lists them (the schedules API's tests hold the two
// together).
var ScheduleOverlaps = []string{"skip", "buffer_one", "allow"}

// MinCatchupWindow is the shortest catch-up window a schedule may name:
// Temporal's scheduler raises a shorter one to it (go.temporal.io/server
// v1.32.1, service/worker/scheduler/workflow.go:202, MinCatchupWindow).
const MinCatchupWindow = 10 * time.Second

// Validate reports the first problem with a schedule request that its
// fields alone show; check compiles schedules, as for RunRequest.Validate.
// When it fires is checked against the engine's scheduler apart.
func (r *ScheduleRequest) Validate(check SchemaCheck) error {
	if err := r.RunRequest().Validate(check); err != nil {
		return err
	}
	switch {
	case r.Every == "" && r.Cron == "":
		return errors.New("every or cron: required")
	case r.Every != "" && r.Cron != "":
		return errors.New("send either every or cron, not both")
	}
	if _, err := r.Interval(); err != nil {
		return err
	}
	if _, err := r.Catchup(); err != nil {
		return err
	}
	if r.Overlap != "" && !slices.Contains(ScheduleOverlaps, r.Overlap) {
		return fmt.Errorf("overlap: must be one of %s", strings.Join(ScheduleOverlaps, ", "))
	}
	return nil
}

// RunRequest is the run each fire starts, as POST /v1/runs would take it.
func (r *ScheduleRequest) RunRequest() *RunRequest {
	return &RunRequest{Agent: r.Agent, Messages: r.Messages, Input: r.Input, Metadata: r.Metadata}
}

// Interval is Every as a duration; zero when it is empty.
func (r *ScheduleRequest) Interval() (time.Duration, error) {
	return parseDuration("every", r.Every)
}

// Catchup is CatchupWindow as a duration; zero when it is empty.
func (r *ScheduleRequest) Catchup() (time.Duration, error) {
	d, err := parseDuration("catchup_window", r.CatchupWindow)
	if err == nil && d != 0 && d < MinCatchupWindow {
		return 0, fmt.Errorf("catchup_window: must be at least %s", MinCatchupWindow)
	}
	return d, err
}

func parseDuration(field, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf(`%s: must be a positive duration such as "90s", "15m" or "6h"`, field)
	}
	return d, nil
}
