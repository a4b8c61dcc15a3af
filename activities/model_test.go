// Long because: ChatCompletion's tests, one behaviour each, against the one scripted endpoint they share.

package activities_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/natsbus"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/skills"
	"github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"
)

func TestChatCompletionReturnsStreamedText(t *testing.T) {
	const text = "The quick brown fox jumps over the lazy dog, twice."
	f := newFixture(t, nil, nil)
	f.srv.Enqueue(llmtest.Text(text, llmtest.ChunkSize(3), llmtest.Usage(11, 7)))
	env, fl := f.followedEnv(t)

	got, err := chat(t, env, f.acts, contract.ModelRequest{Call: "turn-1", Agent: "assistant", Messages: userMessage("hi")})
	if err != nil {
		t.Fatalf("ChatCompletion: %v", err)
	}
	want := contract.ModelResponse{
		Message:      longhaul.Message{Role: longhaul.RoleAssistant, Content: text},
		FinishReason: "stop",
		Usage:        longhaul.Usage{PromptTokens: 11, CompletionTokens: 7, TotalTokens: 18},
		Model:        "llmtest",
		Attempt:      1,
	}
	diff(t, "response", want, got)

	reqs := f.srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("model got %d requests, want 1", len(reqs))
	}
	if !reqs[0].Chat.Stream || reqs[0].Chat.StreamOptions == nil || !reqs[0].Chat.StreamOptions.IncludeUsage {
		t.Errorf("request stream = %v, stream_options = %+v; want a streamed request that includes usage",
			reqs[0].Chat.Stream, reqs[0].Chat.StreamOptions)
	}
	if reqs[0].Chat.Model != "llmtest" {
		t.Errorf("request model = %q, want the default model %q", reqs[0].Chat.Model, "llmtest")
	}
	if ds := fl.drain(t); len(ds) != 0 {
		t.Errorf("Publish false published %d deltas, want none: %+v", len(ds), ds)
	}
}

func TestChatCompletionLeadsWithTheAgentPrompt(t *testing.T) {
	f := newFixture(t, nil, nil)
	assistant, ok := f.catalog.Agent("assistant")
	if !ok {
		t.Fatal(`built-in agent "assistant" missing`)
	}
	withDocs := strings.TrimSpace(f.catalog.SystemPrompt(assistant))
	// The catalog composes the prompt; make sure this is the agent's base
	// prompt with its skills' fragments, not some other text.
	if !strings.HasPrefix(withDocs, strings.TrimSpace(assistant.Prompt)) || !strings.Contains(withDocs, "## clock") {
		t.Fatalf("unexpected assistant prompt from the catalog:\n%s", withDocs)
	}
	// The documents skill's fragment is the last; a run without vector
	// stores goes without it.
	prompt, docs, ok := strings.Cut(withDocs, "\n\n## documents\n\n")
	if !ok || !strings.Contains(docs, "[filename, chunk N]") {
		t.Fatalf("the assistant's prompt has no documents fragment:\n%s", withDocs)
	}

	type msg struct{ Role, Content string }
	user := msg{"user", "what is the weather?"}
	tests := []struct {
		name      string
		agent     string
		noPrompt  bool
		documents bool
		want      []msg
	}{
		{name: "agent prompt first", agent: "assistant", want: []msg{{"system", prompt}, user}},
		{name: "with vector stores, the documents skill's too", agent: "assistant", documents: true, want: []msg{{"system", withDocs}, user}},
		{name: "NoPrompt leaves it out", agent: "assistant", noPrompt: true, want: []msg{user}},
		{name: "agent without prompt", agent: "naked", want: []msg{user}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			f.srv.Enqueue(llmtest.Text("Sunny."))
			env := f.activityEnv()
			if _, err := chat(t, env, f.acts, contract.ModelRequest{
				Call: "turn-1", Agent: tt.agent, NoPrompt: tt.noPrompt, Documents: tt.documents, Messages: userMessage(user.Content),
			}); err != nil {
				t.Fatalf("ChatCompletion: %v", err)
			}
			reqs := f.srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("model got %d requests, want 1", len(reqs))
			}
			var got []msg
			for _, m := range reqs[0].Chat.Messages {
				got = append(got, msg{m.Role, llmtest.MessageText(m)})
			}
			diff(t, "messages the model received", tt.want, got)
		})
	}
}

