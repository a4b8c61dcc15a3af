// Package mcpapi serves Longhaul's agents over the Model Context Protocol
// (Streamable HTTP) at /mcp, on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk, mcp.NewStreamableHTTPHandler):
// each agent its caller may use is a tool named by the agent's id, whose
// call is a run started through the runs gate (runs.DoorMCP). A plain call
// answers with the run's answer, with progress notifications from its
// events; a task-augmented call (MCP 2025-11-25's Tasks, which the SDK
// v1.8.0 lacks and this package adds on it: receiving middleware and the
// SDK's custom methods) answers at once with a task whose id is the run's,
// and tasks/get, tasks/result, tasks/list and tasks/cancel read the run,
// for its owner only, from any session. A run that waits for a person's
// approval asks the client by elicitation when it can elicit. MCP's
// stateless revision, 2026-07-28, is served beside it on the SDK's
// stateless handler, with its Tasks extension (tasksv2.go).
package mcpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/skills"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path is where the MCP server is served.
const Path = "/mcp"

// Handler serves MCP for the principals the server's auth resolves.
type Handler struct {
	Runs    *runweb.Runs
	Gate    *runs.Gate
	Catalog *skills.Catalog
	// Stopping ends when the server shuts down, and with it every open
	// MCP stream.
	Stopping context.Context
	// SessionTimeout closes a session idle that long (zero: an hour).
	SessionTimeout time.Duration
	// KeepAlive is how long a long call's stream stays quiet before a
	// keep-alive line (zero: sse.KeepAlive, 15 s).
	KeepAlive time.Duration
	// Version is what the server tells clients of itself.
	Version string
	Log     *slog.Logger

	sdk http.Handler
	// modern serves the stateless revision (2026-07-28), which the SDK
	// serves only on a stateless handler (streamable.go:871-876).
	modern http.Handler
	// requests are the contexts of the HTTP requests of long calls, by
	// their headerRequest token (bind).
	requests sync.Map
}

// Internal headers the bridge sets on the request it hands the SDK, after
// removing any a client sent: the principal the request was authenticated
// as, and the task params of a task-augmented tools/call, which the SDK's
// CallToolParamsRaw (protocol.go:241) has no field for. The SDK passes
// the request's headers to the method handlers (RequestExtra.Header,
// shared.go:631).
const (
	headerPrincipal = "Longhaul-Mcp-Principal"
	headerTask      = "Longhaul-Mcp-Task"
	// headerRequest names the HTTP request of a long call (bind).
	headerRequest = "Longhaul-Mcp-Request"
	// headerModern marks a request of the stateless revision (modern).
	headerModern = "Longhaul-Mcp-Modern"
)

// modernVersion is the first stateless revision of MCP (SEP-2575): no
// sessions, server/discover instead of initialize, each request's version
// and capabilities in its _meta.
const modernVersion = "2026-07-28"

// Init builds the SDK's Streamable HTTP handler; call it once before
// Serve.
func (h *Handler) Init() *Handler {
	if h.SessionTimeout <= 0 {
		h.SessionTimeout = time.Hour
	}
	if h.Stopping == nil {
		h.Stopping = context.Background()
	}
	if h.KeepAlive <= 0 {
		h.KeepAlive = sse.KeepAlive
	}
	if h.Log == nil {
		h.Log = slog.Default()
	}
	h.sdk = mcp.NewStreamableHTTPHandler(h.serverFor, &mcp.StreamableHTTPOptions{
		SessionTimeout: h.SessionTimeout,
		Logger:         h.Log,
	})
	h.modern = mcp.NewStreamableHTTPHandler(h.serverFor, &mcp.StreamableHTTPOptions{Stateless: true, Logger: h.Log})
	return h
}

type principalKey struct{}

// principalOf is the principal Serve put in r's context.
func principalOf(ctx context.Context) (identity.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(identity.Principal)
	return p, ok
}

