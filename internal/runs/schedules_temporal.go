package runs

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/longhaul-dev/longhaul/contract"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
)

// ScheduleClient is what TemporalSchedules needs of the Temporal client;
// client.Client is one.
type ScheduleClient interface {
	ScheduleClient() client.ScheduleClient
	WorkflowService() workflowservice.WorkflowServiceClient
}

var _ ScheduleClient = client.Client(nil)

// TemporalSchedules keeps schedules of runs as Temporal Schedules, so
// each is seen, paused and triggered in the Temporal UI too, and fires
// while this process is down.
type TemporalSchedules struct {
	c   ScheduleClient
	cfg Config
}

var _ Schedules = (*TemporalSchedules)(nil)

// NewTemporalSchedules returns the schedules c reaches, whose runs start
// on cfg.TaskQueue; cfg's Namespace and Timeout are as for NewTemporal.
func NewTemporalSchedules(c ScheduleClient, cfg Config) *TemporalSchedules {
	return &TemporalSchedules{c: c, cfg: cfg.withDefaults()}
}

// The memo fields of a schedule's action (and so of its runs) that say
// what its spec was written as, which Temporal keeps only compiled: the
// action's memo, unlike the schedule's own, changes with an update.
const (
	memoCron  = "cron"
	memoEvery = "every"
)

// call bounds one call to Temporal.
func (t *TemporalSchedules) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, t.cfg.Timeout)
}

// RunIDPrefix is the workflow id of a schedule's action: Temporal appends
// "-" and the fire's nominal time in RFC 3339 to it for each run it starts
// (go.temporal.io/server v1.32.1, service/worker/scheduler/workflow.go:
// 1476-1480, startWorkflow, with AlwaysAppendTimestamp true by default,
// line 205), so a scheduled run's id reads "run-<schedule id>-<time>".
func RunIDPrefix(schedule string) string { return "run-" + schedule }

// action is what each fire of s starts: the agent workflow with s's input,
// memo and search attributes, as Service.Start starts a run. Temporal adds
// TemporalScheduledById (the schedule's id) and TemporalScheduledStartTime
// to the search attributes (go.temporal.io/server v1.32.1,
// service/worker/scheduler/workflow.go:1586-1599, addSearchAttributes).
func (t *TemporalSchedules) action(s Schedule) *client.ScheduleWorkflowAction {
	return &client.ScheduleWorkflowAction{
		ID:                    RunIDPrefix(s.ID),
		Workflow:              contract.AgentWorkflowName,
		Args:                  []any{s.Input},
		TaskQueue:             t.cfg.TaskQueue,
		StaticSummary:         s.Summary,
		Memo:                  actionMemo(s),
		TypedSearchAttributes: scheduleAttrs(s),
	}
}

// overlapPolicies maps Schedule.Overlap to Temporal's policies.
var overlapPolicies = map[string]enums.ScheduleOverlapPolicy{
	OverlapSkip:      enums.SCHEDULE_OVERLAP_POLICY_SKIP,
	OverlapBufferOne: enums.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE,
	OverlapAllow:     enums.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL,
}

func overlapPolicy(o string) enums.ScheduleOverlapPolicy {
	if p, ok := overlapPolicies[o]; ok {
		return p
	}
	return enums.SCHEDULE_OVERLAP_POLICY_SKIP
}

func overlapName(p enums.ScheduleOverlapPolicy) string {
	for name, q := range overlapPolicies {
		if q == p {
			return name
		}
	}
	return OverlapSkip
}

// clientSpec is spec as the client takes it.
func clientSpec(spec ScheduleSpec) client.ScheduleSpec {
	cs := client.ScheduleSpec{TimeZoneName: spec.TimeZone}
	if spec.Every > 0 {
		cs.Intervals = []client.ScheduleIntervalSpec{{Every: spec.Every}}
	}
	if spec.Cron != "" {
		cs.CronExpressions = []string{spec.Cron}
	}
	return cs
}