func TestChatCompletionSendsTheConversation(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.Enqueue(llmtest.Text("It is a quarter past three."))
	env := f.activityEnv()
	conv := []longhaul.Message{
		{Role: longhaul.RoleUser, Content: "What time is it in Berlin?", Name: "ada"},
		{Role: longhaul.RoleAssistant, Content: "Let me check.", ToolCalls: []longhaul.ToolCall{
			{ID: "call_1", Name: "current_time", Arguments: `{"timezone":"Europe/Berlin"}`},
		}},
		{Role: longhaul.RoleTool, ToolCallID: "call_1", Name: "current_time", Content: "time: 2025-03-14T16:09:26+01:00"},
	}
	if _, err := chat(t, env, f.acts, contract.ModelRequest{Call: "turn-2", Agent: "naked", Messages: conv}); err != nil {
		t.Fatalf("ChatCompletion: %v", err)
	}
	want := []openai.ChatCompletionMessage{
		{Role: "user", Content: "What time is it in Berlin?", Name: "ada"},
		{Role: "assistant", Content: "Let me check.", ToolCalls: []openai.ToolCall{{
			ID: "call_1", Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: "current_time", Arguments: `{"timezone":"Europe/Berlin"}`},
		}}},
		{Role: "tool", Content: "time: 2025-03-14T16:09:26+01:00", Name: "current_time", ToolCallID: "call_1"},
	}
	diff(t, "messages the model received", want, f.srv.Requests()[0].Chat.Messages)
}

// TestChatCompletionFinalAddsTheMaxTurnsPrompt: the call after an agent
// used all its turns ends with the catalog's max-turns prompt, after the
// conversation, and offers no tools.
func TestChatCompletionFinalAddsTheMaxTurnsPrompt(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.Enqueue(llmtest.Text("Here is what I found."))
	env := f.activityEnv()
	conv := []longhaul.Message{{Role: longhaul.RoleUser, Content: "Research this."}}
	if _, err := chat(t, env, f.acts, contract.ModelRequest{Call: "turn-3", Agent: "naked", Messages: conv, Final: true}); err != nil {
		t.Fatalf("ChatCompletion: %v", err)
	}
	got := f.srv.Requests()[0].Chat
	want := []openai.ChatCompletionMessage{
		{Role: "user", Content: "Research this."},
		{Role: "system", Content: f.catalog.Prompt(skills.PromptMaxTurns)},
	}
	if !strings.Contains(want[1].Content, "Answer now") {
		t.Fatalf("max-turns prompt %q does not ask for the answer", want[1].Content)
	}
	diff(t, "messages the model received", want, got.Messages)
	if len(got.Tools) != 0 {
		t.Errorf("final call offered tools %v", got.Tools)
	}
}

func TestChatCompletionSendsModelAndOptions(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.Enqueue(llmtest.Text("ok"))
	env := f.activityEnv()
	temp, topP, seed := float32(0.25), float32(0.5), 42
	got, err := chat(t, env, f.acts, contract.ModelRequest{
		Call: "turn-1", Agent: "naked", Model: "bigger-model", Messages: userMessage("hi"),
		Options: longhaul.ModelOptions{Temperature: &temp, TopP: &topP, MaxTokens: 64, Stop: []string{"END"}, Seed: &seed},
	})
	if err != nil {
		t.Fatalf("ChatCompletion: %v", err)
	}
	if got.Model != "bigger-model" {
		t.Errorf("response model = %q, want %q", got.Model, "bigger-model")
	}
	req := f.srv.Requests()[0].Chat
	type opts struct {
		Model       string
		Temperature float32
		TopP        float32
		MaxTokens   int
		Stop        []string
		Seed        *int
	}
	diff(t, "request options", opts{"bigger-model", 0.25, 0.5, 64, []string{"END"}, &seed},
		opts{req.Model, req.Temperature, req.TopP, req.MaxTokens, req.Stop, req.Seed})
}

