package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/natsbus"
	"github.com/longhaul-dev/longhaul/internal/store"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Client is what Temporal needs of the Temporal client; client.Client is
// one.
type Client interface {
	Querier
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
	GetWorkflow(ctx context.Context, workflowID, runID string) client.WorkflowRun
	DescribeWorkflowExecution(ctx context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error)
	ListWorkflow(ctx context.Context, request *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error)
	CountWorkflow(ctx context.Context, request *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error)
	CancelWorkflow(ctx context.Context, workflowID, runID string) error
	UpdateWorkflow(ctx context.Context, options client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error)
	DescribeTaskQueue(ctx context.Context, taskQueue string, taskQueueType enums.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error)
	CheckHealth(ctx context.Context, request *client.CheckHealthRequest) (*client.CheckHealthResponse, error)
	WorkflowService() workflowservice.WorkflowServiceClient
}

var _ Client = client.Client(nil)

// Config configures Temporal.
type Config struct {
	// TaskQueue is where runs are started.
	TaskQueue string
	// Namespace is the Temporal namespace the client is bound to; empty is
	// "default".
	Namespace string
	// Timeout bounds each call to Temporal that is one question (not a
	// wait for a run), so that an unreachable Temporal is a prompt error,
	// not a hanging request; zero is DefaultTimeout.
	Timeout time.Duration
	// EagerStart asks Temporal to hand a new run straight to a worker in
	// this process (dev mode), saving a round trip.
	EagerStart bool
	// Deltas carries the live text of running model calls (NATS); nil
	// streams each call's text whole when it finishes.
	Deltas *natsbus.Bus
	// Blobs holds the event archives of runs that continued as new; nil
	// reads none.
	Blobs store.Store
	// Log takes a feed's panic; nil is slog's default.
	Log *slog.Logger
}

// DefaultTimeout is Config.Timeout when none is set.
const DefaultTimeout = 10 * time.Second

// withDefaults is cfg with DefaultTimeout, the "default" namespace and
// slog's default logger where it names none.
func (cfg Config) withDefaults() Config {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return cfg
}

// Temporal is the Service that runs runs on Temporal.
type Temporal struct {
	c   Client
	cfg Config
	hub *hub
}

var _ Service = (*Temporal)(nil)

// NewTemporal returns the Service of the runs c reaches.
func NewTemporal(c Client, cfg Config) *Temporal {
	cfg = cfg.withDefaults()
	var history HistoryPoller
	if ws := c.WorkflowService(); ws != nil {
		history = ws
	}
	return &Temporal{c: c, cfg: cfg, hub: newHub(c, history, cfg.Namespace, cfg.Deltas, cfg.Blobs, cfg.Log)}
}

// call bounds one call to Temporal.
func (t *Temporal) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, t.cfg.Timeout)
}

// Start implements Service.
func (t *Temporal) Start(ctx context.Context, r Start) error {
	memo := make(map[string]any, len(r.Memo))
	for k, v := range r.Memo {
		memo[k] = v
	}
	opts := client.StartWorkflowOptions{
		ID:                       r.ID,
		TaskQueue:                t.cfg.TaskQueue,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		StaticSummary:            r.Summary,
		Memo:                     memo,
		EnableEagerStart:         t.cfg.EagerStart,
	}
	// The attributes a chat's runs and a fork are found by.
	var found []temporal.SearchAttributeUpdate
	if r.Chat != "" {
		found = append(found, contract.SearchAttrChat.ValueSet(r.Chat))
	}
	if r.Input.Fork != nil {
		forkOptions(&opts, r, t.cfg.Namespace)
		found = append(found, contract.SearchAttrForkedFrom.ValueSet(r.Input.Fork.Run))
	}
	opts.TypedSearchAttributes = runAttrs(r.Owner, r.Input.Agent, found...)
	ctx, cancel := t.call(ctx)
	defer cancel()
	_, err := t.c.ExecuteWorkflow(ctx, opts, contract.AgentWorkflowName, r.Input)
	return classify(err)
}

