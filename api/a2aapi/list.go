package a2aapi

import (
	"context"
	"errors"
	"time"

	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/runs"
)

// statusOfState is the run status an A2A state filter asks for; the
// states no run is in (SUBMITTED, REJECTED, AUTH_REQUIRED) are not here.
var statusOfState = map[string]string{
	StateWorking: contract.StatusRunning, StateInputRequired: contract.StatusWaiting,
	StateCompleted: contract.StatusCompleted, StateFailed: contract.StatusFailed, StateCanceled: contract.StatusCancelled,
}

// The page sizes of ListTasks.
const (
	defaultPageSize = 50
	maxPageSize     = 100
)

// list is the caller's tasks of its agent (its runs, through
// runs.Filter and Temporal's visibility, open runs first, newest first),
// optionally of one context or state. includeArtifacts reads each task
// whole, as GetTask does.
func (h *Handlers) list(ctx context.Context, c caller, req ListTasksRequest) (ListTasksResponse, error) {
	out := ListTasksResponse{Tasks: []Task{}}
	size := defaultPageSize
	if req.PageSize != nil {
		if *req.PageSize < 1 || *req.PageSize > maxPageSize {
			return out, errInvalidParams.with("pageSize: must be 1 to 100")
		}
		size = int(*req.PageSize)
	}
	if req.StatusTimestampAfter != "" {
		// Temporal's visibility, which lists runs, keeps no time of a
		// run's last status change to filter by.
		return out, errInvalidParams.with("statusTimestampAfter: not supported; filter by contextId or status")
	}
	f := runs.Filter{Owner: c.p.Name, Agent: c.agent}
	switch req.Status {
	case "", "TASK_STATE_UNSPECIFIED", "UNRECOGNIZED":
		// Any state. The SDK's ListTasksRequest.toJSON writes a status
		// the caller left unset as "UNRECOGNIZED" (ts-proto's
		// taskStateToJSON of undefined), so that is no filter either.
	case StateSubmitted, StateRejected, StateAuthRequired:
		// No run is ever in those states.
		return out, nil
	default:
		st, ok := statusOfState[req.Status]
		if !ok {
			return out, errInvalidParams.with("status: not a TaskState")
		}
		f.Status = st
	}
	if req.ContextID != "" {
		f.Chat = identity.ChatKey(c.p.User.Key(), req.ContextID)
	}
	if !runs.LiteralOK(f.Owner) || !runs.LiteralOK(f.Chat) || !runs.LiteralOK(f.Agent) {
		return out, errInvalidParams.with("contextId: cannot be matched by a visibility query (no quotes, backslashes or control characters)")
	}
	query := f.Query()
	var token []byte
	if req.PageToken != "" {
		var ok bool
		if token, ok = web.OpenPageToken(query, req.PageToken); !ok {
			return out, errInvalidParams.with("pageToken: not a token this agent returned for this caller and these filters")
		}
	}
	page, err := h.Runs.Service.List(ctx, f, size, token)
	if err != nil {
		return out, listError(err)
	}
	total, err := h.Runs.Service.Count(ctx, f)
	if err != nil {
		return out, listError(err)
	}
	for _, e := range page.Runs {
		t, err := h.listed(ctx, c, e, req)
		if err != nil {
			return out, err
		}
		out.Tasks = append(out.Tasks, t)
	}
	if len(page.Next) > 0 {
		out.NextPageToken = web.SealPageToken(query, page.Next)
	}
	out.PageSize, out.TotalSize = int32(size), int32(total)
	return out, nil
}

// listed is one run of a listing as a task: from its visibility record,
// or read whole when the request includes artifacts.
func (h *Handlers) listed(ctx context.Context, c caller, e runs.Info, req ListTasksRequest) (Task, error) {
	if req.IncludeArtifacts != nil && *req.IncludeArtifacts {
		t, _, err := h.task(ctx, c, e.ID, req.HistoryLength)
		return t, err
	}
	at := time.Now().UTC()
	if e.Closed != nil {
		at = *e.Closed
	} else if e.Started != nil {
		at = *e.Started
	}
	status := runweb.StatusOf(e.Attrs[contract.SearchAttrStatus.GetName()], e)
	return Task{
		ID: e.ID, ContextID: identity.ClientChatID(c.p.User.Key(), e.Attrs[contract.SearchAttrChat.GetName()]),
		Status: TaskStatus{State: StateOf(status), Timestamp: &at},
	}, nil
}

// listError is a failed listing in A2A's words.
func listError(err error) error {
	if errors.Is(err, runs.ErrInvalid) {
		return errInternal.with("the tasks query was refused: " + err.Error())
	}
	return errInternal.with("cannot list tasks: " + err.Error())
}

// pushConfigs are the push notification configs of caller's task id:
// its run's own webhooks (the one the message that started it set, those
// added since), without their secrets.
func (h *Handlers) pushConfigs(ctx context.Context, c caller, id string) ([]TaskPushNotificationConfig, error) {
	if id == "" {
		return nil, errInvalidParams.with("taskId: required")
	}
	if _, _, err := h.read(ctx, c, id); err != nil {
		return nil, err
	}
	out := []TaskPushNotificationConfig{}
	if h.Webhooks == nil {
		return out, nil
	}
	ws, err := h.Webhooks.RunWebhooks(ctx, c.p.User.Key(), id)
	if err != nil {
		return nil, err
	}
	for _, w := range ws {
		out = append(out, TaskPushNotificationConfig{ID: w.ID, TaskID: id, URL: w.URL})
	}
	return out, nil
}

// pushConfigByID is caller's task id's push config cid.
func (h *Handlers) pushConfigByID(ctx context.Context, c caller, id, cid string) (TaskPushNotificationConfig, error) {
	all, err := h.pushConfigs(ctx, c, id)
	if err != nil {
		return TaskPushNotificationConfig{}, err
	}
	for _, pc := range all {
		if pc.ID == cid {
			return pc, nil
		}
	}
	return TaskPushNotificationConfig{}, errTaskNotFound.with("task " + id + " has no push notification config " + cid)
}
