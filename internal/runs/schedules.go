package runs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	schedulepb "go.temporal.io/api/schedule/v1"
	"go.temporal.io/server/service/worker/scheduler"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Schedules is everything the HTTP API does to schedules of runs: each
// schedule starts an ordinary agent run (the workflow Service.Start
// starts, with the same memo and search attributes) at the times its spec
// names. Temporal keeps them as Temporal Schedules (TemporalSchedules);
// internal/testing/runsfake keeps them in memory. Owners are checked by
// the caller, against Schedule.Owner.
type Schedules interface {
	// Create creates schedule s; ErrAlreadyStarted when its id is taken.
	Create(ctx context.Context, s Schedule) error
	// List is a page of owner's schedules; token continues a previous
	// page.
	List(ctx context.Context, owner string, size int, token []byte) (SchedulePage, error)
	// Get is schedule id as it stands, with what it did and will do.
	Get(ctx context.Context, id string) (Schedule, error)
	// Update replaces what schedule s.ID starts and when (its input, spec,
	// policies and paused state) with s's.
	Update(ctx context.Context, s Schedule) error
	// Pause stops schedule id firing until Resume; note says why.
	Pause(ctx context.Context, id, note string) error
	// Resume lets a paused schedule fire again.
	Resume(ctx context.Context, id, note string) error
	// Trigger fires schedule id now, paused or not, under its overlap
	// policy.
	Trigger(ctx context.Context, id string) error
	// Delete deletes schedule id; the runs it started go on.
	Delete(ctx context.Context, id string) error
	// Count counts owner's schedules.
	Count(ctx context.Context, owner string) (int64, error)
}

// Schedule is a schedule of runs.
type Schedule struct {
	ID string
	// Owner is the principal the schedule and its runs belong to (Start's
	// Owner).
	Owner string
	// Input is what each run starts with.
	Input contract.AgentInput
	// Summary is each run's one-line summary (Start's Summary).
	Summary string
	Spec    ScheduleSpec
	// Overlap is what a fire does while the schedule's last run still
	// goes: one of the Overlap* values.
	Overlap string
	// CatchupWindow is how late a fire missed while the engine was down
	// may still start; zero is the engine's default.
	CatchupWindow time.Duration
	Paused        bool

	// What the engine says of it; Create and Update ignore these.

	// Actions counts the runs it started (triggers included).
	Actions int64
	// Recent are its latest fires, oldest first.
	Recent []Fire
	// Next are the times it will fire next, soonest first; none while
	// paused.
	Next             []time.Time
	Created, Updated *time.Time
}

// ScheduleSpec is when a schedule fires: every Every, or at the times Cron
// names, in TimeZone (an IANA name; empty is UTC).
type ScheduleSpec struct {
	Every    time.Duration
	Cron     string
	TimeZone string
}

// Fire is one run a schedule started.
type Fire struct {
	// RunID is the run's id (its workflow id).
	RunID string
	// ScheduledAt is the time the spec named (the trigger's time for a
	// trigger), StartedAt when the run started.
	ScheduledAt, StartedAt time.Time
}

// SchedulePage is one page of a listing of schedules.
type SchedulePage struct {
	Schedules []Schedule
	// Next continues the listing; empty on its last page.
	Next []byte
}

// The overlap policies of Schedule.Overlap.
const (
	// OverlapSkip skips a fire while the last run still goes.
	OverlapSkip = "skip"
	// OverlapBufferOne starts one fire after the last run ends, and
	// skips the rest.
	OverlapBufferOne = "buffer_one"
	// OverlapAllow starts every fire, beside any run still going.
	OverlapAllow = "allow"
)

// Overlaps are the overlap policies, in the order the API lists them.
var Overlaps = []string{OverlapSkip, OverlapBufferOne, OverlapAllow}

// specs compiles schedule specs as Temporal's scheduler does, with no
// bound on the iterations of an over-excluded calendar (a spec here has
// none: one cron expression or one interval).
var specs = scheduler.NewSpecBuilder(func() int { return 0 }, func() int { return 0 })

// gaps is how many fires CheckSpec looks at for the shortest gap between
// two: enough to see a cron expression's densest stretch (one hour of
// minutes, a day of hours) from any start.
const gaps = 1500