// Describe implements Service.
func (t *Temporal) Describe(ctx context.Context, id string) (Info, error) {
	ctx, cancel := t.call(ctx)
	defer cancel()
	d, err := t.c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return Info{}, classify(err)
	}
	return infoOf(d.GetWorkflowExecutionInfo()), nil
}

// infoOf converts what Temporal says of an execution.
func infoOf(e *workflowpb.WorkflowExecutionInfo) Info {
	info := Info{
		ID:      e.GetExecution().GetWorkflowId(),
		Type:    e.GetType().GetName(),
		Status:  strings.ToLower(strings.TrimPrefix(e.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_")),
		Memo:    map[string]string{},
		Attrs:   map[string]string{},
		Started: timeOf(e.GetStartTime()),
		Closed:  timeOf(e.GetCloseTime()),
	}
	for k, p := range e.GetMemo().GetFields() {
		info.Memo[k] = payloadString(p)
	}
	for k, p := range e.GetSearchAttributes().GetIndexedFields() {
		info.Attrs[k] = payloadString(p)
	}
	return info
}

// timeOf converts a Temporal timestamp; unset is nil.
func timeOf(ts *timestamppb.Timestamp) *time.Time {
	if ts == nil {
		return nil
	}
	t := ts.AsTime()
	return &t
}

// payloadString decodes a string payload (a keyword search attribute or a
// memo field), or returns "".
func payloadString(p *commonpb.Payload) string {
	var s string
	if p == nil || converter.GetDefaultDataConverter().FromPayload(p, &s) != nil {
		return ""
	}
	return s
}

// PayloadSize is the size of v as the engine's payload: what its limit on
// a run's input, and on an input to a run, counts.
func PayloadSize(v any) (int, error) {
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	if err != nil {
		return 0, err
	}
	return proto.Size(p), nil
}

// State implements Service.
func (t *Temporal) State(ctx context.Context, id string) (contract.RunState, error) {
	ctx, cancel := t.call(ctx)
	defer cancel()
	var st contract.RunState
	v, err := t.c.QueryWorkflow(ctx, id, "", contract.QueryState)
	if err != nil {
		return st, classify(err)
	}
	if err := v.Get(&st); err != nil {
		return st, corrupt("cannot decode the state of run " + id)
	}
	return st, nil
}

// ForkSource implements Service.
func (t *Temporal) ForkSource(ctx context.Context, id string) (contract.ForkSource, error) {
	ctx, cancel := t.call(ctx)
	defer cancel()
	var src contract.ForkSource
	v, err := t.c.QueryWorkflow(ctx, id, "", contract.QueryFork)
	if err != nil {
		return src, classify(err)
	}
	if err := v.Get(&src); err != nil {
		return src, corrupt("cannot decode what run " + id + " answered its fork query with")
	}
	return src, nil
}

// Events implements Service.
func (t *Temporal) Events(ctx context.Context, id string, after int64) (contract.EventsPage, error) {
	page, err := t.hub.Query(ctx, id, after)
	return page, classify(err)
}

// Archived implements Service.
func (t *Temporal) Archived(ctx context.Context, id string, archives []contract.EventArchive, after int64) ([]longhaul.Event, error) {
	return t.hub.ReadArchives(ctx, id, archives, after)
}

// LastOffset implements Service.
func (t *Temporal) LastOffset(ctx context.Context, id string) (int64, error) {
	ctx, cancel := t.call(ctx)
	defer cancel()
	// Asking for the events after the end returns none, only where the
	// end is.
	v, err := t.c.QueryWorkflow(ctx, id, "", contract.QueryEvents, contract.EventsRequest{After: math.MaxInt64, Limit: 1})
	if err != nil {
		return 0, classify(err)
	}
	var page contract.EventsPage
	if err := v.Get(&page); err != nil {
		return 0, err
	}
	return page.Last, nil
}

// Follow implements Service.
func (t *Temporal) Follow(id string) Follower { return t.hub.Subscribe(id) }

// Result implements Service.
func (t *Temporal) Result(ctx context.Context, id string) (contract.AgentResult, error) {
	var res contract.AgentResult
	return res, classify(t.c.GetWorkflow(ctx, id, "").Get(ctx, &res))
}

// Input implements Service.
func (t *Temporal) Input(ctx context.Context, id, updateID string, in contract.InputRequest) (contract.InputResult, error) {
	return update[contract.InputResult](ctx, t.c, id, updateID, contract.UpdateInput, in)
}

// update sends run id the update name with arg, updateID making a repeat
// answer the first outcome, and waits until the run completed it.
func update[R any](ctx context.Context, c Client, id, updateID, name string, arg any) (R, error) {
	var res R
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateID: updateID,
		UpdateName: name, Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, &res)
	}
	return res, classify(err)
}