// TestChatCompletionSendsZeroTemperature checks that an explicit temperature
// (or top_p) of 0 reaches the model: ModelOptions uses pointers precisely so
// that 0 means "deterministic", not "the model's default".
func TestChatCompletionSendsZeroTemperature(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.Enqueue(llmtest.Text("ok"))
	env := f.activityEnv()
	zero := float32(0)
	if _, err := chat(t, env, f.acts, contract.ModelRequest{
		Call: "turn-1", Agent: "naked", Messages: userMessage("hi"),
		Options: longhaul.ModelOptions{Temperature: &zero, TopP: &zero},
	}); err != nil {
		t.Fatalf("ChatCompletion: %v", err)
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(f.srv.Requests()[0].Body, &body); err != nil {
		t.Fatalf("decode request body: %v", err)
	}
	// go-openai leaves a zero out of the request, so an explicit 0 is sent
	// as the smallest positive float32, which is 0 for any sampler.
	for _, k := range []string{"temperature", "top_p"} {
		var f float64
		if v, ok := body[k]; !ok || json.Unmarshal(v, &f) != nil || f < 0 || f > 1e-30 {
			t.Errorf("request %s = %s (present %v), want 0", k, v, ok)
		}
	}
}

// toolDef is a tool definition with its schema decoded, so that two JSON
// encodings of one schema compare equal.
type toolDef struct {
	Type        string
	Name        string
	Description string
	Parameters  any
}

func decodeJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %v: %v", v, err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return out
}

func TestChatCompletionOffersTheRequestedTools(t *testing.T) {
	tests := []struct {
		name  string
		tools []string
	}{
		{name: "none", tools: nil},
		{name: "one", tools: []string{"current_time"}},
		{name: "two in the order asked", tools: []string{"probe", "current_time"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			f.srv.Enqueue(llmtest.Text("ok"))
			env := f.activityEnv()
			if _, err := chat(t, env, f.acts, contract.ModelRequest{
				Call: "turn-1", Agent: "assistant", Messages: userMessage("hi"), Tools: tt.tools,
			}); err != nil {
				t.Fatalf("ChatCompletion: %v", err)
			}
			defs, err := f.reg.Definitions(tt.tools)
			if err != nil {
				t.Fatalf("Definitions: %v", err)
			}
			var want []toolDef
			for _, d := range defs {
				want = append(want, toolDef{"function", d.Name, d.Description, decodeJSON(t, d.Parameters)})
			}
			var got []toolDef
			for _, tool := range f.srv.Requests()[0].Chat.Tools {
				if tool.Function == nil {
					t.Fatalf("tool %+v has no function", tool)
				}
				got = append(got, toolDef{string(tool.Type), tool.Function.Name, tool.Function.Description, decodeJSON(t, tool.Function.Parameters)})
			}
			diff(t, "tools offered to the model", want, got)
		})
	}
}

func TestChatCompletionRefusesUnknownTools(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.SetDefault(llmtest.Text("must not be asked"))
	env := f.activityEnv()
	_, err := chat(t, env, f.acts, contract.ModelRequest{
		Call: "turn-1", Agent: "assistant", Messages: userMessage("hi"), Tools: []string{"current_time", "launch_rockets"},
	})
	wantAppError(t, err, longhaul.ErrTypeToolRefused, true, "launch_rockets")
	if n := len(f.srv.Requests()); n != 0 {
		t.Errorf("model got %d requests, want none", n)
	}
}

