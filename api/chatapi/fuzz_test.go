package chatapi

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// The fuzz targets of the API's decoding: what a client sends is parsed the
// way the handlers parse it, and whatever it is, the answer is a value or a
// one-line error, never a panic. `make fuzz` runs each of them; `make test`
// runs their seeds (and testdata/fuzz) as ordinary tests.

// FuzzChatRequest decodes a chat completions body as Completions does
// and reads everything the handler reads from an accepted one.
func FuzzChatRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"assistant","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"assistant","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:"}}]}]}`,
		`{"model":"assistant","messages":[{"role":"user","content":"x"},{"role":"assistant","content":"<details type=\"tool_calls\" done=\"true\">…</details>\nok","tool_calls":[{"id":"c1","type":"function","function":{"name":"t","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"1"},{"role":"user","content":"### Task: title"}]}`,
		`{"model":"m","messages":[{"role":"user","content":null}],"stop":"x","seed":1,"n":1,"temperature":0.5,"top_p":1,"max_completion_tokens":5}`,
		`{"model":"m","messages":[{"role":"user"}],"stop":["a","b"],"metadata":{"chat_id":"c"}}`,
		`{"model":"m","messages":[{"role":"tool","content":"x"}]}`,
		`{"model":"m","messages":[],"temperature":9}`,
		`[]`, `{`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req wire.ChatRequest
		if err := json.Unmarshal(body, &req); err != nil {
			checkMessage(t, "invalid JSON body: "+web.JSONProblem(err))
			return
		}
		if err := req.Validate(tools.CheckSchema); err != nil {
			checkMessage(t, err.Error())
			return
		}
		msgs := wire.DomainMessages(req.Messages)
		if len(msgs) != len(req.Messages) {
			t.Fatalf("%d messages became %d", len(req.Messages), len(msgs))
		}
		if req.Turn() < 1 {
			t.Fatalf("an accepted request has turn %d", req.Turn())
		}
		if i := lastUser(msgs); i < 0 {
			t.Fatal("an accepted request has no user message")
		}
		for _, m := range msgs {
			if m.Role == longhaul.RoleAssistant && strings.Contains(m.Content, `<details type="tool_calls"`) && wire.AnswerText(m.Content) != m.Content {
				t.Fatalf("a tool card survived: %q", m.Content)
			}
		}
		if s := runs.Summarize(msgs, 60); utf8.RuneCountInString(s) > 61 {
			t.Fatalf("summary of %d runes", utf8.RuneCountInString(s))
		}
		opts := req.Options()
		if opts.MaxTokens < 0 {
			t.Fatalf("max tokens %d", opts.MaxTokens)
		}
		if o := req.Options(); o.Temperature != nil && (*o.Temperature < 0 || *o.Temperature > 2) {
			t.Fatalf("temperature %v accepted", *o.Temperature)
		}
		if o := req.Options(); o.TopP != nil && (*o.TopP < 0 || *o.TopP > 1) {
			t.Fatalf("top_p %v accepted", *o.TopP)
		}
		req.IsBackgroundTask()
		askedForApproval(msgs)
	})
}

// FuzzRunRequest decodes a POST /v1/runs body as runsapi.Handlers.CreateRun does.
func FuzzRunRequest(f *testing.F) {
	for _, s := range []string{
		`{"agent":"assistant","input":"research this"}`,
		`{"agent":"assistant","messages":[{"role":"user","content":"hi"}],"metadata":{"team":"a"}}`,
		`{"agent":"assistant","input":"x","messages":[]}`,
		`{"agent":"assistant","input":" "}`,
		`{"agent":"assistant","input":"x","extra":1}`,
		`{"agent":"assistant","input":"x"} {}`,
		`{"agent":"","metadata":{"":"x"}}`,
		` `, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, ok := acceptStrict(t, body, func(r *wire.RunRequest) error { return r.Validate(tools.CheckSchema) })
		if !ok {
			return
		}
		msgs := req.Conversation()
		if lastUser(msgs) < 0 {
			t.Fatalf("an accepted run starts with no user message: %+v", msgs)
		}
		if len(req.Metadata) > wire.MaxMetadataKeys {
			t.Fatalf("%d metadata keys accepted", len(req.Metadata))
		}
	})
}

// FuzzRunInput decodes a POST /v1/runs/{id}/input body as runInput does: an
// accepted input is exactly one of an approval and a text.
func FuzzRunInput(f *testing.F) {
	for _, s := range []string{
		`{"approve":true}`, `{"approve":false}`, `{"text":"use the other one"}`,
		`{"approve":true,"text":"x"}`, `{"text":""}`, `{"approve":"yes"}`, `{}`, `1`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, ok := acceptStrict(t, body, (*wire.RunInput).Validate)
		if !ok {
			return
		}
		r := in.InputRequest()
		if (r.Approve == nil) == (strings.TrimSpace(r.Text) == "") {
			t.Fatalf("accepted input is not exactly one of approve and text: %+v", r)
		}
	})
}

// FuzzChatInput reads a chat message as the answer to a waiting run: it is
// an approval, a denial or the text itself, never two of them.
func FuzzChatInput(f *testing.F) {
	for _, s := range []string{"yes", "No.", "approve!", " deny ", "y", "use the other one", "", "👍", "OK"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		r := chatInput(text)
		if r.Approve != nil && r.Text != "" {
			t.Fatalf("both an approval and a text: %+v", r)
		}
		if r.Approve == nil && r.Text != strings.TrimSpace(text) {
			t.Fatalf("text %q passed on as %q", text, r.Text)
		}
	})
}

// acceptStrict decodes body strictly, as the runs API's handlers do, and
// validates it: it returns the accepted value, or false once it has
// checked that the refusal's message is one line.
func acceptStrict[T any](t *testing.T, body []byte, validate func(*T) error) (*T, bool) {
	t.Helper()
	v := new(T)
	err := web.DecodeStrict(body, v)
	if err == nil {
		err = validate(v)
	}
	if err != nil {
		checkMessage(t, err.Error())
		return nil, false
	}
	return v, true
}

// checkMessage fails when an error for the client is empty or spans lines.
func checkMessage(t *testing.T, msg string) {
	t.Helper()
	if strings.TrimSpace(msg) == "" || strings.ContainsAny(msg, "\r\n") {
		t.Fatalf("error message %q: want one non-empty line", msg)
	}
}
