package a2aapi

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// The A2A operations (spec §3.1), each as both bindings call it: with
// its request decoded, answering the result object or an error.

// op is one unary operation.
type op func(h *Handlers, ctx context.Context, c caller, params json.RawMessage) (any, error)

// typed makes fn, which takes its request decoded, an op: params that do
// not decode are InvalidParams (a JSON-RPC request's params; the
// HTTP+JSON binding's body, path and query made one).
func typed[T any](fn func(h *Handlers, ctx context.Context, c caller, req T) (any, error)) op {
	return func(h *Handlers, ctx context.Context, c caller, params json.RawMessage) (any, error) {
		var req T
		if len(params) > 0 {
			if err := json.Unmarshal(params, &req); err != nil {
				return nil, errInvalidParams.with("params: " + err.Error())
			}
		}
		return fn(h, ctx, c, req)
	}
}

// unary are the unary operations by their JSON-RPC method names (spec
// §9.4; the SDK's JsonRpcTransport, dist/client/index.js:5858-5950).
var unary = map[string]op{
	"SendMessage":                      typed((*Handlers).sendMessage),
	"GetTask":                          typed((*Handlers).getTask),
	"ListTasks":                        typed((*Handlers).listTasks),
	"CancelTask":                       typed((*Handlers).cancelTask),
	"CreateTaskPushNotificationConfig": typed((*Handlers).createPush),
	"GetTaskPushNotificationConfig":    typed((*Handlers).getPush),
	"ListTaskPushNotificationConfigs":  typed((*Handlers).listPush),
	"DeleteTaskPushNotificationConfig": typed((*Handlers).deletePush),
	"GetExtendedAgentCard":             typed((*Handlers).extendedCard),
}