func TestChatCompletionPublishesContent(t *testing.T) {
	const text = "Durable agents stream their answers while the model writes them."
	const runes = "Grüße aus Köln — 東京 too."
	tests := []struct {
		name  string
		reply llmtest.Reply
		text  string
		after int64
	}{
		{name: "one word a delta", reply: llmtest.Text(text), text: text, after: 17},
		{name: "four runes a delta, slow model", text: text, after: 3,
			reply: llmtest.Text(text, llmtest.ChunkSize(4), llmtest.ChunkDelay(2*time.Millisecond))},
		// From counts bytes, not runes.
		{name: "multi-byte runes", reply: llmtest.Text(runes, llmtest.ChunkSize(3)), text: runes, after: 5},
		{name: "first call of the run", reply: llmtest.Text(text), text: text, after: 0},
		{name: "text before tool calls", text: text, after: 9,
			reply: llmtest.ToolCalls(llmtest.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x"}`}).WithText(text)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			f.srv.Enqueue(tt.reply)
			env, fl := f.followedEnv(t)
			// A subscriber of the exact subject checks the deltas go where
			// the subjects say.
			raw, err := f.watcher.Conn().SubscribeSync(f.subj.Call(fl.run, "turn-3", 1))
			if err != nil {
				t.Fatalf("SubscribeSync: %v", err)
			}
			if err := f.watcher.Conn().Flush(); err != nil {
				t.Fatalf("Flush: %v", err)
			}

			resp, err := chat(t, env, f.acts, contract.ModelRequest{
				Call: "turn-3", Agent: "assistant", Messages: userMessage("hi"), Publish: true, After: tt.after,
			})
			if err != nil {
				t.Fatalf("ChatCompletion: %v", err)
			}
			if resp.Attempt != 1 {
				t.Errorf("response attempt = %d, want 1", resp.Attempt)
			}
			ds := fl.drain(t)
			if len(ds) == 0 {
				t.Fatal("no deltas published")
			}
			if resp.Message.Content != tt.text {
				t.Errorf("response content = %q, want %q", resp.Message.Content, tt.text)
			}
			checkContent(t, ds, "turn-3", 1, tt.after, tt.text)
			// The barrier is in: every delta is queued on the raw
			// subscription of the same connection already.
			if n, _, err := raw.Pending(); err != nil || n != len(ds) {
				t.Errorf("subject %s holds %d messages (err %v), want the %d deltas", f.subj.Call(fl.run, "turn-3", 1), n, err, len(ds))
			}
		})
	}
}

func TestChatCompletionKeepsItsTextWithoutNATS(t *testing.T) {
	const text = "The answer stands even if nobody heard it streamed."
	tests := []struct {
		name    string
		disrupt func(*fixture)
	}{
		{name: "no bus", disrupt: func(f *fixture) { f.acts.Bus = nil }},
		{name: "connection closed", disrupt: func(f *fixture) { f.acts.Bus.Conn().Close() }},
		{name: "server gone", disrupt: func(f *fixture) { f.nats.Shutdown() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			tt.disrupt(f)
			f.srv.Enqueue(llmtest.Text(text, llmtest.ChunkSize(2)))
			env := f.activityEnv()
			resp, err := chat(t, env, f.acts, contract.ModelRequest{Call: "turn-1", Agent: "naked", Messages: userMessage("hi"), Publish: true})
			if err != nil {
				t.Fatalf("ChatCompletion: %v", err)
			}
			if resp.Message.Content != text {
				t.Errorf("response content = %q, want %q", resp.Message.Content, text)
			}
		})
	}
}

// TestChatCompletionAnswersSnapshots checks that a running call tells a
// subscriber that joins late the text it has so far, and stops answering
// once it has returned.
func TestChatCompletionAnswersSnapshots(t *testing.T) {
	const text = "one two three four five"
	f := newFixture(t, nil, nil)
	// The model sends three words and then nothing until the call gives up.
	f.srv.Enqueue(llmtest.Text(text).With(llmtest.StallAfter(3)))
	_, fl := f.followedEnv(t)

	ctx, cancel := context.WithTimeout(context.Background(), promptly)
	defer cancel()
	if _, err := f.watcher.Snapshot(ctx, fl.run); !errors.Is(err, natsbus.ErrNoCall) {
		t.Fatalf("Snapshot before the call = %v, want ErrNoCall", err)
	}

	bg, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	err := runUntil(t, f, bg, f.acts.ChatCompletion, contract.ModelRequest{
		Call: "turn-5", Agent: "naked", Messages: userMessage("hi"), Publish: true, After: 41,
	}, func() {
		fl.waitText(t, "one two three")
		snap, err := f.watcher.Snapshot(ctx, fl.run)
		if err != nil {
			t.Errorf("Snapshot while the call streams: %v", err)
		}
		diff(t, "snapshot", []longhaul.CallText{{Call: "turn-5", Attempt: 1, After: 41, Text: "one two three"}}, snap)
		stop(temporal.NewCanceledError())
	})
	var canceled *temporal.CanceledError
	if !errors.As(err, &canceled) {
		t.Fatalf("err = %v (%T), want a *temporal.CanceledError", err, err)
	}

	// The call's responder is gone once the activities' connection has
	// told the server so.
	if err := f.acts.Bus.Conn().Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if snap, err := f.watcher.Snapshot(ctx, fl.run); !errors.Is(err, natsbus.ErrNoCall) {
		t.Errorf("Snapshot after the call = %+v, %v; want ErrNoCall", snap, err)
	}
}

