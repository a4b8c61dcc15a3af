package owuitest

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
)

var ann = User{ID: "0f6c", Email: " ann@example.com ", Name: "Ann Lee/Ö+", Role: "user"}

// TestHeaders checks the double's headers against what v0.10.2 sends
// (routers/openai.py:152-216, utils/headers.py).
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
