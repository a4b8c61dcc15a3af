// Package a2aapi serves Longhaul's agents over the A2A protocol v1.0
// (a2a-protocol.org; the normative specification/a2a.proto of
// github.com/a2aproject/A2A at v1.0.0): an agent card per agent and the
// catalog's, and each agent's JSON-RPC and HTTP+JSON bindings under
// /a2a/{agent}. An A2A task is a Longhaul run (its id is the run's id) and
// its contextId the run's metadata chat_id, so a context's tasks are one
// chat's runs under the runs API's multitask strategy (enqueue). Every
// start goes through the runs gate (runs.DoorA2A); runs are read for
// their owner through api/runweb, followed through runs.Batches, and
// answered through runweb's input path, as the runs API does. The pure
// converters from run state and events to A2A objects are convert.go's;
// the error mapping errors.go's.
package a2aapi

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"github.com/longhaul-dev/longhaul/skills"
)

// Handlers serves the A2A routes.
type Handlers struct {
	Runs    *runweb.Runs
	Gate    *runs.Gate
	Streams *sse.Streams
	Catalog *skills.Catalog
	// Webhooks keeps a task's push notification configs as its run's own
	// webhooks; nil refuses push configs.
	Webhooks PushWebhooks
	// Wait bounds how long a blocking SendMessage waits for its task to
	// end or ask for input; zero is ten minutes.
	Wait time.Duration
}

// PushWebhooks keeps tasks' push notification configs: each is one of
// its run's own webhooks (webhooksapi.Handlers is one), which the run's
// events go to from the moment it exists (activities.WebhookTargets reads
// them at each event).
type PushWebhooks interface {
	runweb.Webhooks
	// RunWebhooks lists owner's webhooks of run, without their secrets.
	RunWebhooks(ctx context.Context, owner, run string) ([]wire.RunWebhook, error)
	// DeleteRunWebhook deletes owner's webhook id of run; false when run
	// has none of that id.
	DeleteRunWebhook(ctx context.Context, owner, run, id string) (bool, error)
}

// caller is who asks, of which agent.
type caller struct {
	p     identity.Principal
	agent string
	// base is the server's URL as the request reached it.
	base string
}

// started is a task a message started or answered, and where its events
// to follow begin.
type started struct {
	id, contextID string
	// text is the message of a new task.
	text string
	from runs.Cursor
	hook *wire.RunWebhook
}

// send starts a task for message m, or answers the task it names (spec
// §3.4.3), and says where its events go on from.
func (h *Handlers) send(ctx context.Context, c caller, req *SendMessageRequest, quiet bool) (started, error) {
	m := req.Message
	if m == nil {
		return started{}, errInvalidParams.with("message: required")
	}
	if m.Role != RoleUser {
		return started{}, errInvalidParams.with("message.role: must be ROLE_USER")
	}
	if m.TaskID != "" {
		return h.answer(ctx, c, m)
	}
	text, err := TextOf(m)
	if err != nil {
		return started{}, err
	}
	contextID := m.ContextID
	if contextID == "" {
		// Spec §3.4.1: an agent may make the context and must return it.
		contextID = uuid.NewString()
	}
	r := runs.Request{
		ID: runs.NewRunID(), Agent: c.agent, User: c.p.User, Quiet: quiet, Door: runs.DoorA2A,
		Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: text}},
		Metadata: map[string]string{MetaContext: contextID},
	}
	if err := h.Gate.Resolve(&r); err != nil {
		return started{}, runweb.Refused(err)
	}
	out, err := h.Gate.Multitask(ctx, runs.Multitask{Strategy: runs.DefaultRunsMultitask, Chat: r.ChatKey(), Owner: r.User.Key(), Text: text, Prepend: true})
	if err != nil {
		return started{}, runweb.Refused(err)
	}
	r.Follows = out.Follows
	hook, err := h.pushConfig(ctx, req.Configuration, &r)
	if err != nil {
		return started{}, err
	}
	if err := runweb.StartWithWebhook(ctx, h.Gate, h.Webhooks, hook, r); err != nil {
		return started{}, err
	}
	return started{id: r.ID, contextID: contextID, text: text, hook: hook}, nil
}