func TestChatCompletionReassemblesToolCalls(t *testing.T) {
	calls := []llmtest.ToolCall{
		{ID: "call_berlin", Name: "current_time", Arguments: `{"timezone":"Europe/Berlin"}`},
		{ID: "call_probe", Name: "probe", Arguments: `{"q":"a query long enough to arrive in several pieces"}`},
	}
	want := []longhaul.ToolCall{
		{ID: "call_berlin", Name: "current_time", Arguments: `{"timezone":"Europe/Berlin"}`},
		{ID: "call_probe", Name: "probe", Arguments: `{"q":"a query long enough to arrive in several pieces"}`},
	}
	tests := []struct {
		name  string
		reply llmtest.Reply
		text  string
	}{
		{name: "default pieces", reply: llmtest.ToolCalls(calls...)},
		{name: "three-rune pieces", reply: llmtest.ToolCalls(calls...).With(llmtest.ChunkSize(3))},
		{name: "with leading text", reply: llmtest.ToolCalls(calls...).WithText("Checking both."), text: "Checking both."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			f.srv.Enqueue(tt.reply.With(llmtest.Usage(20, 30)))
			env := f.activityEnv()
			got, err := chat(t, env, f.acts, contract.ModelRequest{
				Call: "turn-1", Agent: "assistant", Messages: userMessage("hi"), Tools: []string{"current_time", "probe"},
			})
			if err != nil {
				t.Fatalf("ChatCompletion: %v", err)
			}
			diff(t, "response", contract.ModelResponse{
				Message:      longhaul.Message{Role: longhaul.RoleAssistant, Content: tt.text, ToolCalls: want},
				FinishReason: "tool_calls",
				Usage:        longhaul.Usage{PromptTokens: 20, CompletionTokens: 30, TotalTokens: 50},
				Model:        "llmtest",
				Attempt:      1,
				Targets: map[string]string{
					"call_berlin": "Europe/Berlin",
					"call_probe":  "a query long enough to arrive in several pieces",
				},
			}, got)
		})
	}
}

// rewriteBody is an HTTP transport that replaces from with to in the model's
// successful answers, for the few wire variations llmtest cannot script:
// OpenAI-compatible servers that send tool calls without ids, or end a stream
// without a finish reason.
type rewriteBody struct{ from, to string }

func (r rewriteBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	body = bytes.ReplaceAll(body, []byte(r.from), []byte(r.to))
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	return resp, nil
}

func TestChatCompletionGeneratesMissingToolCallIDs(t *testing.T) {
	f := newFixture(t, nil, func(c *activities.LLMConfig) {
		c.HTTPClient = &http.Client{Transport: rewriteBody{`"id":"drop-me",`, ""}}
	})
	f.srv.Enqueue(llmtest.ToolCalls(
		llmtest.ToolCall{ID: "call_kept", Name: "current_time", Arguments: `{}`},
		llmtest.ToolCall{ID: "drop-me", Name: "probe", Arguments: `{"q":"one"}`},
		llmtest.ToolCall{ID: "drop-me", Name: "probe", Arguments: `{"q":"two"}`},
	))
	env := f.activityEnv()
	got, err := chat(t, env, f.acts, contract.ModelRequest{Call: "turn-1", Agent: "assistant", Messages: userMessage("hi"), Tools: []string{"current_time", "probe"}, NextCall: 12})
	if err != nil {
		t.Fatalf("ChatCompletion: %v", err)
	}
	calls := got.Message.ToolCalls
	if len(calls) != 3 {
		t.Fatalf("got %d tool calls, want 3: %+v", len(calls), calls)
	}
	// Named after their sequence numbers: the run's 12th, 13th and 14th.
	diff(t, "ids", []string{"call_kept", "call_lh13", "call_lh14"}, []string{calls[0].ID, calls[1].ID, calls[2].ID})
	seen := map[string]bool{}
	for i, c := range calls {
		if c.ID == "" || c.ID == "drop-me" {
			t.Errorf("call %d id = %q, want a generated id", i, c.ID)
		}
		if seen[c.ID] {
			t.Errorf("call %d id %q is not unique", i, c.ID)
		}
		seen[c.ID] = true
	}
	for i, c := range calls[1:] {
		if _, ok := got.Targets[c.ID]; !ok {
			t.Errorf("call %d: no target under its generated id %q in %v", i+1, c.ID, got.Targets)
		}
	}
	diff(t, "names and arguments",
		[][2]string{{"current_time", `{}`}, {"probe", `{"q":"one"}`}, {"probe", `{"q":"two"}`}},
		[][2]string{{calls[0].Name, calls[0].Arguments}, {calls[1].Name, calls[1].Arguments}, {calls[2].Name, calls[2].Arguments}})
}