// Serve answers an MCP request at Path, behind the server's auth. The
// standalone event stream (GET) is not offered: a server "MUST either
// return Content-Type: text/event-stream in response to this HTTP GET, or
// else return HTTP 405 Method Not Allowed" (MCP 2025-11-25, Transports,
// "Listening for Messages from the Server"); every message of a call
// travels on its POST's stream.
func (h *Handler) Serve(c *fiber.Ctx) error {
	if c.Method() == fiber.MethodGet {
		c.Set(fiber.HeaderAllow, "POST, DELETE")
		return web.New(web.KindMethodNotAllowed, "GET "+Path+": this server offers no standalone event stream; POST requests")
	}
	r, err := detached(c)
	if err != nil {
		return web.BadRequest("cannot read the request: " + err.Error())
	}
	p := web.Principal(c)
	ctx, cancel := context.WithCancel(h.Stopping)
	ctx = context.WithValue(ctx, principalKey{}, p)
	r = r.WithContext(ctx)
	for _, name := range []string{headerPrincipal, headerTask, headerRequest, headerModern} {
		r.Header.Del(name)
	}
	r.Header.Set(headerPrincipal, p.Name)
	pk := peek(c.Body())
	sdk := h.sdk
	if modern(r, pk.method) {
		sdk = h.modern
		r.Header.Set(headerModern, "1")
	}
	if pk.task != nil {
		r.Header.Set(headerTask, string(pk.task))
	}
	var keepAlive time.Duration
	if pk.method == "tasks/result" || pk.method == "tools/call" && pk.task == nil {
		// A call that answers when its run ends: its handler's context ends
		// with this request's (bind).
		keepAlive = h.KeepAlive
		token := rand.Text()
		r.Header.Set(headerRequest, token)
		h.requests.Store(token, ctx)
		end := cancel
		cancel = func() {
			h.requests.Delete(token)
			end()
		}
	}
	serve(c, sdk, r, cancel, keepAlive)
	return nil
}

// modern reports whether r is of the stateless revision: it names one in
// its MCP-Protocol-Version header, which the revision requires of every
// request (one with the revision's _meta and no header reaches the session
// handler, which answers -32022 with the versions it serves,
// streamable.go:1516-1550), or it is a server/discover outside a session,
// which the stateless handler answers with the revision among its
// versions. Everything else is the 2025 revisions', on sessions.
func modern(r *http.Request, method string) bool {
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
		return v >= modernVersion
	}
	return method == "server/discover" && r.Header.Get("Mcp-Session-Id") == ""
}

// detached is c's request as net/http's, in memory of its own. fasthttp's
// adaptor converts without copying ("The http.Request must not be used
// after the fasthttp handler has returned! Memory in use by the
// http.Request will be reused", fasthttpadaptor/request.go:14-16), and
// the SDK reads the request on a goroutine of its own, keeps its session
// id and protocol version for the stream, and may still be unwinding when
// a stream's client has gone and the buffers are reused.
func detached(c *fiber.Ctx) (*http.Request, error) {
	r, err := adaptor.ConvertRequest(c, true)
	if err != nil {
		return nil, err
	}
	r.Method, r.Proto, r.Host = strings.Clone(r.Method), strings.Clone(r.Proto), strings.Clone(r.Host)
	r.RequestURI = strings.Clone(r.RequestURI)
	if r.URL, err = url.ParseRequestURI(r.RequestURI); err != nil {
		return nil, err
	}
	header := make(http.Header, len(r.Header))
	for k, vs := range r.Header {
		for _, v := range vs {
			header.Add(strings.Clone(k), strings.Clone(v))
		}
	}
	r.Header = header
	r.Body = io.NopCloser(bytes.NewReader(bytes.Clone(c.Body())))
	return r, nil
}

// peeked is what Serve reads of a request's body before the SDK does.
type peeked struct {
	method string
	// task are the task params of a task-augmented tools/call (MCP
	// 2025-11-25, Tasks, "Creating Tasks": params.task).
	task json.RawMessage
}

