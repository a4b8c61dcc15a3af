package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/workflows"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// This file is the native runs API, for long tasks that outlive a request:
// start a run, read it, list a user's runs, follow its events, cancel it and
// answer it when it waits for a person. A run is an AgentWorkflow; its state
// comes from the workflow's state query, its events from its event log (the
// same feed the chat stream reads), its listing from Temporal visibility and
// Longhaul's search attributes.

// Limits of the runs API.
const (
	defaultListLimit = 20
	maxListLimit     = 100
	maxMetadataKeys  = 16
	maxMetadataKey   = 64
	maxMetadataValue = 512
	// inputTimeout bounds the delivery of a person's input to a run.
	inputTimeout = 30 * time.Second
	// memoSummary is the memo field holding a run's summary, so a listing
	// shows it without describing each run.
	memoSummary = "summary"
	// memoOwner is the memo field holding the principal a run was started
	// for.
	memoOwner = "owner"
)

// RunRequest is the body of POST /v1/runs: an agent and either a
// conversation (messages) or one user message (input).
type RunRequest struct {
	Agent    string            `json:"agent"`
	Messages []ChatMessage     `json:"messages,omitempty"`
	Input    *string           `json:"input,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// RunCreated answers POST /v1/runs.
type RunCreated struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	EventsURL string `json:"events_url"`
}

// Run answers GET /v1/runs/{id}. Times are RFC 3339, as in events;
// FinishedAt is null while the run goes on.
type Run struct {
	ID     string `json:"id"`
	Agent  string `json:"agent"`
	Status string `json:"status"`
	// Mode is how the run went: chat, agentic, skill or task.
	Mode       string     `json:"mode,omitempty"`
	Dispatch   string     `json:"dispatch,omitempty"`
	Skill      string     `json:"skill,omitempty"`
	CreatedAt  *time.Time `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Turns      int        `json:"turns"`
	// Plans are every plan revision, the current one last; Steps are the
	// steps of the plan being (or last) carried out.
	Plans   []workflows.PlanRevision `json:"plans"`
	Steps   []longhaul.PlanStep      `json:"steps"`
	Reviews []longhaul.ReviewData    `json:"reviews"`
	Waiting *workflows.Waiting       `json:"waiting"`
	Result  string                   `json:"result"`
	Error   string                   `json:"error,omitempty"`
	Usage   longhaul.Usage           `json:"usage"`
	// Continued is how many times the run continued as new to keep its
	// history bounded.
	Continued int    `json:"continued"`
	EventsURL string `json:"events_url"`
}

// RunList answers GET /v1/runs. NextPageToken, when set, is the page_token
// of the next page.
type RunList struct {
	Object        string       `json:"object"`
	Data          []RunSummary `json:"data"`
	NextPageToken string       `json:"next_page_token,omitempty"`
}