// actionMemo is the memo of s's runs: a run's (Start's Memo) and s's spec
// as written.
func actionMemo(s Schedule) map[string]any {
	m := map[string]any{MemoOwner: s.Owner, MemoSummary: s.Summary, MemoDoor: DoorSchedule, memoCron: s.Spec.Cron, memoEvery: ""}
	if s.Spec.Every > 0 {
		m[memoEvery] = s.Spec.Every.String()
	}
	return m
}

// scheduleAttrs are the search attributes of s and of each of its runs.
func scheduleAttrs(s Schedule) temporal.SearchAttributes { return runAttrs(s.Owner, s.Input.Agent) }

// runAttrs are the search attributes a run starts with (Start, a
// schedule's action) and a schedule is listed by: its owner and agent, and
// more. The run sets them itself too; set at the start, they count it
// against its principal's limit at once.
func runAttrs(owner, agent string, more ...temporal.SearchAttributeUpdate) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(append([]temporal.SearchAttributeUpdate{
		contract.SearchAttrUser.ValueSet(owner),
		contract.SearchAttrAgent.ValueSet(agent),
	}, more...)...)
}

// Create implements Schedules.
func (t *TemporalSchedules) Create(ctx context.Context, s Schedule) error {
	ctx, cancel := t.call(ctx)
	defer cancel()
	_, err := t.c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:                    s.ID,
		Spec:                  clientSpec(s.Spec),
		Action:                t.action(s),
		Overlap:               overlapPolicy(s.Overlap),
		CatchupWindow:         s.CatchupWindow,
		Paused:                s.Paused,
		Memo:                  map[string]any{MemoOwner: s.Owner},
		TypedSearchAttributes: scheduleAttrs(s),
	})
	if errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return &kindError{kind: ErrAlreadyStarted, cause: err}
	}
	return classify(err)
}

// Get implements Schedules.
func (t *TemporalSchedules) Get(ctx context.Context, id string) (Schedule, error) {
	ctx, cancel := t.call(ctx)
	defer cancel()
	d, err := t.c.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
	if err != nil {
		return Schedule{ID: id}, classify(err)
	}
	return scheduleOf(id, d)
}

// scheduleOf converts what Temporal says of schedule id.
func scheduleOf(id string, d *client.ScheduleDescription) (Schedule, error) {
	s := Schedule{ID: id, Overlap: OverlapSkip}
	s.Owner = payloadString(d.Memo.GetFields()[MemoOwner])
	if sp := d.Schedule.Spec; sp != nil {
		s.Spec.TimeZone = sp.TimeZoneName
	}
	a, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction)
	if !ok || len(a.Args) != 1 {
		return s, corrupt("schedule " + id + " does not start a run")
	}
	p, _ := a.Args[0].(*commonpb.Payload)
	if p == nil || converter.GetDefaultDataConverter().FromPayload(p, &s.Input) != nil {
		return s, corrupt("cannot decode the run input of schedule " + id)
	}
	memo := func(k string) string { p, _ := a.Memo[k].(*commonpb.Payload); return payloadString(p) }
	s.Summary, s.Spec.Cron = memo(MemoSummary), memo(memoCron)
	if every := memo(memoEvery); every != "" {
		s.Spec.Every, _ = time.ParseDuration(every)
	}
	if pol := d.Schedule.Policy; pol != nil {
		s.Overlap, s.CatchupWindow = overlapName(pol.Overlap), pol.CatchupWindow
	}
	if st := d.Schedule.State; st != nil {
		s.Paused = st.Paused
	}
	info := d.Info
	s.Actions = int64(info.NumActions)
	s.Next = info.NextActionTimes
	if !info.CreatedAt.IsZero() {
		s.Created = &info.CreatedAt
	}
	if !info.LastUpdateAt.IsZero() {
		s.Updated = &info.LastUpdateAt
	}
	for _, a := range info.RecentActions {
		if a.StartWorkflowResult != nil {
			s.Recent = append(s.Recent, Fire{RunID: a.StartWorkflowResult.WorkflowID, ScheduledAt: a.ScheduleTime, StartedAt: a.ActualTime})
		}
	}
	return s, nil
}

