package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/access"
	"github.com/longhaul-dev/longhaul/internal/tools"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolError is the error of a call that the tool itself reported as failed
// (an MCP result with isError set). Its message is the tool's own text, so
// that the model reads what the tool said.
type ToolError struct {
	// Server and Tool name the MCP server and its tool (the MCP name, not
	// the prefixed one).
	Server, Tool string
	// Message is the text of the tool's result.
	Message string
}

func (e *ToolError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("tool %s of MCP server %s failed without saying why", e.Tool, e.Server)
	}
	return e.Message
}

// maxToolName is the longest tool name a model accepts.
const maxToolName = 64

// toolName returns the engine's name for tool of server: "<server>__<tool>"
// with characters outside [a-zA-Z0-9_-] replaced by "_". It reports false
// when the name is empty or too long.
func toolName(server, tool string) (string, bool) {
	var b strings.Builder
	b.WriteString(server)
	b.WriteString("__")
	for _, r := range tool {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := b.String()
	return name, tool != "" && len(name) <= maxToolName
}

// emptySchema is the parameters schema of a tool that takes no arguments.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// parameters turns an MCP tool's input schema into the engine's parameters
// schema: a JSON schema of an object. A missing or empty schema becomes
// emptySchema; a missing "type" becomes "object".
func parameters(inputSchema any) (json.RawMessage, error) {
	raw, err := json.Marshal(inputSchema)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return emptySchema, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep large integers exact
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, errors.New("input schema is not a JSON object")
	}
	if len(m) == 0 {
		return emptySchema, nil
	}
	switch t, ok := m["type"]; {
	case !ok:
		m["type"] = "object"
	case t != "object":
		return nil, fmt.Errorf(`input schema has type %v, want "object"`, t)
	}
	if _, ok := m["properties"]; !ok {
		m["properties"] = map[string]any{}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	return out, nil
}

// description is what the model is told about t.
func description(t *mcpsdk.Tool) string {
	switch {
	case t.Description != "":
		return t.Description
	case t.Title != "":
		return t.Title
	case t.Annotations != nil && t.Annotations.Title != "":
		return t.Annotations.Title
	}
	return ""
}

// resultText renders the content of a tool result as text for the model:
// text as is, images and audio as a short placeholder, resource links as
// their URI and embedded resources as their text, all joined by blank lines.
// A result with no content shows its structured content as JSON.
func resultText(res *mcpsdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcpsdk.TextContent:
			parts = append(parts, c.Text)
		case *mcpsdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcpsdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcpsdk.ResourceLink:
			parts = append(parts, c.URI)
		case *mcpsdk.EmbeddedResource:
			r := c.Resource
			switch {
			case r == nil:
			case r.Text != "":
				parts = append(parts, r.Text)
			case len(r.Blob) > 0:
				parts = append(parts, fmt.Sprintf("[resource %s, %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
			default:
				parts = append(parts, r.URI)
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n\n")
}

// tool is one tool of an MCP server as the engine sees it.
type tool struct {
	srv         *server
	name        string // the engine's name
	remote      string // the server's name for it
	description string
	params      json.RawMessage
	approval    bool // the server's configuration requires approval
	allow       []*access.Rule
}

var (
	_ tools.Tool        = (*tool)(nil)
	_ tools.Approver    = (*tool)(nil)
	_ access.Restricted = (*tool)(nil)
)

// RequiresApproval reports whether the server's configuration requires a
// person's approval of each call.
func (t *tool) RequiresApproval() bool { return t.approval }

// Allows reports whether the server's configuration lets u use the tool.
func (t *tool) Allows(u longhaul.User) bool { return access.AllowsAll(u, t.allow...) }

func (t *tool) Name() string                { return t.name }
func (t *tool) Description() string         { return t.description }
func (t *tool) Parameters() json.RawMessage { return t.params }

// Call calls the tool on the server's current session, connecting first if
// there is none or it has ended. A failure of the connection ends the
// session and is returned; the call is not sent again here, the caller's
// retry is. The server's progress notifications for the call go to
// call.Progress while the call runs; one that the SDK handles only after
// the result (it handles notifications on a goroutine of their own) is
// dropped. A progress notification without a message gets "<progress> of
// <total>".
func (t *tool) Call(ctx context.Context, call tools.Call) (tools.Result, error) {
	s := t.srv
	if s.cfg.OAuth() {
		return s.asUser(ctx, call, t.name, func(ctx context.Context, cs *mcpsdk.ClientSession) (tools.Result, error) {
			return t.call(ctx, call, cs, nil)
		})
	}
	sess, err := s.connect(ctx)
	if err != nil {
		return tools.Result{}, fmt.Errorf("mcp server %q: %w", s.name, err)
	}
	return t.call(ctx, call, sess.cs, sess)
}

// call makes the call on cs; sess, when not nil, is the shared session cs
// belongs to, dropped when the connection fails.
func (t *tool) call(ctx context.Context, call tools.Call, cs *mcpsdk.ClientSession, sess *session) (tools.Result, error) {
	s := t.srv
	args := call.Arguments
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	params := &mcpsdk.CallToolParams{Name: t.remote, Arguments: args}
	if call.Progress != nil {
		token := s.m.progressToken()
		params.SetProgressToken(token)
		s.addProgress(token, call.Progress)
		defer s.removeProgress(token)
	}
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, fmt.Errorf("mcp server %q: call %s: %w", s.name, t.remote, ctx.Err())
		}
		if sess == nil {
			return tools.Result{}, fmt.Errorf("mcp server %q: call %s: %w", s.name, t.remote, err)
		}
		err = redactErr(sess.conn.redact, err)
		if broken(err) {
			s.drop(sess, err)
			return tools.Result{}, fmt.Errorf("mcp server %q: call %s: connection lost: %w", s.name, t.remote, err)
		}
		return tools.Result{}, fmt.Errorf("mcp server %q: call %s: %w", s.name, t.remote, err)
	}
	if res.IsError {
		return tools.Result{}, &ToolError{Server: s.name, Tool: t.remote, Message: resultText(res)}
	}
	return tools.Result{Content: resultText(res)}, nil
}

// Unwrap marks a tool's own failure as permanent: the same call would fail
// the same way, so the engine gives the model the message instead of retrying.
func (e *ToolError) Unwrap() error { return tools.ErrPermanent }