// pushConfig makes the push notification config of a message that starts
// a task the run's own webhook (runs.Request.Webhook): Longhaul delivers
// its run.* events to it, signed with the webhook's secret (Standard
// Webhooks), which the answer's task carries once in its metadata.
func (h *Handlers) pushConfig(ctx context.Context, cfg *SendMessageConfiguration, r *runs.Request) (*wire.RunWebhook, error) {
	if cfg == nil || cfg.PushConfig == nil {
		return nil, nil
	}
	if err := h.checkPush(*cfg.PushConfig, "configuration.taskPushNotificationConfig"); err != nil {
		return nil, err
	}
	var hook *wire.RunWebhook
	var err error
	if r.Webhook, hook, err = runweb.RunWebhook(ctx, h.Webhooks, r.User.Key(), r.ID, cfg.PushConfig.URL); err != nil {
		return nil, err
	}
	r.Metadata[metaPushURL] = cfg.PushConfig.URL
	return hook, nil
}

// checkPush refuses a push notification config Longhaul cannot honour: no
// URL, or a token or authentication for Longhaul to send: deliveries
// carry a signature, not the caller's credentials.
func (h *Handlers) checkPush(pc TaskPushNotificationConfig, field string) error {
	switch {
	case pc.URL == "":
		return errInvalidParams.with(field + ".url: required")
	case pc.Token != "" || pc.Authentication != nil:
		return errInvalidParams.with(field + ": Longhaul signs its deliveries (Standard Webhooks, with a secret of each config's own) and sends no token or credentials; leave token and authentication out")
	case h.Webhooks == nil:
		return errPushNotSupported.with("this server keeps no webhooks")
	}
	return nil
}

// answer hands a message to the task it names, which must wait for a
// person (INPUT_REQUIRED): its text or {"approve": …} data part is the
// input POST /v1/runs/{id}/input takes, delivered the same way.
func (h *Handlers) answer(ctx context.Context, c caller, m *Message) (started, error) {
	id := m.TaskID
	st, in, err := h.read(ctx, c, id)
	if err != nil {
		return started{}, err
	}
	contextID := in.Metadata[MetaContext]
	switch {
	case m.ContextID != "" && m.ContextID != contextID:
		// Spec §3.4.3: a contextId that is not the task's is refused.
		return started{}, errInvalidParams.with("message.contextId: task " + id + " is of another context")
	case runweb.Finished(st.Status):
		return started{}, errUnsupported.with("task " + id + " has finished (" + st.Status + "); it takes no more messages")
	case st.Status != contract.StatusWaiting:
		return started{}, errUnsupported.with("task " + id + " is working; it takes a message only when it is INPUT_REQUIRED")
	case st.Waiting != nil && st.Waiting.Kind == contract.WaitAuth:
		return started{}, errUnsupported.with("task " + id + " is AUTH_REQUIRED: " + AuthText(st.Waiting.Server, st.Waiting.URL))
	}
	approve, text, err := InputOf(m)
	if err != nil {
		return started{}, err
	}
	last, err := h.Runs.Service.LastOffset(ctx, id)
	if err != nil {
		return started{}, web.Unavailable("cannot read run " + id + ": " + err.Error())
	}
	input := wire.RunInput{Approve: approve, Text: text}
	if _, err := h.Runs.Deliver(ctx, id, input.InputRequest()); err != nil {
		return started{}, err
	}
	return started{id: id, contextID: contextID, from: runs.After(last)}, nil
}

