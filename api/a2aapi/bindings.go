package a2aapi

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/api/web"
)

// The two bindings: JSON-RPC 2.0 (spec §9) at POST /a2a/{agent}, and
// HTTP+JSON (§11) under /a2a/{agent}/, both over the same operations.

// rpcRequest is a JSON-RPC 2.0 request.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// rpcResponse is a JSON-RPC 2.0 response: result or error.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// rpcFramer frames a stream's responses as JSON-RPC responses to the
// request id (the SDK checks it, dist/client/index.js:6090).
type rpcFramer struct{ id json.RawMessage }

func (f rpcFramer) frame(sw *sse.Writer, v StreamResponse) error {
	return sw.FrameJSON("", "", rpcResponse{JSONRPC: "2.0", ID: f.id, Result: v})
}

func (f rpcFramer) fail(sw *sse.Writer, e *Error) error {
	re := e.rpc()
	return sw.FrameJSON("", "", rpcResponse{JSONRPC: "2.0", ID: f.id, Error: &re})
}

// JSONRPC serves the JSON-RPC binding: POST /a2a/{agent}. Errors are
// JSON-RPC error objects (with A2A's ErrorInfo, §9.5) in a 200 answer.
func (h *Handlers) JSONRPC(c *fiber.Ctx) error {
	var req rpcRequest
	if body := bytes.TrimSpace(c.Body()); len(body) > 0 && body[0] == '[' {
		return rpcFail(c, nil, errInvalidRequest.with("JSON-RPC batches are not supported: send one request at a time"))
	}
	if err := json.Unmarshal(c.Body(), &req); err != nil {
		return rpcFail(c, nil, errParse.with("not JSON: "+err.Error()))
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		return rpcFail(c, req.ID, errInvalidRequest.with(`not a JSON-RPC 2.0 request: "jsonrpc": "2.0" and a method are required`))
	}
	if err := checkVersion(c); err != nil {
		return rpcFail(c, req.ID, AsA2A(err, OpOther))
	}
	cl, err := h.callerOf(c)
	if err != nil {
		return rpcFail(c, req.ID, AsA2A(err, OpOther))
	}
	var stream error
	switch req.Method {
	case "SendStreamingMessage":
		var p SendMessageRequest
		if stream = decode(req.Params, &p); stream == nil {
			stream = h.streamSend(c, cl, p, rpcFramer{req.ID})
		}
	case "SubscribeToTask":
		var p TaskRequest
		if stream = decode(req.Params, &p); stream == nil {
			stream = h.subscribe(c, cl, p, rpcFramer{req.ID})
		}
	default:
		fn, ok := unary[req.Method]
		if !ok {
			return rpcFail(c, req.ID, errMethodNotFound.with("no method "+req.Method))
		}
		v, err := fn(h, c.UserContext(), cl, req.Params)
		if err != nil {
			return rpcFail(c, req.ID, AsA2A(err, opOf(req.Method)))
		}
		if v == nil {
			v = struct{}{}
		}
		return c.JSON(rpcResponse{JSONRPC: "2.0", ID: req.ID, Result: v})
	}
	if stream != nil {
		return rpcFail(c, req.ID, AsA2A(stream, OpOther))
	}
	return nil
}

// opOf is the Op of a JSON-RPC method.
func opOf(method string) Op {
	if method == "CancelTask" {
		return OpCancel
	}
	return OpOther
}

// decode decodes params into v, or says why not as InvalidParams.
func decode(params json.RawMessage, v any) error {
	if len(params) == 0 {
		return nil
	}
	if err := json.Unmarshal(params, v); err != nil {
		return errInvalidParams.with("params: " + err.Error())
	}
	return nil
}

// rpcFail answers a JSON-RPC error.
func rpcFail(c *fiber.Ctx, id json.RawMessage, e *Error) error {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	re := e.rpc()
	return c.JSON(rpcResponse{JSONRPC: "2.0", ID: id, Error: &re})
}

// restFramer frames a stream's responses as StreamResponse objects, and
// an error as an "error" event carrying AIP-193's body (the SDK's
// RestTransport reads both, dist/client/index.js:6420-6432).
type restFramer struct{}

func (restFramer) frame(sw *sse.Writer, v StreamResponse) error { return sw.FrameJSON("", "", v) }

func (restFramer) fail(sw *sse.Writer, e *Error) error { return sw.FrameJSON("", "error", e.rest()) }

