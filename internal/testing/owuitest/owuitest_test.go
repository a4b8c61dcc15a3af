package owuitest

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
)

var ann = User{ID: "0f6c", Email: " ann@example.com ", Name: "Ann Lee/Ö+", Role: "user", Groups: []Group{{ID: "g1", Name: "media"}, {ID: "g2", Name: " film crew "}}}

// TestHeaders checks the double's headers against what v0.11.0 sends
// (routers/openai.py:156-219, utils/headers.py).
func TestHeaders(t *testing.T) {
	tests := []struct {
		name string
		conn Connection
		want map[string]string
	}{
		{
			name: "forwarding off, no custom headers: the key alone",
			conn: Connection{Key: "sk"},
			want: map[string]string{"Content-Type": "application/json", "Authorization": "Bearer sk"},
		},
		{
			name: "plain user headers and the chat; no message id without a custom header",
			conn: Connection{Key: "sk", ForwardUserInfo: true},
			want: map[string]string{
				"Content-Type": "application/json", "Authorization": "Bearer sk",
				"X-Openwebui-User-Name": "Ann Lee%2F%C3%96%2B", "X-Openwebui-User-Id": "0f6c",
				"X-Openwebui-User-Email": "ann@example.com", "X-Openwebui-User-Role": "user",
				"X-Openwebui-Chat-Id": "c1",
			},
		},
		{
			name: "v0.11.0's group placeholders: names trimmed and ids, joined by commas",
			conn: Connection{Headers: map[string]string{"X-Longhaul-User-Groups": "{{USER_GROUPS}}", "X-Group-Ids": "{{USER_GROUP_IDS}}", "X-Who": "{{USER_NAME}}/{{USER_ROLE}}"}},
			want: map[string]string{"Content-Type": "application/json", "X-Longhaul-User-Groups": "media,film crew", "X-Group-Ids": "g1,g2", "X-Who": "Ann Lee/Ö+/user"},
		},
		{
			name: "forwarding off still sends the connection's custom headers",
			conn: Connection{Key: "sk", Headers: ForwardMessageID()},
			want: map[string]string{"Content-Type": "application/json", "Authorization": "Bearer sk", "X-Openwebui-Message-Id": "m1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.conn.headers(ann, "c1", "m1")
			got := map[string]string{}
			for k := range h {
				got[k] = h.Get(k)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
		})
	}
}

// TestToken checks the signed user: HS256, the seven claims, exp five
// minutes after iat by default (utils/headers.py:20-31, env.py:892-896).
func TestToken(t *testing.T) {
	now := time.Unix(1_767_268_800, 0)
	c := Connection{ForwardUserInfo: true, JWTSecret: "s3cret-s3cret-s3cret-s3cret-s3cret", Now: func() time.Time { return now }}
	h := c.headers(ann, "c1", "")
	if len(h.Values(HeaderUserID)) != 0 {
		t.Fatal("a signed user must replace the plain headers")
	}
	claims := jwt.MapClaims{}
	tok, err := jwt.ParseWithClaims(h.Get(HeaderUserJWT), claims, func(*jwt.Token) (any, error) { return []byte(c.JWTSecret), nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil || tok.Header["typ"] != "JWT" {
		t.Fatalf("token: %v, header %v", err, tok.Header)
	}
	want := jwt.MapClaims{"sub": "0f6c", "email": " ann@example.com ", "name": "Ann Lee/Ö+", "role": "user", "iss": "open-webui",
		"iat": float64(now.Unix()), "exp": float64(now.Unix() + 300)}
	if diff := cmp.Diff(want, claims); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
}

// TestRequests checks the bodies: a chat turn, Regenerate, an edit and the
// title task.
func TestRequests(t *testing.T) {
	c := &Connection{Key: "sk", ForwardUserInfo: true, Headers: ForwardMessageID(), Usage: true, Tools: BuiltinTime}
	ch := c.NewChat(ann, "assistant")
	first := ch.Ask("hi")
	if first.Body["stream"] != true || first.Body["stream_options"] == nil || len(first.Body["tools"].([]map[string]any)) != 2 {
		t.Fatalf("first turn body %v", first.Body)
	}
	ch.Answer("hello\n<details type=\"tool_calls\" done=\"true\">card</details>\nthere")
	regen := ch.Regenerate()
	if regen.MessageID == first.MessageID || regen.Header.Get(HeaderMessageID) != regen.MessageID || len(regen.Messages()) != 1 {
		t.Fatalf("regenerate: message %q (first %q), messages %v", regen.MessageID, first.MessageID, regen.Messages())
	}
	ch.Answer("hello there")
	ch.Ask("more")
	ch.Answer("more text")
	edit := ch.Edit(1, "hi again")
	if got := edit.Messages(); len(got) != 1 || got[0]["content"] != "hi again" {
		t.Fatalf("edit messages %v", got)
	}
	ch.Answer("hello again")
	title := ch.Title()
	msgs := title.Messages()
	if title.Body["stream"] != false || title.Body["max_tokens"] != 1000 || len(msgs) != 1 || title.Body["tools"] != nil {
		t.Fatalf("title body %v", title.Body)
	}
	content := msgs[0]["content"].(string)
	if !strings.HasPrefix(content, "### Task:\n") || !strings.HasSuffix(content, "<chat_history>\nUSER: hi again\nASSISTANT: hello again\n</chat_history>") {
		t.Errorf("title prompt %q", content)
	}
	if v := title.Header.Values(HeaderMessageID); len(v) != 1 || v[0] != "" {
		t.Errorf("a task's message id header is %v, want present and empty", v)
	}
}

// TestPastReasoning checks how a past answer's reasoning goes back: not at
// all to a model of no known provider (Longhaul's), as <think> tags before
// the text to Ollama, as reasoning_content to llama.cpp
// (utils/middleware.py:2059-2073, utils/misc.py:296-303, 417-444).
func TestPastReasoning(t *testing.T) {
	for _, tt := range []struct {
		provider string
		want     map[string]any
	}{
		{"", map[string]any{"role": "assistant", "content": "Tuesday."}},
		{ProviderOllama, map[string]any{"role": "assistant", "content": "<think>The clock says so.</think>\nTuesday."}},
		{ProviderLlamaCpp, map[string]any{"role": "assistant", "content": "Tuesday.", "reasoning_content": "The clock says so."}},
	} {
		t.Run("provider "+tt.provider, func(t *testing.T) {
			ch := (&Connection{Provider: tt.provider}).NewChat(ann, "assistant")
			ch.Ask("What day is it?")
			ch.Keep(Answer{Content: "Tuesday.", Reasoning: "The clock says so."})
			msgs := ch.Ask("And tomorrow?").Messages()
			if len(msgs) != 3 {
				t.Fatalf("messages %v", msgs)
			}
			if diff := cmp.Diff(tt.want, msgs[1]); diff != "" {
				t.Errorf("past answer (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRead checks what the double reads of a stream as Open WebUI does:
// reasoning from reasoning_content, reasoning or thinking, status events,
// content and tool calls in pieces (utils/middleware.py:4270-4271,
// 4550-4554).
func TestRead(t *testing.T) {
	stream := `data: {"event":{"type":"status","data":{"description":"Thinking","done":false}}}

data: {"choices":[{"index":0,"delta":{"reasoning_content":"a "}}]}

data: {"choices":[{"index":0,"delta":{"reasoning":"b "}}]}

data: {"choices":[{"index":0,"delta":{"thinking":"c"}}]}

data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"f","arguments":"{\"x\""}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]},"finish_reason":"tool_calls"}]}

data: [DONE]

`
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(stream))}
	a, err := Read(resp)
	if err != nil {
		t.Fatal(err)
	}
	want := Answer{Status: 200, Content: "Hi", Reasoning: "a b c", Statuses: []string{"Thinking"},
		ToolCalls: []ToolCall{{ID: "call_1", Name: "f", Arguments: `{"x":1}`}}, FinishReason: "tool_calls"}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
	whole := `{"choices":[{"index":0,"message":{"role":"assistant","content":"Hi","reasoning":"r"},"finish_reason":"stop"}]}`
	a, err = Read(&http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(whole))})
	if err != nil || a.Content != "Hi" || a.Reasoning != "r" {
		t.Errorf("whole answer %+v, %v", a, err)
	}
}