// sendMessage is SendMessage (§3.1.1): it starts or answers a task and,
// unless configuration.returnImmediately, waits until the task ends or
// asks for input (§3.2.2); the answer is SendMessageResponse's task.
func (h *Handlers) sendMessage(ctx context.Context, c caller, req SendMessageRequest) (any, error) {
	s, err := h.send(ctx, c, &req, true)
	if err != nil {
		return nil, err
	}
	var history *int32
	if cfg := req.Configuration; cfg != nil {
		history = cfg.HistoryLength
	}
	if req.Configuration == nil || !req.Configuration.ReturnImmediately {
		wctx, cancel := h.bounded(ctx)
		err := h.wait(wctx, s)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	t, _, err := h.task(ctx, c, s.id, history)
	if err != nil {
		return nil, err
	}
	withHook(&t, s.hook)
	return StreamResponse{Task: &t}, nil
}

// withHook puts the run's own webhook, with its secret, in t's metadata:
// the one answer that shows the secret.
func withHook(t *Task, hook *wire.RunWebhook) {
	if hook != nil {
		t.Metadata = map[string]any{"longhaul": map[string]any{"webhook": hook}}
	}
}

// getTask is GetTask (§3.1.3).
func (h *Handlers) getTask(ctx context.Context, c caller, req TaskRequest) (any, error) {
	if req.ID == "" {
		return nil, errInvalidParams.with("id: required")
	}
	t, _, err := h.task(ctx, c, req.ID, req.HistoryLength)
	return t, err
}

// listTasks is ListTasks (§3.1.4).
func (h *Handlers) listTasks(ctx context.Context, c caller, req ListTasksRequest) (any, error) {
	return h.list(ctx, c, req)
}

// cancelTask is CancelTask (§3.1.5): the task once it has stopped.
func (h *Handlers) cancelTask(ctx context.Context, c caller, req TaskRequest) (any, error) {
	if req.ID == "" {
		return nil, errInvalidParams.with("id: required")
	}
	wctx, cancel := h.bounded(ctx)
	defer cancel()
	if err := h.cancel(wctx, c, req.ID); err != nil {
		return nil, err
	}
	t, _, err := h.task(ctx, c, req.ID, req.HistoryLength)
	return t, err
}

// maxPushConfigs bounds the push notification configs of one task.
const maxPushConfigs = 10

// createPush is CreateTaskPushNotificationConfig (§3.1.7; a2a.proto
// rpc CreateTaskPushNotificationConfig): a webhook of the task's run, to
// which every event of the run from now on goes. The answer's token is
// the config's Standard Webhooks signing secret (whsec_…), shown only
// here; the id is Longhaul's.
func (h *Handlers) createPush(ctx context.Context, c caller, req TaskPushNotificationConfig) (any, error) {
	if req.TaskID == "" {
		return nil, errInvalidParams.with("taskId: required")
	}
	st, _, err := h.read(ctx, c, req.TaskID)
	if err != nil {
		return nil, err
	}
	if err := h.checkPush(req, "params"); err != nil {
		return nil, err
	}
	if runweb.Finished(st.Status) {
		return nil, errUnsupported.with("task " + req.TaskID + " has finished (" + st.Status + "); it sends no more notifications")
	}
	all, err := h.Webhooks.RunWebhooks(ctx, c.p.User.Key(), req.TaskID)
	if err != nil {
		return nil, err
	}
	if len(all) >= maxPushConfigs {
		return nil, errInvalidParams.with("task " + req.TaskID + " has " + strconv.Itoa(len(all)) + " push notification configs already, the most it keeps; delete one first")
	}
	w, err := h.Webhooks.RunWebhook(ctx, c.p.User.Key(), req.TaskID, req.URL)
	if err != nil {
		return nil, err
	}
	return TaskPushNotificationConfig{ID: w.ID, TaskID: req.TaskID, URL: w.URL, Token: w.Secret}, nil
}

// getPush is GetTaskPushNotificationConfig (§3.1.8).
func (h *Handlers) getPush(ctx context.Context, c caller, req PushConfigRequest) (any, error) {
	return h.pushConfigByID(ctx, c, req.TaskID, req.ID)
}

// listPush is ListTaskPushNotificationConfigs (§3.1.9).
func (h *Handlers) listPush(ctx context.Context, c caller, req PushConfigRequest) (any, error) {
	all, err := h.pushConfigs(ctx, c, req.TaskID)
	return ListPushConfigsResponse{Configs: all}, err
}

// deletePush is DeleteTaskPushNotificationConfig (§3.1.10): the webhook
// is deleted, and no event goes to it any more; the answer is empty
// (google.protobuf.Empty).
func (h *Handlers) deletePush(ctx context.Context, c caller, req PushConfigRequest) (any, error) {
	if _, err := h.pushConfigByID(ctx, c, req.TaskID, req.ID); err != nil {
		return nil, err
	}
	ok, err := h.Webhooks.DeleteRunWebhook(ctx, c.p.User.Key(), req.TaskID, req.ID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errTaskNotFound.with("task " + req.TaskID + " has no push notification config " + req.ID)
	}
	return struct{}{}, nil
}

// extendedCard is GetExtendedAgentCard (§3.1.11): the agent's card as
// the authenticated caller sees it (the skills it may use).
func (h *Handlers) extendedCard(_ context.Context, c caller, _ struct{}) (any, error) {
	a, _ := h.Catalog.AgentFor(c.agent, c.p.User)
	return AgentCardOf(h.Catalog, a, c.p.User, c.base), nil
}

// callerOf is the caller of an A2A route: its principal (s.auth put it
// there) and the agent of the path, which it must be allowed to see.
func (h *Handlers) callerOf(c *fiber.Ctx) (caller, error) {
	// Fiber's strings are the request buffer's, which the next request
	// reuses; a stream outlives its handler, so they are copied.
	p := web.Principal(c)
	p.Name = strings.Clone(p.Name)
	agent := strings.Clone(c.Params("agent"))
	if _, ok := h.Catalog.AgentFor(agent, p.User); !ok {
		e := errInvalidParams.with("no agent " + agent)
		e.Status = fiber.StatusNotFound
		return caller{}, e
	}
	return caller{p: p, agent: agent, base: strings.Clone(c.BaseURL())}, nil
}

// checkVersion refuses a request for another A2A version than 1.0 (spec
// §3.6.2: the A2A-Version header; an empty one is 0.3). The SDK sends it
// with every request (dist/client/index.js:5644, withNormalizedHeaders).
func checkVersion(c *fiber.Ctx) error {
	v := c.Get("A2A-Version")
	if v == "" {
		v = c.Query("A2A-Version")
	}
	if v == "1.0" || v == "1" {
		return nil
	}
	if v == "" {
		v = "0.3 (no A2A-Version header)"
	}
	return errVersionUnsupported.with("A2A version " + v + " is not supported; this agent speaks A2A " + ProtocolVersion)
}