// REST serves the HTTP+JSON binding under /a2a/{agent}/ (a2a.proto's
// google.api.http paths: message:send, message:stream, tasks,
// tasks/{id}, tasks/{id}:cancel, tasks/{id}:subscribe,
// tasks/{id}/pushNotificationConfigs[/{configId}], extendedAgentCard).
// Errors are AIP-193 bodies with A2A's ErrorInfo and the spec's HTTP
// statuses (§5.4, §11.6).
func (h *Handlers) REST(c *fiber.Ctx) error {
	if err := checkVersion(c); err != nil {
		return restFail(c, AsA2A(err, OpOther))
	}
	cl, err := h.callerOf(c)
	if err != nil {
		return restFail(c, AsA2A(err, OpOther))
	}
	// A copy: see callerOf.
	path, _ := url.PathUnescape(strings.Clone(c.Params("*")))
	method, params, stream, op := route(c.Method(), path, c)
	switch {
	case method == "" && stream == "":
		return restFail(c, errMethodNotFound.with("no A2A operation at "+c.Method()+" "+c.Path()))
	case stream == "SendStreamingMessage":
		var p SendMessageRequest
		if err = decode(c.Body(), &p); err == nil {
			err = h.streamSend(c, cl, p, restFramer{})
		}
	case stream == "SubscribeToTask":
		err = h.subscribe(c, cl, TaskRequest{ID: params["id"].(string)}, restFramer{})
	default:
		var v any
		if v, err = unary[method](h, c.UserContext(), cl, restParams(c, params)); err == nil {
			if v == nil {
				v = struct{}{}
			}
			return c.JSON(v)
		}
	}
	if err != nil {
		return restFail(c, AsA2A(err, op))
	}
	return nil
}

// route is the operation at method and path (under /a2a/{agent}/): a
// unary method's name and the params the path gives, or a streaming
// one's name.
func route(method, path string, c *fiber.Ctx) (unaryName string, params map[string]any, stream string, op Op) {
	params = map[string]any{}
	switch {
	case method == fiber.MethodPost && path == "message:send":
		return "SendMessage", params, "", OpOther
	case method == fiber.MethodPost && path == "message:stream":
		return "", params, "SendStreamingMessage", OpOther
	case method == fiber.MethodGet && path == "tasks":
		return "ListTasks", params, "", OpOther
	case method == fiber.MethodGet && path == "extendedAgentCard":
		return "GetExtendedAgentCard", params, "", OpOther
	case !strings.HasPrefix(path, "tasks/"):
		return "", nil, "", OpOther
	}
	rest := strings.TrimPrefix(path, "tasks/")
	if id, tail, ok := strings.Cut(rest, "/pushNotificationConfigs"); ok {
		params["taskId"] = id
		cid := strings.TrimPrefix(tail, "/")
		switch {
		case tail == "" && method == fiber.MethodPost:
			return "CreateTaskPushNotificationConfig", params, "", OpOther
		case tail == "" && method == fiber.MethodGet:
			return "ListTaskPushNotificationConfigs", params, "", OpOther
		case cid != "" && method == fiber.MethodGet:
			params["id"] = cid
			return "GetTaskPushNotificationConfig", params, "", OpOther
		case cid != "" && method == fiber.MethodDelete:
			params["id"] = cid
			return "DeleteTaskPushNotificationConfig", params, "", OpOther
		}
		return "", nil, "", OpOther
	}
	switch id, verb, _ := strings.Cut(rest, ":"); {
	case verb == "cancel" && method == fiber.MethodPost:
		params["id"] = id
		return "CancelTask", params, "", OpCancel
	case verb == "subscribe" && (method == fiber.MethodGet || method == fiber.MethodPost):
		// a2a.proto says GET; the SDK's RestTransport POSTs
		// (dist/client/index.js:6409, _sendStreamingRequest).
		params["id"] = id
		return "", params, "SubscribeToTask", OpOther
	case verb == "" && method == fiber.MethodGet:
		params["id"] = id
		return "GetTask", params, "", OpOther
	}
	return "", nil, "", OpOther
}

// restParams is a unary HTTP+JSON request's params as one JSON object:
// its body's fields, its query's (numbers and booleans as such), then
// the path's.
func restParams(c *fiber.Ctx, path map[string]any) json.RawMessage {
	all := map[string]any{}
	if c.Method() != fiber.MethodGet && len(c.Body()) > 0 {
		_ = json.Unmarshal(c.Body(), &all)
	}
	for k, v := range c.Queries() {
		if n, err := strconv.Atoi(v); err == nil {
			all[k] = n
		} else if b, err := strconv.ParseBool(v); err == nil {
			all[k] = b
		} else {
			all[k] = v
		}
	}
	for k, v := range path {
		all[k] = v
	}
	b, _ := json.Marshal(all)
	return b
}

// restFail answers an HTTP+JSON error.
func restFail(c *fiber.Ctx, e *Error) error {
	return c.Status(e.Status).JSON(e.rest())
}

// Card serves an agent's card: GET /a2a/{agent}/.well-known/agent-card.json,
// public; without credentials it shows only the agents anyone may see
// (their allow: rules), with them what the caller may (§8.2).
func (h *Handlers) Card(c *fiber.Ctx) error {
	u := web.Principal(c).User
	a, ok := h.Catalog.AgentFor(c.Params("agent"), u)
	if !ok {
		return restFail(c, &Error{Status: fiber.StatusNotFound, Message: "no agent " + c.Params("agent")})
	}
	return c.JSON(AgentCardOf(h.Catalog, a, u, c.BaseURL()))
}

// CatalogCard serves the catalog's card: GET /.well-known/agent-card.json,
// the agents the caller may see (none restricted without credentials).
func (h *Handlers) CatalogCard(c *fiber.Ctx) error {
	return c.JSON(CatalogCard(h.Catalog, web.Principal(c).User, c.BaseURL()))
}