// Cancel implements Service.
func (t *Temporal) Cancel(ctx context.Context, id string) error {
	ctx, cancel := t.call(ctx)
	defer cancel()
	if err := classify(t.c.CancelWorkflow(ctx, id, "")); err != nil {
		return err
	}
	// The run's model call hears it from Temporal only with the answer to
	// its next heartbeat, seconds away; over NATS it stops now.
	t.cfg.Deltas.Cancelled(id)
	return nil
}

// Delete implements Service. Temporal terminates a run still running
// before it deletes it (go.temporal.io/server v1.32.1,
// service/frontend/workflow_handler.go:2484-2510 asks with
// ClosedWorkflowOnly false, and service/history/api/deleteworkflow/api.go:
// 41-67 terminates an open execution with deleteAfterTerminate).
func (t *Temporal) Delete(ctx context.Context, id string) error {
	ctx, cancel := t.call(ctx)
	defer cancel()
	_, err := t.c.WorkflowService().DeleteWorkflowExecution(ctx, &workflowservice.DeleteWorkflowExecutionRequest{
		Namespace: t.cfg.Namespace, WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: id},
	})
	return classify(err)
}

// FirstInput implements Service: the start event of the first execution,
// found through the current one when the run continued as new.
func (t *Temporal) FirstInput(ctx context.Context, id string) (contract.AgentInput, time.Time, error) {
	ctx, cancel := t.call(ctx)
	defer cancel()
	var in contract.AgentInput
	exec := ""
	for range 2 {
		resp, err := t.c.WorkflowService().GetWorkflowExecutionHistory(ctx, &workflowservice.GetWorkflowExecutionHistoryRequest{
			Namespace: t.cfg.Namespace, Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: exec}, MaximumPageSize: 1,
		})
		if err != nil {
			return in, time.Time{}, classify(err)
		}
		events := resp.GetHistory().GetEvents()
		if len(events) == 0 {
			return in, time.Time{}, corrupt("run " + id + " has an empty history")
		}
		attrs := events[0].GetWorkflowExecutionStartedEventAttributes()
		if attrs.GetContinuedExecutionRunId() != "" && exec == "" {
			exec = attrs.GetFirstExecutionRunId()
			continue
		}
		if err := converter.GetDefaultDataConverter().FromPayloads(attrs.GetInput(), &in); err != nil {
			return in, time.Time{}, corrupt("cannot decode the input of run " + id)
		}
		return in, events[0].GetEventTime().AsTime(), nil
	}
	return in, time.Time{}, corrupt("cannot find the first execution of run " + id)
}

// Inputs implements Service: the input updates the current execution's
// history accepted.
func (t *Temporal) Inputs(ctx context.Context, id string) ([]contract.InputRequest, error) {
	ctx, cancel := t.call(ctx)
	defer cancel()
	var out []contract.InputRequest
	var token []byte
	for {
		resp, err := t.c.WorkflowService().GetWorkflowExecutionHistory(ctx, &workflowservice.GetWorkflowExecutionHistoryRequest{
			Namespace: t.cfg.Namespace, Execution: &commonpb.WorkflowExecution{WorkflowId: id}, NextPageToken: token,
		})
		if err != nil {
			return nil, classify(err)
		}
		for _, e := range resp.GetHistory().GetEvents() {
			req := e.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest().GetInput()
			if req.GetName() != contract.UpdateInput {
				continue
			}
			var in contract.InputRequest
			if converter.GetDefaultDataConverter().FromPayloads(req.GetArgs(), &in) == nil {
				out = append(out, in)
			}
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			return out, nil
		}
	}
}