// Update implements Schedules: a read, then a write that fails if the
// schedule changed between the two (the client's conflict token).
func (t *TemporalSchedules) Update(ctx context.Context, s Schedule) error {
	ctx, cancel := t.call(ctx)
	defer cancel()
	err := t.c.ScheduleClient().GetHandle(ctx, s.ID).Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			sch := in.Description.Schedule
			spec := clientSpec(s.Spec)
			sch.Spec = &spec
			sch.Action = t.action(s)
			sch.Policy = &client.SchedulePolicies{Overlap: overlapPolicy(s.Overlap), CatchupWindow: s.CatchupWindow}
			if sch.State == nil {
				sch.State = &client.ScheduleState{}
			}
			sch.State.Paused = s.Paused
			attrs := scheduleAttrs(s)
			return &client.ScheduleUpdate{Schedule: &sch, TypedSearchAttributes: &attrs}, nil
		},
	})
	return classify(err)
}

// Pause implements Schedules.
func (t *TemporalSchedules) Pause(ctx context.Context, id, note string) error {
	ctx, cancel := t.call(ctx)
	defer cancel()
	return classify(t.c.ScheduleClient().GetHandle(ctx, id).Pause(ctx, client.SchedulePauseOptions{Note: note}))
}

// Resume implements Schedules.
func (t *TemporalSchedules) Resume(ctx context.Context, id, note string) error {
	ctx, cancel := t.call(ctx)
	defer cancel()
	return classify(t.c.ScheduleClient().GetHandle(ctx, id).Unpause(ctx, client.ScheduleUnpauseOptions{Note: note}))
}

// Trigger implements Schedules.
func (t *TemporalSchedules) Trigger(ctx context.Context, id string) error {
	ctx, cancel := t.call(ctx)
	defer cancel()
	return classify(t.c.ScheduleClient().GetHandle(ctx, id).Trigger(ctx, client.ScheduleTriggerOptions{}))
}

// Delete implements Schedules.
func (t *TemporalSchedules) Delete(ctx context.Context, id string) error {
	ctx, cancel := t.call(ctx)
	defer cancel()
	return classify(t.c.ScheduleClient().GetHandle(ctx, id).Delete(ctx))
}

// OwnerQuery is the visibility query of owner's schedules.
func OwnerQuery(owner string) string {
	return contract.SearchAttrUser.GetName() + " = " + QuoteLiteral(owner)
}

// List implements Schedules: the ids from visibility, each described, so
// a schedule deleted since visibility last heard of it is left out.
func (t *TemporalSchedules) List(ctx context.Context, owner string, size int, token []byte) (SchedulePage, error) {
	lctx, cancel := t.call(ctx)
	resp, err := t.c.WorkflowService().ListSchedules(lctx, &workflowservice.ListSchedulesRequest{
		Namespace: t.cfg.Namespace, MaximumPageSize: int32(min(size, math.MaxInt32)), NextPageToken: token, Query: OwnerQuery(owner),
	})
	cancel()
	if err != nil {
		return SchedulePage{}, classify(err)
	}
	page := SchedulePage{Next: resp.GetNextPageToken()}
	for _, e := range resp.GetSchedules() {
		s, err := t.Get(ctx, e.GetScheduleId())
		switch {
		case errors.Is(err, ErrNotFound):
			continue
		case err != nil:
			return SchedulePage{}, err
		}
		if s.Owner == owner {
			page.Schedules = append(page.Schedules, s)
		}
	}
	slices.SortStableFunc(page.Schedules, func(a, b Schedule) int { return laterFirst(a.Created, b.Created) })
	return page, nil
}

// laterFirst orders the newer of two creation times first.
func laterFirst(a, b *time.Time) int {
	switch {
	case a == nil || b == nil:
		return 0
	case a.After(*b):
		return -1
	case b.After(*a):
		return 1
	}
	return 0
}

// Count counts owner's schedules, as visibility knows them.
func (t *TemporalSchedules) Count(ctx context.Context, owner string) (int64, error) {
	ctx, cancel := t.call(ctx)
	defer cancel()
	resp, err := t.c.WorkflowService().CountSchedules(ctx, &workflowservice.CountSchedulesRequest{Namespace: t.cfg.Namespace, Query: OwnerQuery(owner)})
	if err != nil {
		return 0, classify(err)
	}
	return resp.GetCount(), nil
}