// CheckSpec reports what is wrong with spec: neither or both of Every and
// Cron, a cron expression or time zone Temporal's scheduler cannot read,
// one that never fires, or fires closer together than minInterval (zero:
// any). It compiles the spec with the scheduler's own code
// (go.temporal.io/server v1.32.1, service/worker/scheduler/spec.go:77
// NewCompiledSpec, calendar.go:241 parseCronString, spec.go:272
// loadTimezone), so what it accepts the engine accepts, "@every" and
// "CRON_TZ=" forms included, and the gaps it measures are the engine's.
func CheckSpec(spec ScheduleSpec, minInterval time.Duration, now time.Time) error {
	switch {
	case spec.Every == 0 && spec.Cron == "":
		return errors.New("every or cron: required")
	case spec.Every != 0 && spec.Cron != "":
		return errors.New("send either every or cron, not both")
	case spec.Every < 0:
		return errors.New("every: must be positive")
	case spec.Every > 0 && spec.Every < minInterval:
		return fmt.Errorf("every: must be at least %s (LONGHAUL_MIN_SCHEDULE_INTERVAL)", minInterval)
	}
	cs, err := compile(spec)
	if err != nil {
		return err
	}
	prev, err := cs.GetNextTime("", now)
	switch {
	case err != nil:
		return fmt.Errorf("cron: %w", err)
	case prev.Nominal.IsZero():
		return errors.New("cron: never fires")
	case spec.Every > 0 || minInterval <= 0:
		return nil
	}
	for range gaps {
		next, err := cs.GetNextTime("", prev.Nominal)
		if err != nil || next.Nominal.IsZero() {
			return nil
		}
		if gap := next.Nominal.Sub(prev.Nominal); gap < minInterval {
			return fmt.Errorf("cron: fires %s apart (at %s and %s), less than the least interval, %s (LONGHAUL_MIN_SCHEDULE_INTERVAL)",
				gap, prev.Nominal.Format(time.RFC3339), next.Nominal.Format(time.RFC3339), minInterval)
		}
		prev = next
	}
	return nil
}

// NextFires are the next n times spec fires after after, soonest first
// (fewer when it stops firing); nil when it cannot be read.
func NextFires(spec ScheduleSpec, after time.Time, n int) []time.Time {
	cs, err := compile(spec)
	if err != nil {
		return nil
	}
	var out []time.Time
	for range n {
		next, err := cs.GetNextTime("", after)
		if err != nil || next.Nominal.IsZero() {
			break
		}
		out = append(out, next.Nominal)
		after = next.Nominal
	}
	return out
}

// compile compiles spec as the scheduler does.
func compile(spec ScheduleSpec) (*scheduler.CompiledSpec, error) {
	cs, err := specs.NewCompiledSpec(specProto(spec))
	if err != nil {
		if spec.Cron != "" {
			return nil, fmt.Errorf("cron or timezone: %w", err)
		}
		return nil, fmt.Errorf("timezone: %w", err)
	}
	return cs, nil
}

// specProto is spec as Temporal's API says it.
func specProto(spec ScheduleSpec) *schedulepb.ScheduleSpec {
	p := &schedulepb.ScheduleSpec{TimezoneName: spec.TimeZone}
	if spec.Every > 0 {
		p.Interval = []*schedulepb.IntervalSpec{{Interval: durationpb.New(spec.Every)}}
	}
	if spec.Cron != "" {
		p.CronString = []string{spec.Cron}
	}
	return p
}

// MaxCatchupWindow bounds a schedule's catch-up window: after an outage
// Temporal starts every fire missed within the window, so a schedule that
// fires every minute with a window of a year (Temporal's own default)
// would start a burst of runs at once.
const MaxCatchupWindow = 24 * time.Hour

// SameUser reports whether a and b are the same identity: principal, ids,
// role and groups.
func SameUser(a, b longhaul.User) bool {
	return a.Principal == b.Principal && a.ID == b.ID && a.Email == b.Email && a.Name == b.Name &&
		a.Role == b.Role && slices.Equal(a.Groups, b.Groups)
}