// peek reads body when it is one JSON-RPC message. Batches are not read:
// from 2025-06-18 on the SDK refuses them (streamable.go:1450).
func peek(body []byte) peeked {
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Task json.RawMessage `json:"task"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return peeked{}
	}
	t := msg.Params.Task
	if msg.Method != "tools/call" || len(t) == 0 || string(t) == "null" {
		return peeked{method: msg.Method}
	}
	// A task that is not an object (TaskMetadata) is still a request for
	// one: the middleware refuses it.
	return peeked{method: msg.Method, task: t}
}

// bind is ctx, ended too when the HTTP request whose token extra names
// ends: the SDK keeps a call's handler going after its client has left
// ("if we have no event store, we should really cancel all remaining
// requests here", streamable.go:1732-1733), and Longhaul keeps no event
// store: a run is followed again from its own log. stop releases it.
func (h *Handler) bind(ctx context.Context, extra *mcp.RequestExtra) (context.Context, func()) {
	rc, ok := h.requests.Load(extra.Header.Get(headerRequest))
	if !ok {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(rc.(context.Context), cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// serverFor is the MCP server of a new session: the tools of the agents
// its principal may use, and the Tasks methods. The SDK calls it once per
// session (streamable.go NewStreamableHTTPHandler's getServer).
func (h *Handler) serverFor(r *http.Request) *mcp.Server {
	p, ok := principalOf(r.Context())
	if !ok {
		return nil
	}
	s := &session{h: h, p: p, modern: r.Header.Get(headerModern) != ""}
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}
	if s.modern {
		// What server/discover says (tasks.md, "Capability Negotiation").
		caps.Extensions = map[string]any{tasksExtension: map[string]any{}}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "longhaul", Version: h.Version}, &mcp.ServerOptions{
		Capabilities: caps,
		Logger:       h.Log,
	})
	for _, a := range h.Catalog.AgentsFor(p.User) {
		srv.AddTool(&mcp.Tool{Name: a.ID, Description: a.Description, InputSchema: inputSchema}, s.callTool)
	}
	if s.modern {
		srv.AddReceivingMiddleware(s.modernMiddleware)
		s.addTaskMethodsV2(srv)
		return srv
	}
	srv.AddReceivingMiddleware(s.middleware)
	s.addTaskMethods(srv)
	return srv
}

// session is one MCP session's server: its principal's. A request of the
// stateless revision is a session of its own (modern).
type session struct {
	h      *Handler
	p      identity.Principal
	modern bool
}

// middleware holds every request of the session to the principal that
// opened it, adds Tasks to what the SDK says of the server and its tools,
// and answers a task-augmented tools/call with its task.
func (s *session) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		extra := req.GetExtra()
		if extra == nil || extra.Header.Get(headerPrincipal) != s.p.Name {
			// The SDK binds a session to a user only through auth.TokenInfo
			// (streamable.go:567), which Longhaul's keys do not make.
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "this session belongs to another principal"}
		}
		switch method {
		case "initialize":
			res, err := next(ctx, method, req)
			return extend(res, err, addTaskCapability)
		case "tools/list":
			res, err := next(ctx, method, req)
			return extend(res, err, addTaskSupport)
		case "tasks/result":
			ctx, stop := s.h.bind(ctx, extra)
			defer stop()
			return next(ctx, method, req)
		case "tools/call":
			ctx, stop := s.h.bind(ctx, extra)
			defer stop()
			if task := extra.Header.Get(headerTask); task != "" {
				if !strings.HasPrefix(task, "{") {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "task: must be an object ({\"ttl\": …})"}
				}
				return s.startTask(ctx, req)
			}
			return next(ctx, method, req)
		}
		return next(ctx, method, req)
	}
}

// inputSchema is every agent tool's input: the question the run answers.
var inputSchema = json.RawMessage(`{"type":"object","properties":{"question":{"type":"string","description":"What to ask the agent."}},"required":["question"],"additionalProperties":false}`)

// extended is a result the SDK produced, with fields it has no type for
// added when it is written.
type extended struct {
	mcp.Result
	add func(map[string]any)
}

func (e extended) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(e.Result)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	e.add(m)
	return json.Marshal(m)
}

func extend(res mcp.Result, err error, add func(map[string]any)) (mcp.Result, error) {
	if err != nil || res == nil {
		return res, err
	}
	return extended{Result: res, add: add}, nil
}

// addTaskCapability declares Tasks in an initialize result: tasks/list,
// tasks/cancel and task-augmented tools/call (MCP 2025-11-25 schema,
// ServerCapabilities.tasks; the TS client reads
// capabilities.tasks.requests.tools.call, dist/esm/client/index.js:511-515).
func addTaskCapability(m map[string]any) {
	caps, _ := m["capabilities"].(map[string]any)
	if caps == nil {
		caps = map[string]any{}
		m["capabilities"] = caps
	}
	caps["tasks"] = map[string]any{
		"list": map[string]any{}, "cancel": map[string]any{},
		"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}},
	}
}

// addTaskSupport marks every tool of a tools/list result as one that may
// run as a task (Tool.execution.taskSupport "optional"; the TS client
// caches it, dist/esm/client/index.js:536-546).
func addTaskSupport(m map[string]any) {
	tools, _ := m["tools"].([]any)
	for _, t := range tools {
		if tool, ok := t.(map[string]any); ok {
			tool["execution"] = map[string]any{"taskSupport": "optional"}
		}
	}
}
