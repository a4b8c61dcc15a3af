package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	openai "github.com/sashabaranov/go-openai"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/mcp"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/owuitest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// hits counts the requests each tool's server received, by tool.
type hits struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *hits) add(tool string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n[tool]++
}

// take returns the counts so far and starts again from zero.
func (h *hits) take() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.n
	h.n = map[string]int{}
	return n
}

// countingMCP is a real MCP server over streamable HTTP (the Go SDK's own
// server, as the MCP servers of test/mcp speak stdio and cannot count
// calls for the test): one tool, "add", whose every call is counted.
func countingMCP(t *testing.T, h *hits) string {
	t.Helper()
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "counter", Version: "1.0.0"}, nil)
	type addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	mcpsdk.AddTool(srv, &mcpsdk.Tool{Name: "add", Description: "Adds two numbers"},
		func(_ context.Context, _ *mcpsdk.CallToolRequest, in addIn) (*mcpsdk.CallToolResult, any, error) {
			h.add("calc__add")
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
		})
	ts := httptest.NewServer(mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// allowFiles are the agents and skills of TestAllowTable:
//
//	ops    allow roles [admin]      skill ops: admin_http
//	desk   everyone                 skills common (ping_http, media_http
//	                                allow groups [media], calc__add, the MCP
//	                                server allows roles [admin] and groups
//	                                [media]) and staff (allow roles [admin],
//	                                /staff, staff_http)
var allowFiles = fstest.MapFS{
	"ops.md":  {Data: []byte("---\nagent: ops\ndescription: Operations\nmode: chat\nskills: [ops]\nallow: {roles: [admin]}\n---\nYou run operations.\n")},
	"desk.md": {Data: []byte("---\nagent: desk\ndescription: Help desk\nmode: chat\nskills: [common, staff]\n---\nYou help.\n")},
	"ops-skill.md": {Data: []byte(`---
skill: ops
description: Operations tools
tools: [admin_http]
http_tools:
  - name: admin_http
    description: Administers things
    url: ${TOOLS_URL}/admin
---
Administer.`)},
	"common.md": {Data: []byte(`---
skill: common
description: Everyday tools
tools: [ping_http, media_http, calc__add]
http_tools:
  - name: ping_http
    description: Pings
    url: ${TOOLS_URL}/ping
  - name: media_http
    description: Requests media
    url: ${TOOLS_URL}/media
    allow: {groups: [media]}
---
Help.`)},
	"staff.md": {Data: []byte(`---
skill: staff
description: Staff tools
command: /staff
tools: [staff_http]
allow: {roles: [admin]}
http_tools:
  - name: staff_http
    description: Staff only
    url: ${TOOLS_URL}/staff
---
Staff work.`)},
}

// deskTools are every tool of the desk agent, which the scripted model
// calls whatever it is offered.
var deskTools = []string{"calc__add", "media_http", "ping_http", "staff_http"}

// TestAllowTable is the allow-list table over agents, tools and principals,
// through the real API, Temporal and worker: what /v1/models lists to
// each, which of the desk agent's tools the model is offered (from the
// scripted model's request log), that a call the model makes of a tool it
// was not offered never reaches the tool's server (an HTTP tool's
// httptest server and an MCP server over HTTP, both counting), and that a
// hidden agent is a 404 in the words of an unknown one on every API.
func TestAllowTable(t *testing.T) {
	h := &hits{n: map[string]int{}}
	toolsSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.add(strings.TrimPrefix(r.URL.Path, "/") + "_http")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(toolsSrv.Close)
	cfg, err := mcp.ParseConfig(fmt.Appendf(nil, `{"mcpServers": {
		"calc": {"url": %q, "allow": {"roles": ["admin"], "groups": ["media"]}}
	}}`, countingMCP(t, h)))
	if err != nil {
		t.Fatal(err)
	}
	// The API key syntax as an operator writes it (LONGHAUL_API_KEYS).
	keys, err := identity.ParseKeys([]string{"ci:sk-ci-key:role=admin", "bot:sk-bot-key"}, []string{"owui:" + owuiKey})
	if err != nil {
		t.Fatal(err)
	}
	headers := identity.OpenWebUIHeaders
	headers.UserGroups = "X-Longhaul-User-Groups"
	env := testenv.Start(t, testenv.Options{
		Layers: []fs.FS{allowFiles},
		MCP:    &cfg,
		Env:    map[string]string{"TOOLS_URL": toolsSrv.URL},
		API:    api.Config{Keys: keys, JWTSecret: []byte(owuiSecret), Headers: headers},
	})
	if !env.Tools.Has("calc__add") {
		t.Fatalf("the MCP tool is not registered (have %v)", env.Tools.Names())
	}
	// Open WebUI v0.11.0 fills a connection header with the user's groups
	// ({{USER_GROUPS}}): its chats carry them so.
	conn := &owuitest.Connection{BaseURL: env.URL + "/v1", Key: owuiKey, ForwardUserInfo: true, JWTSecret: owuiSecret,
		Headers: map[string]string{headers.UserGroups: "{{USER_GROUPS}}"}}
	admin := owuitest.User{ID: "u-admin", Email: "root@example.com", Name: "Root", Role: "admin"}
	user := owuitest.User{ID: "u-user", Email: "ann@example.com", Name: "Ann", Role: "user"}
	member := owuitest.User{ID: "u-member", Email: "mia@example.com", Name: "Mia", Role: "user",
		Groups: []owuitest.Group{{ID: "g-media", Name: "media"}, {ID: "g-film", Name: "film"}}}

	type principal struct {
		name string
		// owui is the Open WebUI user (signed token); else key is the API key.
		owui   *owuitest.User
		key    string
		groups string
	}
	tests := []struct {
		who        principal
		wantModels []string
		wantTools  []string // offered by desk, and the only ones whose servers are reached
		wantFilter string   // in the run's history (the ResolveAgent marker, shown by the Temporal UI)
	}{
		{principal{name: "admin", owui: &admin}, []string{"desk", "ops"}, []string{"calc__add", "ping_http", "staff_http"},
			"tools filtered for role=admin groups=[]: hidden 1 (tools media_http)"},
		{principal{name: "user", owui: &user}, []string{"desk"}, []string{"ping_http"},
			"tools filtered for role=user groups=[]: hidden 4 (skills staff) (tools calc__add, media_http, staff_http)"},
		{principal{name: "group member", owui: &member, groups: "media, film"}, []string{"desk"}, []string{"calc__add", "media_http", "ping_http"},
			"tools filtered for role=user groups=[media film]: hidden 2 (skills staff) (tools staff_http)"},
		{principal{name: "API key with a role", key: "sk-ci-key"}, []string{"desk", "ops"}, []string{"calc__add", "ping_http", "staff_http"},
			"tools filtered for role=admin groups=[]: hidden 1 (tools media_http)"},
		{principal{name: "API key without a role", key: "sk-bot-key", groups: "media"}, []string{"desk"}, []string{"ping_http"},
			"tools filtered for role=none groups=[]: hidden 4 (skills staff) (tools calc__add, media_http, staff_http)"},
	}
	for _, tt := range tests {
		t.Run(tt.who.name, func(t *testing.T) {
			hdr := map[string]string{}
			if u := tt.who.owui; u != nil {
				hdr["Authorization"] = "Bearer " + owuiKey
				hdr[owuitest.HeaderUserJWT] = conn.Token(*u)
			} else {
				hdr["Authorization"] = "Bearer " + tt.who.key
			}
			if tt.who.groups != "" {
				// A groups header on an API key's request is not read.
				hdr[headers.UserGroups] = tt.who.groups
			}

			// /v1/models lists the principal's agents only.
			list := decode[wire.ModelList](t, do(t, env, "GET", "/v1/models", nil, hdr))
			var models []string // of this test's agents; the built-ins have no rule
			for _, m := range list.Data {
				if m.ID == "desk" || m.ID == "ops" {
					models = append(models, m.ID)
				}
			}
			if d := cmp.Diff(tt.wantModels, models); d != "" {
				t.Errorf("/v1/models (-want +got):\n%s", d)
			}

			// A hidden agent is a 404 "model not found", as an unknown one.
			if !slices.Contains(tt.wantModels, "ops") {
				for _, c := range []struct{ path, field string }{
					{"/v1/chat/completions", "model"}, {"/v1/responses", "model"}, {"/v1/runs", "agent"},
				} {
					body := chatBody{c.field: "ops", "messages": userMsg("hi")}
					unknown := chatBody{c.field: "no-such-agent", "messages": userMsg("hi")}
					if c.path == "/v1/responses" {
						body = chatBody{"model": "ops", "input": "hi"}
						unknown = chatBody{"model": "no-such-agent", "input": "hi"}
					}
					hidden, missing := errorOf(t, do(t, env, "POST", c.path, body, hdr)), errorOf(t, do(t, env, "POST", c.path, unknown, hdr))
					if hidden.status != 404 || missing.status != 404 ||
						strings.ReplaceAll(hidden.message, "ops", "X") != strings.ReplaceAll(missing.message, "no-such-agent", "X") || hidden.code != missing.code {
						t.Errorf("%s for a hidden agent = %+v, for an unknown one %+v: want the same 404", c.path, hidden, missing)
					}
				}
			}

			// The model is offered the principal's tools only, and calls
			// every tool of the agent anyway.
			var offered []string
			env.Model.Enqueue(
				llmtest.Func(func(r llmtest.Request) llmtest.Reply {
					for _, tool := range r.Chat.Tools {
						offered = append(offered, tool.Function.Name)
					}
					var calls []llmtest.ToolCall
					for i, name := range deskTools {
						args := `{}`
						if name == "calc__add" {
							args = `{"a":1,"b":2}`
						}
						calls = append(calls, llmtest.ToolCall{ID: fmt.Sprintf("c%d", i), Name: name, Arguments: args})
					}
					return llmtest.ToolCalls(calls...)
				}),
				llmtest.Text("done"),
			)
			h.take()
			var run string
			if u := tt.who.owui; u != nil {
				run = owuitest.OK(t, conn.NewChat(*u, "desk").Ask("use every tool")).RunID
			} else {
				resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "desk", "messages": userMsg("use every tool")}, hdr)
				if resp.StatusCode != 200 {
					b, _ := io.ReadAll(resp.Body)
					t.Fatalf("chat: status %d: %s", resp.StatusCode, b)
				}
				_ = decode[openai.ChatCompletionResponse](t, resp)
				run = resp.Header.Get(api.HeaderRunID)
			}
			slices.Sort(offered)
			if d := cmp.Diff(tt.wantTools, offered); d != "" {
				t.Errorf("tools offered to the model (-want +got):\n%s", d)
			}
			reached := h.take()
			want := map[string]int{}
			for _, name := range tt.wantTools {
				want[name] = 1
			}
			if d := cmp.Diff(want, reached); d != "" {
				t.Errorf("calls that reached the tools' servers (-want +got):\n%s", d)
				for _, m := range env.Model.Requests()[len(env.Model.Requests())-1].Chat.Messages {
					t.Logf("%s %s: %.300s", m.Role, m.ToolCallID, m.Content)
				}
			}

			// The model read a refusal for each call it was not offered,
			// and the run's history says which filter applied.
			last := env.Model.Requests()[len(env.Model.Requests())-1]
			for _, m := range last.Chat.Messages {
				if m.Role != openai.ChatMessageRoleTool {
					continue
				}
				var i int
				_, _ = fmt.Sscanf(m.ToolCallID, "c%d", &i)
				if name := deskTools[i]; !slices.Contains(tt.wantTools, name) && !strings.Contains(m.Content, "not allowed") {
					t.Errorf("the result of forbidden %s = %q: want a refusal", name, m.Content)
				}
			}
			if got := historyText(t, env, run); !strings.Contains(got, tt.wantFilter) {
				t.Errorf("history of %s lacks %q", run, tt.wantFilter)
			}
		})
	}

	// A forbidden skill's slash command does not run the skill: the
	// message goes to the agent's own loop, which offers no staff tool.
	t.Run("slash command of a forbidden skill", func(t *testing.T) {
		var offered []string
		var system string
		env.Model.Enqueue(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			for _, tool := range r.Chat.Tools {
				offered = append(offered, tool.Function.Name)
			}
			system = r.Chat.Messages[0].Content
			return llmtest.Text("ok")
		}))
		owuitest.OK(t, conn.NewChat(user, "desk").Ask("/staff do it"))
		if slices.Contains(offered, "staff_http") || strings.Contains(system, "Staff work.") {
			t.Errorf("the user's /staff ran the staff skill: offered %v, system prompt %q", offered, system)
		}
	})
}

// apiErr is an error answer's status and envelope.
type apiErr struct {
	status        int
	message, code string
}

func errorOf(t *testing.T, resp *http.Response) apiErr {
	t.Helper()
	defer resp.Body.Close()
	var env struct {
		Error struct {
			Message string `json:"message"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &env)
	return apiErr{status: resp.StatusCode, message: env.Error.Message, code: fmt.Sprint(env.Error.Code)}
}

// historyText is the text of the payloads of run's markers (local
// activity results, such as ResolveAgent's), as the Temporal UI shows them.
func historyText(t *testing.T, env *testenv.Env, run string) string {
	t.Helper()
	var b strings.Builder
	iter := env.Client.GetWorkflowHistory(context.Background(), run, "", false, 0)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ev.GetMarkerRecordedEventAttributes().GetDetails() {
			for _, p := range d.GetPayloads() {
				b.Write(p.GetData())
			}
		}
	}
	return b.String()
}