// List implements Service.
func (t *Temporal) List(ctx context.Context, f Filter, size int, token []byte) (Page, error) {
	ctx, cancel := t.call(ctx)
	defer cancel()
	resp, err := t.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: f.Query(), PageSize: int32(min(size, math.MaxInt32)), NextPageToken: token,
	})
	if err != nil {
		return Page{}, classify(err)
	}
	page := Page{Next: resp.GetNextPageToken()}
	for _, e := range resp.GetExecutions() {
		page.Runs = append(page.Runs, infoOf(e))
	}
	return page, nil
}

// Count implements Service.
func (t *Temporal) Count(ctx context.Context, f Filter) (int64, error) {
	ctx, cancel := t.call(ctx)
	defer cancel()
	resp, err := t.c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: t.cfg.Namespace, Query: f.Query()})
	if err != nil {
		return 0, classify(err)
	}
	return resp.GetCount(), nil
}

// Health implements Service.
func (t *Temporal) Health(ctx context.Context) error {
	_, err := t.c.CheckHealth(ctx, &client.CheckHealthRequest{})
	return err
}

// defaultPartitions is Temporal's default number of task queue partitions.
// DescribeTaskQueue reports the pollers of one partition, and a worker polls
// any of them, so Pollers looks at each until it finds one.
const defaultPartitions = 4

// Pollers implements Service: the workers seen polling the workflow task
// queue in the last two minutes.
func (t *Temporal) Pollers(ctx context.Context) (int, error) {
	for p := range defaultPartitions {
		name := t.cfg.TaskQueue
		if p > 0 {
			name = fmt.Sprintf("/_sys/%s/%d", t.cfg.TaskQueue, p)
		}
		resp, err := t.c.DescribeTaskQueue(ctx, name, enums.TASK_QUEUE_TYPE_WORKFLOW)
		if err != nil {
			if p > 0 {
				break // fewer partitions than the default
			}
			return 0, err
		}
		recent := 0
		for _, pi := range resp.GetPollers() {
			if at := pi.GetLastAccessTime(); at != nil && time.Since(at.AsTime()) < 2*time.Minute {
				recent++
			}
		}
		if recent > 0 {
			return recent, nil
		}
	}
	return 0, nil
}

// StartIngest implements Ingestions. Temporal's ALLOW_DUPLICATE_FAILED_ONLY
// counts a terminated, cancelled or timed-out run as failed, and a
// completed run as done: the attachment's status is being recorded by it.
func (t *Temporal) StartIngest(ctx context.Context, in contract.IngestInput, fresh bool) error {
	opts := client.StartWorkflowOptions{
		ID:                       contract.IngestWorkflowID(in.VectorStoreID, in.FileID),
		TaskQueue:                t.cfg.TaskQueue,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		StaticSummary:            "ingest " + in.FileID + " into " + in.VectorStoreID,
		Memo:                     map[string]any{MemoOwner: in.Owner},
	}
	if fresh {
		opts.WorkflowIDConflictPolicy = enums.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING
		opts.WorkflowIDReusePolicy = enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE
	}
	ctx, cancel := t.call(ctx)
	defer cancel()
	_, err := t.c.ExecuteWorkflow(ctx, opts, contract.IngestWorkflow, in)
	if err = classify(err); errors.Is(err, ErrAlreadyStarted) {
		// Its last run completed, recording the status.
		return nil
	}
	return err
}

// AwaitIngest implements Ingestions.
func (t *Temporal) AwaitIngest(ctx context.Context, run string) (contract.IngestResult, error) {
	var res contract.IngestResult
	return res, classify(t.c.GetWorkflow(ctx, run, "").Get(ctx, &res))
}

// CancelIngest implements Ingestions.
func (t *Temporal) CancelIngest(ctx context.Context, workflowID string) error {
	ctx, cancel := t.call(ctx)
	defer cancel()
	if err := classify(t.c.CancelWorkflow(ctx, workflowID, "")); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}