// read is caller's run id (another principal's, or another agent's, is
// not found) and how it began (its first input).
func (h *Handlers) read(ctx context.Context, c caller, id string) (contract.RunState, runs.Begun, error) {
	st, info, err := h.Runs.ReadRun(ctx, id, c.p.Name)
	if err != nil {
		return st, runs.Begun{}, err
	}
	if st.Agent != c.agent {
		return st, runs.Begun{}, errTaskNotFound.with("no task " + id + " of agent " + c.agent)
	}
	st.Status = runweb.StatusOf(st.Status, info)
	in, at, err := h.Runs.Service.FirstInput(ctx, id)
	if err != nil {
		return st, runs.Begun{}, web.Unavailable("cannot read run " + id + ": " + err.Error())
	}
	return st, runs.Begun{AgentInput: in, At: at}, nil
}

// task is caller's run id as an A2A task, and the offset of the last
// event its artifacts and history were read from.
func (h *Handlers) task(ctx context.Context, c caller, id string, historyLength *int32) (Task, int64, error) {
	st, in, err := h.read(ctx, c, id)
	if err != nil {
		return Task{}, 0, err
	}
	log, err := h.Runs.ReadLog(ctx, id)
	if err != nil {
		return Task{}, 0, err
	}
	var last int64
	if len(log) > 0 {
		last = log[len(log)-1].Offset
	}
	contextID := in.Metadata[MetaContext]
	return TaskOf(id, contextID, st, log, userMessage(id, contextID, in.Messages), historyLength, time.Now().UTC()), last, nil
}

// wait follows run s.id from s.from until it ends or waits for a person
// (a blocking send, spec §3.2.2), as long as ctx lets it.
func (h *Handlers) wait(ctx context.Context, s started) error {
	f := h.Runs.Service.Follow(s.id)
	defer f.Release()
	waiting := false
	for b, err := range runs.Batches(ctx, f, s.from, nil) {
		if err != nil {
			if ctx.Err() != nil {
				// Waited long enough: the task is answered as it stands.
				return nil
			}
			return web.Unavailable("lost the events of run " + s.id + ": " + err.Error())
		}
		for _, it := range b.Items {
			switch it.Type {
			case longhaul.EventApprovalRequired, longhaul.EventClientToolCalls, longhaul.EventAuthRequired:
				waiting = true
			case longhaul.EventApproval, longhaul.EventAuth:
				waiting = false
			}
		}
		if b.Done || waiting {
			return nil
		}
	}
	return nil
}

// cancel asks caller's task id to stop and waits, as long as ctx lets it,
// until it has.
func (h *Handlers) cancel(ctx context.Context, c caller, id string) error {
	st, _, err := h.read(ctx, c, id)
	if err != nil {
		return err
	}
	if runweb.Finished(st.Status) {
		return errTaskNotCancelable.with("task " + id + " has finished (" + st.Status + ")")
	}
	last, err := h.Runs.Service.LastOffset(ctx, id)
	if err != nil {
		return web.Unavailable("cannot read run " + id + ": " + err.Error())
	}
	if err := h.Runs.Service.Cancel(ctx, id); err != nil {
		if errors.Is(err, runs.ErrNotFound) {
			return errTaskNotCancelable.with("task " + id + " has finished")
		}
		return web.Unavailable("cannot cancel run " + id + ": " + err.Error())
	}
	return h.waitDone(ctx, id, runs.After(last))
}

// waitDone follows run id from pos until its log ends.
func (h *Handlers) waitDone(ctx context.Context, id string, pos runs.Cursor) error {
	f := h.Runs.Service.Follow(id)
	defer f.Release()
	for b, err := range runs.Batches(ctx, f, pos, nil) {
		if err != nil || b.Done {
			return nil
		}
	}
	return nil
}

// bounded is ctx for a wait bounded by h.Wait.
func (h *Handlers) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	d := h.Wait
	if d <= 0 {
		d = 10 * time.Minute
	}
	return context.WithTimeout(ctx, d)
}