// RunSummary is one run of a RunList.
type RunSummary struct {
	ID         string     `json:"id"`
	Agent      string     `json:"agent"`
	Status     string     `json:"status"`
	CreatedAt  *time.Time `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Summary    string     `json:"summary,omitempty"`
}

// RunCancelling answers POST /v1/runs/{id}/cancel.
type RunCancelling struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// RunInput is the body of POST /v1/runs/{id}/input: an approval decision or
// a text reply, not both.
type RunInput struct {
	Approve *bool   `json:"approve,omitempty"`
	Text    *string `json:"text,omitempty"`
}

// validate reports the first problem with a run request.
func (r *RunRequest) validate() error {
	if strings.TrimSpace(r.Agent) == "" {
		return errors.New("agent: required")
	}
	switch {
	case r.Messages != nil && r.Input != nil:
		return errors.New("send either messages or input, not both")
	case r.Input != nil:
		if strings.TrimSpace(*r.Input) == "" {
			return errors.New("input: must not be empty")
		}
	case r.Messages == nil:
		return errors.New("messages or input: required")
	default:
		chat := ChatRequest{Model: r.Agent, Messages: r.Messages}
		if err := chat.validate(); err != nil {
			return err
		}
	}
	if len(r.Metadata) > maxMetadataKeys {
		return fmt.Errorf("metadata: at most %d keys", maxMetadataKeys)
	}
	for k, v := range r.Metadata {
		if k == "" || len(k) > maxMetadataKey {
			return fmt.Errorf("metadata: keys must have 1 to %d characters", maxMetadataKey)
		}
		if len(v) > maxMetadataValue {
			return fmt.Errorf("metadata[%q]: at most %d characters", k, maxMetadataValue)
		}
	}
	return nil
}

// messages is the conversation the run starts with.
func (r *RunRequest) messages() []longhaul.Message {
	if r.Input != nil {
		return []longhaul.Message{{Role: longhaul.RoleUser, Content: *r.Input}}
	}
	return domainMessages(r.Messages)
}

// validate reports the first problem with a person's input.
func (in *RunInput) validate() error {
	switch {
	case in.Approve != nil && in.Text != nil:
		return errors.New(`send either {"approve": true|false} or {"text": "…"}, not both`)
	case in.Text != nil && strings.TrimSpace(*in.Text) == "":
		return errors.New("text: must not be empty")
	case in.Approve == nil && in.Text == nil:
		return errors.New(`send {"approve": true|false} or {"text": "…"}`)
	}
	return nil
}

func (in *RunInput) request() workflows.InputRequest {
	r := workflows.InputRequest{Approve: in.Approve}
	if in.Text != nil {
		r.Text = *in.Text
	}
	return r
}

// finished reports whether a run status is final.
func finished(status string) bool {
	switch status {
	case workflows.StatusCompleted, workflows.StatusFailed, workflows.StatusCancelled:
		return true
	}
	return false
}

// closedStatus is the status of a closed execution whose own status was left
// open: Temporal terminated it or timed it out, so it never recorded one.
func closedStatus(st enums.WorkflowExecutionStatus) string {
	switch st {
	case enums.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return workflows.StatusCompleted
	case enums.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return workflows.StatusCancelled
	}
	return workflows.StatusFailed
}

// currentSteps are the steps of the plan being carried out (or carried out
// last): the last revision that is active or done.
func currentSteps(plans []workflows.PlanRevision) []longhaul.PlanStep {
	for i := len(plans) - 1; i >= 0; i-- {
		if p := plans[i]; p.Status == workflows.PlanActive || p.Status == workflows.PlanDone {
			return p.Steps
		}
	}
	return nil
}

// nonNil makes an absent list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func eventsURL(id string) string { return "/v1/runs/" + url.PathEscape(id) + "/events" }

// quoteLiteral quotes s as a string literal of Temporal's visibility query
// language. Its parser reads backslash escapes, but SQL visibility writes
// the literal back out for its database, and on SQLite (the embedded
// server) only an escaped single quote survives that round trip: a value
// with a backslash or a double quote never matches. literalOK tells which
// values can be matched.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
}

// literalOK reports whether a value can be matched exactly in a visibility
// query: no backslash, double quote or control character.
func literalOK(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r == '\\' || r == '"' || r < ' ' || r == 0x7f })
}

// listQuery is the visibility query of a user's runs, optionally of one
// agent and in one status. The runs of a chain continued as new are listed
// once, by their open or last execution.
func listQuery(user, agent, status string) string {
	q := []string{
		"WorkflowType = " + quoteLiteral(workflows.AgentWorkflowName),
		workflows.SearchAttrUser.GetName() + " = " + quoteLiteral(user),
		"ExecutionStatus != 'ContinuedAsNew'",
	}
	if agent != "" {
		q = append(q, workflows.SearchAttrAgent.GetName()+" = "+quoteLiteral(agent))
	}
	st := workflows.SearchAttrStatus.GetName()
	switch status {
	case "":
	case workflows.StatusRunning, workflows.StatusWaiting:
		// A terminated run never recorded its end: it is not running.
		q = append(q, st+" = "+quoteLiteral(status), "ExecutionStatus = 'Running'")
	case workflows.StatusFailed:
		q = append(q, "("+st+" = 'failed' OR ExecutionStatus IN ('Failed', 'Terminated', 'TimedOut'))")
	default:
		q = append(q, st+" = "+quoteLiteral(status))
	}
	return strings.Join(q, " AND ")
}

// runStatuses are the statuses a listing may be filtered by.
var runStatuses = []string{workflows.StatusRunning, workflows.StatusWaiting, workflows.StatusCompleted, workflows.StatusFailed, workflows.StatusCancelled}

// summaryOf converts one visibility record.
func summaryOf(e *workflowpb.WorkflowExecutionInfo) RunSummary {
	attrs := e.GetSearchAttributes().GetIndexedFields()
	s := RunSummary{
		ID:         e.GetExecution().GetWorkflowId(),
		Agent:      payloadString(attrs[workflows.SearchAttrAgent.GetName()]),
		Status:     payloadString(attrs[workflows.SearchAttrStatus.GetName()]),
		CreatedAt:  timeOf(e.GetStartTime()),
		FinishedAt: timeOf(e.GetCloseTime()),
		Summary:    payloadString(e.GetMemo().GetFields()[memoSummary]),
	}
	if s.FinishedAt != nil && !finished(s.Status) {
		s.Status = closedStatus(e.GetStatus())
	}
	if s.Status == "" {
		// The run has not recorded its status yet: its first step is queued.
		s.Status = workflows.StatusRunning
	}
	return s
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

// decodeStrict decodes a JSON body into v, refusing unknown fields and
// trailing data: the native API names its mistakes instead of ignoring them.
func decodeStrict(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New("request body is empty")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid JSON body: %s", strings.TrimPrefix(jsonProblem(err), "json: "))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("invalid JSON body: data after the object")
	}
	return nil
}

// createRun starts a run: POST /v1/runs. It answers at once; the run goes
// on without any client.
func (s *Server) createRun(c *fiber.Ctx) error {
	var req RunRequest
	if err := decodeStrict(c.Body(), &req); err != nil {
		return errBadRequest(err.Error())
	}
	if err := req.validate(); err != nil {
		return errBadRequest(err.Error())
	}
	agent, ok := s.catalog.Agent(req.Agent)
	if !ok {
		return errModelNotFound(fmt.Sprintf("the agent %q does not exist; GET /v1/models lists the agents", req.Agent))
	}
	msgs := req.messages()
	in := workflows.AgentInput{
		Agent:           agent.ID,
		Messages:        msgs,
		User:            principal(c).User,
		ModelTimeout:    s.cfg.ModelTimeout,
		HistoryLimit:    s.cfg.HistoryLimit,
		ApprovalTimeout: s.cfg.ApprovalTimeout,
		Metadata:        req.Metadata,
	}
	id := "run-" + uuid.NewString()
	if _, err := s.start(c.UserContext(), id, in, summarize(msgs, 60)); err != nil {
		return err
	}
	c.Set(HeaderRunID, id)
	return c.Status(fiber.StatusAccepted).JSON(RunCreated{ID: id, Status: workflows.StatusRunning, EventsURL: eventsURL(id)})
}

// runID is the run named in the path.
func runID(c *fiber.Ctx) (string, error) {
	id, err := url.PathUnescape(c.Params("id"))
	if err != nil || id == "" {
		return "", errBadRequest("bad run id")
	}
	// fiber's strings point into the request's buffer, which is reused once
	// the handler returns; an event stream outlives it.
	return strings.Clone(id), nil
}

// runState reads the state of run id for the caller; a run of another user
// is reported as unknown. It works for finished runs too, while a worker
// runs to answer the query.
func (s *Server) runState(c *fiber.Ctx, id string) (workflows.RunState, error) {
	ctx, cancel := s.temporalCall(c.UserContext())
	defer cancel()
	var st workflows.RunState
	v, err := s.temporal.QueryWorkflow(ctx, id, "", workflows.QueryState)
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return st, errNotFound("no run " + id)
	case err != nil:
		return st, errUnavailable("cannot read run " + id + ": " + err.Error())
	}
	if err := v.Get(&st); err != nil {
		return st, errInternal("cannot decode the state of run " + id)
	}
	if st.User != principal(c).Name {
		return workflows.RunState{}, errNotFound("no run " + id)
	}
	return st, nil
}

// getRun answers GET /v1/runs/{id}: the run's state with its timings.
func (s *Server) getRun(c *fiber.Ctx) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	st, err := s.runState(c, id)
	if err != nil {
		return err
	}
	ctx, cancel := s.temporalCall(c.UserContext())
	defer cancel()
	desc, err := s.temporal.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return errUnavailable("cannot describe run " + id + ": " + err.Error())
	}
	info := desc.GetWorkflowExecutionInfo()
	created, closed := timeOf(info.GetStartTime()), timeOf(info.GetCloseTime())
	if !st.StartedAt.IsZero() {
		// The run continued as new: the current execution started later.
		created = &st.StartedAt
	}
	if closed != nil && !finished(st.Status) {
		st.Status = closedStatus(info.GetStatus())
		if st.Error == "" {
			st.Error = "the run ended without finishing: " + strings.ToLower(strings.TrimPrefix(info.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"))
		}
	}
	return c.JSON(Run{
		ID: id, Agent: st.Agent, Status: st.Status, Mode: st.Mode, Dispatch: st.Dispatch, Skill: st.Skill,
		CreatedAt: created, FinishedAt: closed, Turns: st.Turns,
		Plans:   nonNil(st.Plans),
		Steps:   nonNil(currentSteps(st.Plans)),
		Reviews: nonNil(st.Reviews),
		Waiting: st.Waiting, Result: st.Result, Error: st.Error, Usage: st.Usage,
		Continued: st.Continued, EventsURL: eventsURL(id),
	})
}

// listRuns answers GET /v1/runs: the caller's runs through Temporal
// visibility. Visibility orders runs without an ORDER BY (which SQL
// visibility refuses): open runs first, newest first, then finished runs,
// the last finished first.
func (s *Server) listRuns(c *fiber.Ctx) error {
	limit, err := listLimit(c)
	if err != nil {
		return err
	}
	status, agent, user := c.Query("status"), c.Query("agent"), principal(c).Name
	if status != "" && !slices.Contains(runStatuses, status) {
		return errBadRequest("status: must be one of " + strings.Join(runStatuses, ", "))
	}
	if strings.Contains(agent, "'") || !literalOK(agent) {
		return errBadRequest("agent: not an agent id (no quotes, backslashes or control characters)")
	}
	query := listQuery(user, agent, status)
	var token []byte
	if v := c.Query("page_token"); v != "" {
		var ok bool
		if token, ok = openPageToken(query, v); !ok {
			return errBadRequest("page_token: not a token this API returned for this user and these filters")
		}
	}
	ctx, cancel := s.temporalCall(c.UserContext())
	defer cancel()
	resp, err := s.temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query:         query,
		PageSize:      int32(limit),
		NextPageToken: token,
	})
	var invalid *serviceerror.InvalidArgument
	switch {
	case errors.As(err, &invalid):
		return errInternal("the runs query was refused: " + invalid.Message)
	case err != nil:
		return errUnavailable("cannot list runs: " + err.Error())
	}
	list := RunList{Object: "list", Data: []RunSummary{}}
	for _, e := range resp.GetExecutions() {
		list.Data = append(list.Data, summaryOf(e))
	}
	if t := resp.GetNextPageToken(); len(t) > 0 {
		list.NextPageToken = sealPageToken(query, t)
	}
	return c.JSON(list)
}

// listLimit is a list's limit query parameter: defaultListLimit when
// absent, a 400 when not from 1 to maxListLimit.
func listLimit(c *fiber.Ctx) (int, error) {
	v := c.Query("limit")
	if v == "" {
		return defaultListLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxListLimit {
		return 0, errBadRequest(fmt.Sprintf("limit: must be a number from 1 to %d", maxListLimit))
	}
	return n, nil
}

// pageCheckLen is the length of the check that starts a page token.
const pageCheckLen = 8

// sealPageToken wraps Temporal's page token with a check of the query it
// belongs to. Temporal answers a damaged token with an internal error that
// clients retry until they give up, and a token of other filters with a
// wrong page; the check turns both into a 400. It is not a secret: the
// query always holds the caller's user, so no token reaches other runs.
func sealPageToken(query string, token []byte) string {
	sum := pageCheck(query, token)
	return base64.RawURLEncoding.EncodeToString(append(sum[:pageCheckLen:pageCheckLen], token...))
}

// openPageToken unwraps a page token sealed for query.
func openPageToken(query, v string) ([]byte, bool) {
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(b) <= pageCheckLen {
		return nil, false
	}
	token := b[pageCheckLen:]
	sum := pageCheck(query, token)
	return token, bytes.Equal(sum[:pageCheckLen], b[:pageCheckLen])
}

func pageCheck(query string, token []byte) [sha256.Size]byte {
	return sha256.Sum256(append([]byte(query+"\x00"), token...))
}

// runEvents streams a run's events as Server-Sent Events: GET
// /v1/runs/{id}/events. Each durable event is one frame whose id is its
// offset; the text of a running model call comes as content_delta frames
// whose id is "<offset>:<bytes>" (":<attempt>" after it on a retry): the
// durable offset the call follows and how much of its text the client has.
// So a client resumes with Last-Event-ID (or ?after=) mid-answer, on any API
// process, and misses or repeats nothing. The stream ends after the done
// event; a client that leaves never stops the run.
func (s *Server) runEvents(c *fiber.Ctx) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	pos, err := resumePosition(c)
	if err != nil {
		return err
	}
	if _, err := s.runState(c, id); err != nil {
		return err
	}
	release, err := s.acquireStream(principal(c).Name)
	if err != nil {
		return err
	}
	c.Set(HeaderRunID, id)
	s.sendSSE(c, "runs", func(sw *sseWriter) { s.streamEvents(sw, id, pos) }, release)
	return nil
}

// resumePosition is where a client wants the stream to go on: the
// Last-Event-ID header, else the after query parameter, else the start.
func resumePosition(c *fiber.Ctx) (cursor, error) {
	name, v := "Last-Event-ID", c.Get("Last-Event-ID")
	if v == "" {
		name, v = "after", c.Query("after")
	}
	if v == "" {
		return cursor{}, nil
	}
	pos, ok := parsePosition(strings.TrimSpace(v))
	if !ok {
		return cursor{}, errBadRequest(name + ": must be an event id: an offset (a whole number, 0 or more), or offset:bytes[:attempt] from a content_delta")
	}
	return pos, nil
}

// parsePosition reads an event id: "57", "57:1234" or "57:1234:2".
func parsePosition(v string) (cursor, bool) {
	parts := strings.Split(v, ":")
	if len(parts) > 3 {
		return cursor{}, false
	}
	var n [3]int64
	for i, p := range parts {
		x, err := strconv.ParseInt(p, 10, 64)
		if err != nil || x < 0 || (i == 1 && x > math.MaxInt32) || (i == 2 && (x < 1 || x > 1000)) {
			return cursor{}, false
		}
		n[i] = x
	}
	pos := cursor{after: n[0], bytes: int(n[1])}
	if pos.bytes > 0 {
		pos.attempt = max(int(n[2]), 1)
	}
	return pos, true
}

// positionID is the SSE id of an item: the offset of a durable event, or
// the position in the running call's text of an ephemeral one; empty for
// tool progress, which is not resumed.
func positionID(it item) string {
	switch {
	case it.Offset > 0:
		return strconv.FormatInt(it.Offset, 10)
	case it.Type == longhaul.EventToolStatus:
		return ""
	}
	id := strconv.FormatInt(it.pos.after, 10) + ":" + strconv.Itoa(it.pos.bytes)
	if it.pos.attempt > 1 {
		id += ":" + strconv.Itoa(it.pos.attempt)
	}
	return id
}

// streamEvents writes the run's events from pos until the done event, until
// the client leaves (a failed flush) or until the server shuts down.
func (s *Server) streamEvents(sw *sseWriter, id string, pos cursor) {
	f := s.hub.subscribe(id)
	defer f.release()
	// The request's context is gone once the handler returned; the stream
	// lives until the log ends, a write fails or the server shuts down.
	ctx, cancel := context.WithCancel(s.stopping)
	defer cancel()
	// Send the headers now, so the client knows it is connected even while
	// the run is quiet.
	if sw.comment("run "+id) != nil {
		return
	}
	pos = f.join(pos)
	for {
		items, done, err := sw.wait(ctx, f, pos)
		switch {
		case errors.Is(err, errClientGone):
			return
		case ctx.Err() != nil:
			// The server is shutting down: end without done, so the client
			// reconnects and resumes after the last id it read.
			_ = sw.comment("server shutting down; reconnect with Last-Event-ID")
			return
		case err != nil:
			// Not the run's error: the log could not be read. No id, so a
			// client that reconnects resumes where it was.
			s.log.Warn("stream run events", "run", id, "error", err)
			_ = sw.frameJSON("", "stream_error", ErrorDetail{Message: "lost the run's event stream: " + err.Error(), Type: "server_error", Code: "stream_error"})
			_ = sw.flush()
			return
		}
		for _, it := range items {
			if err := sw.frameJSON(positionID(it), string(it.Type), it.Event); err != nil {
				return
			}
			pos = it.pos
		}
		if sw.flush() != nil || done {
			return
		}
	}
}

// cancelRun asks Temporal to cancel a run: POST /v1/runs/{id}/cancel. The
// cancellation reaches in-flight model and tool calls through their
// heartbeats, and the run ends cancelled with what it had.
func (s *Server) cancelRun(c *fiber.Ctx) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	st, err := s.runState(c, id)
	if err != nil {
		return err
	}
	if finished(st.Status) {
		return errConflict(fmt.Sprintf("run %s has already finished (%s)", id, st.Status))
	}
	ctx, cancel := s.temporalCall(c.UserContext())
	defer cancel()
	if err := s.temporal.CancelWorkflow(ctx, id, ""); err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			// It existed a moment ago: it has closed since.
			return errConflict("run " + id + " has already finished")
		}
		return errUnavailable("cannot cancel run " + id + ": " + err.Error())
	}
	return c.Status(fiber.StatusAccepted).JSON(RunCancelling{ID: id, Status: "cancelling"})
}

// runInput delivers a person's answer to a waiting run as the workflow's
// input update: POST /v1/runs/{id}/input. A run that waits for nothing
// turns it away (409).
func (s *Server) runInput(c *fiber.Ctx) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	var in RunInput
	if err := decodeStrict(c.Body(), &in); err != nil {
		return errBadRequest(err.Error())
	}
	if err := in.validate(); err != nil {
		return errBadRequest(err.Error())
	}
	if err := checkPayload("the input", in.request()); err != nil {
		return err
	}
	st, err := s.runState(c, id)
	if err != nil {
		return err
	}
	if finished(st.Status) {
		return errConflict(fmt.Sprintf("run %s has finished (%s); it waits for no input", id, st.Status))
	}
	res, err := s.deliver(c.UserContext(), id, in.request())
	if err != nil {
		return err
	}
	return c.JSON(res)
}

// deliver hands a person's input to run id through the input update and
// waits until the run took it. A run that waits for nothing turns it away
// (a 409 error, see inputError).
func (s *Server) deliver(ctx context.Context, id string, in workflows.InputRequest) (workflows.InputResult, error) {
	if err := checkPayload("the input", in); err != nil {
		return workflows.InputResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, inputTimeout)
	defer cancel()
	var res workflows.InputResult
	h, err := s.temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   id,
		UpdateName:   workflows.UpdateInput,
		Args:         []any{in},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, &res)
	}
	if err != nil {
		return res, inputError(id, err)
	}
	return res, nil
}

// inputError translates a failed input update. The workflow's validator
// rejects input the run is not waiting for; a run of a version without the
// update rejects it as unknown; a closed run is not found.
func inputError(id string, err error) error {
	var appErr *temporal.ApplicationError
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &appErr):
		msg := appErr.Message()
		if strings.Contains(msg, workflows.ErrNotWaiting) || strings.Contains(msg, "unknown update") {
			return errConflict("run " + id + " is not waiting for input")
		}
		return errConflict("run " + id + " turned the input away: " + msg)
	case errors.As(err, &nf):
		return errConflict("run " + id + " has finished; it waits for no input")
	case errors.Is(err, context.DeadlineExceeded):
		return errUnavailable("run " + id + " did not take the input in time; is a worker running?")
	}
	return errUnavailable("cannot deliver the input to run " + id + ": " + err.Error())
}