// TestChatCompletionRenamesToolCallIDsTheConversationHas: a model that
// numbers its calls afresh each turn ("call_0") would give two calls of
// one conversation the same id, and a tool result would answer both; a
// repeated id is renamed after the call's sequence number.
func TestChatCompletionRenamesToolCallIDsTheConversationHas(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.Enqueue(llmtest.ToolCalls(
		llmtest.ToolCall{ID: "call_0", Name: "probe", Arguments: `{"q":"again"}`},
		llmtest.ToolCall{ID: "call_lh5", Name: "probe", Arguments: `{"q":"clash"}`},
	))
	conv := []longhaul.Message{
		{Role: longhaul.RoleUser, Content: "probe twice"},
		{Role: longhaul.RoleAssistant, ToolCalls: []longhaul.ToolCall{{ID: "call_0", Name: "probe", Arguments: `{"q":"first"}`}}},
		{Role: longhaul.RoleTool, ToolCallID: "call_0", Name: "probe", Content: "probed"},
	}
	env := f.activityEnv()
	got, err := chat(t, env, f.acts, contract.ModelRequest{Call: "turn-2", Agent: "assistant", Messages: conv, Tools: []string{"probe"}, NextCall: 4})
	if err != nil {
		t.Fatalf("ChatCompletion: %v", err)
	}
	calls := got.Message.ToolCalls
	if len(calls) != 2 {
		t.Fatalf("got %d tool calls, want 2", len(calls))
	}
	// call_0 is taken: the run's 4th call is call_lh4; the model's own
	// call_lh5 is new to the conversation and kept.
	diff(t, "ids", []string{"call_lh4", "call_lh5"}, []string{calls[0].ID, calls[1].ID})
}

func TestChatCompletionClassifiesModelErrors(t *testing.T) {
	tests := []struct {
		name         string
		reply        llmtest.Reply
		typ          string
		nonRetryable bool
		msg          string
	}{
		{"400 bad request", llmtest.Status(400, "messages must not be empty"), longhaul.ErrTypeModelRejected, true, "messages must not be empty"},
		{"401 unauthorized", llmtest.Status(401, "invalid api key"), longhaul.ErrTypeModelRejected, true, "invalid api key"},
		{"403 forbidden", llmtest.Status(403, "model not allowed for this key"), longhaul.ErrTypeModelRejected, true, "model not allowed for this key"},
		{"404 unknown model", llmtest.Status(404, "model llmtest does not exist"), longhaul.ErrTypeModelRejected, true, "model llmtest does not exist"},
		{"422 unprocessable", llmtest.Status(422, "context too long"), longhaul.ErrTypeModelRejected, true, "context too long"},
		{"429 rate limited", llmtest.Status(429, "slow down", llmtest.Header("Retry-After", "1")), longhaul.ErrTypeModelUnavailable, false, "slow down"},
		{"500 server error", llmtest.Status(500, "boom"), longhaul.ErrTypeModelUnavailable, false, "boom"},
		{"503 overloaded", llmtest.Status(503, "overloaded"), longhaul.ErrTypeModelUnavailable, false, "overloaded"},
		{"stream cut mid-way", llmtest.Text("one two three four five six").With(llmtest.CutAfter(2)), longhaul.ErrTypeModelUnavailable, false, ""},
		{"stream cut before finishing", llmtest.Text("one two").With(llmtest.CutAfter(5)), longhaul.ErrTypeModelUnavailable, false, ""},
		{"malformed chunk", llmtest.Text("one two three", llmtest.MalformedChunk()), longhaul.ErrTypeModelUnavailable, false, ""},
		{"connection dropped", llmtest.Drop(), longhaul.ErrTypeModelUnavailable, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			f.srv.Enqueue(tt.reply)
			env := f.activityEnv()
			_, err := chat(t, env, f.acts, contract.ModelRequest{Call: "turn-1", Agent: "assistant", Messages: userMessage("hi"), Publish: true})
			wantAppError(t, err, tt.typ, tt.nonRetryable, tt.msg)
			// Retrying is Temporal's job: the activity asks the model once.
			if n := len(f.srv.Requests()); n != 1 {
				t.Errorf("model got %d requests, want 1", n)
			}
		})
	}
}

func TestChatCompletionPublishesTextBeforeACut(t *testing.T) {
	const text = "alpha beta gamma delta epsilon"
	f := newFixture(t, nil, nil)
	f.srv.Enqueue(llmtest.Text(text).With(llmtest.CutAfter(3)))
	env, fl := f.followedEnv(t)
	_, err := chat(t, env, f.acts, contract.ModelRequest{Call: "turn-1", Agent: "naked", Messages: userMessage("hi"), Publish: true, After: 2})
	wantAppError(t, err, longhaul.ErrTypeModelUnavailable, false, "")
	// The words that arrived before the cut were streamed; subscribers
	// learn they are void from the retry's deltas, which name attempt 2.
	checkContent(t, fl.drain(t), "turn-1", 1, 2, "alpha beta gamma")
}

func TestChatCompletionNamesToolCallTargets(t *testing.T) {
	long := strings.Repeat("ü", 70)
	f := newFixture(t, nil, nil)
	f.srv.Enqueue(llmtest.ToolCalls(
		llmtest.ToolCall{ID: "zone", Name: "current_time", Arguments: `{"timezone":"Asia/Tokyo"}`},
		llmtest.ToolCall{ID: "utc", Name: "current_time", Arguments: `{}`},
		llmtest.ToolCall{ID: "query", Name: "probe", Arguments: `{"q":"` + long + `"}`},
		llmtest.ToolCall{ID: "url", Name: "web_get", Arguments: `{"url":"https://example.com/a/b?c=d"}`},
		llmtest.ToolCall{ID: "nothing", Name: "web_get", Arguments: `{"limit":3}`},
		llmtest.ToolCall{ID: "broken", Name: "probe", Arguments: `{"q":`},
	))
	env := f.activityEnv()
	got, err := chat(t, env, f.acts, contract.ModelRequest{Call: "turn-1", Agent: "assistant", Messages: userMessage("hi"), Tools: []string{"current_time", "probe"}})
	if err != nil {
		t.Fatalf("ChatCompletion: %v", err)
	}
	diff(t, "targets", map[string]string{
		"zone":  "Asia/Tokyo",
		"utc":   "UTC",
		"query": strings.Repeat("ü", 60) + "…",
		"url":   "example.com",
	}, got.Targets)
}

func TestChatCompletionStreamWithoutFinishReasonIsRetryable(t *testing.T) {
	f := newFixture(t, nil, func(c *activities.LLMConfig) {
		c.HTTPClient = &http.Client{Transport: rewriteBody{`"finish_reason":"stop"`, `"finish_reason":null`}}
	})
	f.srv.Enqueue(llmtest.Text("complete text, but no finish reason"))
	env := f.activityEnv()
	_, err := chat(t, env, f.acts, contract.ModelRequest{Call: "turn-1", Agent: "naked", Messages: userMessage("hi")})
	wantAppError(t, err, longhaul.ErrTypeModelUnavailable, false, "finish reason")
}

// TestChatCompletionUnreachableEndpoint calls a model endpoint nothing
// listens on: the error says it cannot reach the endpoint and what to do
// (as the start banner does), and stays retryable, so a run outlives an
// endpoint that restarts.
func TestChatCompletionUnreachableEndpoint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	f := newFixture(t, nil, func(c *activities.LLMConfig) { c.BaseURL = closed })
	_, err = chat(t, f.activityEnv(), f.acts, contract.ModelRequest{Call: "turn-1", Agent: "naked", Messages: userMessage("hi")})
	wantAppError(t, err, longhaul.ErrTypeModelUnavailable, false,
		"model call failed: cannot reach "+closed+" (connection refused); check that the endpoint runs, or set LONGHAUL_LLM_BASE_URL to your model endpoint")
}
