package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// lookupTool is a client's own function tool.
var lookupTool = map[string]any{"type": "function", "function": map[string]any{
	"name": "lookup_order", "description": "Looks an order up in the client's system",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}, "required": []string{"id"}},
}}

// afterCalls is the conversation a client sends back: its question, the
// assistant message with the calls it was handed, and a result for each.
func afterCalls(question string, msg wire.ResponseEntry, results ...string) []any {
	calls := make([]map[string]any, len(msg.ToolCalls))
	for i, c := range msg.ToolCalls {
		calls[i] = map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Function.Name, "arguments": c.Function.Arguments}}
	}
	out := []any{map[string]any{"role": "user", "content": question}, map[string]any{"role": "assistant", "content": msg.Content, "tool_calls": calls}}
	for i, c := range msg.ToolCalls {
		out = append(out, map[string]any{"role": "tool", "tool_call_id": c.ID, "content": results[i]})
	}
	return out
}

func TestClientTools(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	t.Run("handed over beside a server tool, then continued in the same run", func(t *testing.T) {
		env.Model.Enqueue(llmtest.ToolCalls(
			llmtest.ToolCall{Name: "current_time", Arguments: `{"timezone":"UTC"}`},
			llmtest.ToolCall{Name: "lookup_order", Arguments: `{"id":"A-7"}`},
		).WithText("Let me check."))
		env.Model.Enqueue(llmtest.Text("Order A-7 shipped on Sunday."))
		body := chatBody{"model": "assistant", "messages": userMsg("where is order A-7?"), "tools": []any{lookupTool}}
		resp := do(t, env, "POST", "/v1/chat/completions", body, nil)
		run := resp.Header.Get(api.HeaderRunID)
		c := decode[wire.ChatCompletion](t, resp)
		msg := c.Choices[0].Message
		if resp.StatusCode != 200 || c.Choices[0].FinishReason != "tool_calls" || len(msg.ToolCalls) != 1 ||
			msg.ToolCalls[0].Function.Name != "lookup_order" || msg.ToolCalls[0].Function.Arguments != `{"id":"A-7"}` || msg.Content != "Let me check." {
			t.Fatalf("status %d, completion %+v", resp.StatusCode, c)
		}
		if got, ok := contract.ParseClientCallID(msg.ToolCalls[0].ID); !ok || got != run {
			t.Fatalf("call id %q names run %q, want %q", msg.ToolCalls[0].ID, got, run)
		}
		// The model was offered both tools.
		first := env.Model.Requests()[len(env.Model.Requests())-1].Chat
		var names []string
		for _, tl := range first.Tools {
			names = append(names, tl.Function.Name)
		}
		if !strings.Contains(strings.Join(names, ","), "current_time") || !strings.Contains(strings.Join(names, ","), "lookup_order") {
			t.Fatalf("tools offered: %v", names)
		}

		next := chatBody{"model": "assistant", "messages": afterCalls("where is order A-7?", msg, `{"status":"shipped"}`), "tools": []any{lookupTool}}
		resp = do(t, env, "POST", "/v1/chat/completions", next, nil)
		c = decode[wire.ChatCompletion](t, resp)
		if resp.Header.Get(api.HeaderRunID) != run || c.Choices[0].Message.Content != "Order A-7 shipped on Sunday." || c.Choices[0].FinishReason != "stop" {
			t.Fatalf("run %q (want %q), completion %+v", resp.Header.Get(api.HeaderRunID), run, c)
		}
		// The model saw both results, in the order of its calls.
		reqs := env.Model.Requests()
		conv := reqs[len(reqs)-1].Chat.Messages
		server, client := conv[len(conv)-2], conv[len(conv)-1]
		if server.Role != "tool" || !strings.Contains(server.Content, "weekday") || client.Role != "tool" ||
			client.Content != `{"status":"shipped"}` || client.ToolCallID != msg.ToolCalls[0].ID {
			t.Fatalf("the model's last messages: %+v, %+v", server, client)
		}
		calls := len(reqs)

		// A retried request attaches: same answer, no model call.
		resp = do(t, env, "POST", "/v1/chat/completions", next, nil)
		c = decode[wire.ChatCompletion](t, resp)
		if c.Choices[0].Message.Content != "Order A-7 shipped on Sunday." || len(env.Model.Requests()) != calls {
			t.Fatalf("retry: completion %+v, model calls %d (want %d)", c, len(env.Model.Requests()), calls)
		}
	})

	t.Run("streamed as tool call deltas", func(t *testing.T) {
		env.Model.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{Name: "lookup_order", Arguments: `{"id":"B-1"}`}))
		env.Model.Enqueue(llmtest.Text("B-1 is on its way."))
		body := chatBody{"model": "assistant", "stream": true, "messages": userMsg("and B-1?"), "tools": []any{lookupTool}}
		frames := sseData(t, do(t, env, "POST", "/v1/chat/completions", body, nil).Body)
		if frames[len(frames)-1] != "[DONE]" {
			t.Fatalf("stream does not end with [DONE]: %v", frames)
		}
		var msg wire.ResponseEntry
		var finish string
		for _, f := range frames[:len(frames)-1] {
			var ch wire.ChatChunk
			if err := json.Unmarshal([]byte(f), &ch); err != nil {
				t.Fatal(err)
			}
			for _, choice := range ch.Choices {
				msg.Content += choice.Delta.Content
				for _, tc := range choice.Delta.ToolCalls {
					if tc.Index == nil || *tc.Index != 0 {
						t.Fatalf("tool call delta without index 0: %s", f)
					}
					msg.ToolCalls = append(msg.ToolCalls, tc)
				}
				if choice.FinishReason != nil {
					finish = *choice.FinishReason
				}
			}
		}
		if finish != "tool_calls" || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Arguments != `{"id":"B-1"}` {
			t.Fatalf("finish %q, message %+v", finish, msg)
		}
		next := chatBody{"model": "assistant", "stream": true, "messages": afterCalls("and B-1?", msg, "in transit"), "tools": []any{lookupTool}}
		frames = sseData(t, do(t, env, "POST", "/v1/chat/completions", next, nil).Body)
		if got := chunkText(t, frames); got != "B-1 is on its way." {
			t.Fatalf("continued stream text %q", got)
		}
	})

	t.Run("refused", func(t *testing.T) {
		clash := map[string]any{"type": "function", "function": map[string]any{"name": "current_time"}}
		for name, body := range map[string]chatBody{
			"name clash":        {"model": "assistant", "messages": userMsg("x"), "tools": []any{clash}},
			"unknown choice":    {"model": "assistant", "messages": userMsg("x"), "tools": []any{lookupTool}, "tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "nope"}}},
			"not a function":    {"model": "assistant", "messages": userMsg("x"), "tools": []any{map[string]any{"type": "web_search"}}},
			"bad schema format": {"model": "assistant", "messages": userMsg("x"), "response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "schema": map[string]any{"type": "string"}}}},
			"audio part":        {"model": "assistant", "messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_audio", "input_audio": map[string]any{"data": "AAAA", "format": "wav"}}}}}},
		} {
			resp := do(t, env, "POST", "/v1/chat/completions", body, nil)
			e := decode[wire.ErrorBody](t, resp)
			if resp.StatusCode != http.StatusBadRequest || e.Error.Message == "" || e.Error.Type != "invalid_request_error" {
				t.Errorf("%s: status %d, error %+v", name, resp.StatusCode, e)
			}
		}
	})
}

func TestResponseFormat(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	schema := map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}, "additionalProperties": false}
	// An endpoint that ignores response_format answers in prose first.
	env.Model.Enqueue(llmtest.Text("The capital is Paris."))
	env.Model.Enqueue(llmtest.Text("Sure: {\"city\": \"Paris\"}"))
	resp := do(t, env, "POST", "/v1/chat/completions", chatBody{
		"model": "naked", "messages": userMsg("capital of France?"),
		"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "answer", "schema": schema, "strict": true}},
	}, nil)
	c := decode[wire.ChatCompletion](t, resp)
	if resp.StatusCode != 200 || c.Choices[0].Message.Content != `{"city": "Paris"}` {
		t.Fatalf("status %d, completion %+v", resp.StatusCode, c)
	}
	reqs := env.Model.Requests()
	first, second := reqs[len(reqs)-2].Chat, reqs[len(reqs)-1].Chat
	if first.ResponseFormat == nil || first.ResponseFormat.Type != "json_schema" || first.ResponseFormat.JSONSchema.Name != "answer" || !first.ResponseFormat.JSONSchema.Strict {
		t.Fatalf("first call's response_format %+v", first.ResponseFormat)
	}
	if last := second.Messages[len(second.Messages)-1]; !strings.Contains(last.Content, "not valid") || !strings.Contains(last.Content, "JSON object") {
		t.Fatalf("the correction asks %q", last.Content)
	}
}

func TestRequestPassThrough(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	big := "data:image/png;base64," + strings.Repeat("iVBORw0KGgo", 3000)
	t.Run("options and images reach the model", func(t *testing.T) {
		env.Model.Enqueue(llmtest.Text("A cat."))
		resp := do(t, env, "POST", "/v1/chat/completions", chatBody{
			"model": "naked", "stop": []string{"END"}, "seed": 7, "logprobs": true, "top_logprobs": 2,
			"max_completion_tokens": 99, "reasoning_effort": "low",
			"messages": []any{map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "What is in these?"},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": big, "detail": "low"}},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://example.com/cat.png"}},
			}}},
		}, nil)
		if c := decode[wire.ChatCompletion](t, resp); resp.StatusCode != 200 || c.Choices[0].Message.Content != "A cat." {
			t.Fatalf("status %d, completion %+v", resp.StatusCode, c)
		}
		req := env.Model.Requests()[len(env.Model.Requests())-1].Chat
		if strings.Join(req.Stop, ",") != "END" || req.Seed == nil || *req.Seed != 7 || !req.LogProbs || req.TopLogProbs != 2 ||
			req.MaxCompletionTokens != 99 || req.ReasoningEffort != "low" {
			t.Fatalf("model request %+v", req)
		}
		parts := req.Messages[len(req.Messages)-1].MultiContent
		if len(parts) != 3 || parts[0].Text != "What is in these?" || parts[1].ImageURL == nil || parts[1].ImageURL.URL != big ||
			parts[1].ImageURL.Detail != "low" || parts[2].ImageURL == nil || parts[2].ImageURL.URL != "https://example.com/cat.png" {
			t.Fatalf("the model got parts %+v", parts)
		}
	})
	t.Run("n > 1 is refused", func(t *testing.T) {
		resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "naked", "n": 2, "messages": userMsg("x")}, nil)
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("reasoning streams as reasoning_content", func(t *testing.T) {
		env.Model.Enqueue(llmtest.Text("Four.", llmtest.Reasoning("two plus two is four")))
		frames := sseData(t, do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "naked", "stream": true, "messages": userMsg("2+2?")}, nil).Body)
		var reasoning, content strings.Builder
		for _, f := range frames[:len(frames)-1] {
			var ch wire.ChatChunk
			if json.Unmarshal([]byte(f), &ch) != nil {
				continue
			}
			for _, choice := range ch.Choices {
				if choice.Delta.ReasoningContent != "" && content.Len() > 0 {
					t.Fatalf("reasoning after the answer began: %s", f)
				}
				reasoning.WriteString(choice.Delta.ReasoningContent)
				content.WriteString(choice.Delta.Content)
			}
		}
		if reasoning.String() != "two plus two is four" || content.String() != "Four." {
			t.Fatalf("reasoning %q, content %q", reasoning.String(), content.String())
		}
	})
}

// TestClientToolCallSurvivesWorkerStop stops the worker while the answer
// that calls a client tool streams: the retried call's tool call reaches
// the client once, and its result continues the run.
func TestClientToolCallSurvivesWorkerStop(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	words := strings.TrimSpace(strings.Repeat("checking the order book ", 10))
	env.Model.On(func(r llmtest.Request) bool { return r.Chat.Messages[len(r.Chat.Messages)-1].Role == "user" },
		llmtest.ToolCalls(llmtest.ToolCall{Name: "lookup_order", Arguments: `{"id":"C-3"}`}).WithText(words).With(llmtest.ChunkDelay(20*time.Millisecond)))
	env.Model.On(func(r llmtest.Request) bool { return r.Chat.Messages[len(r.Chat.Messages)-1].Role == "tool" }, llmtest.Text("C-3 arrived."))
	body := chatBody{"model": "assistant", "stream": true, "messages": userMsg("C-3?"), "tools": []any{lookupTool}}
	rd := ssetest.NewReader(do(t, env, "POST", "/v1/chat/completions", body, nil).Body)
	var frames []string
	for {
		e, err := rd.Next()
		if err != nil {
			t.Fatalf("stream broke: %v", err)
		}
		frames = append(frames, e.Data)
		if e.Data == ssetest.Done {
			break
		}
		if len(frames) == 5 {
			env.StopWorker()
			env.StartWorker()
		}
	}
	var msg wire.ResponseEntry
	for _, f := range frames[:len(frames)-1] {
		var ch wire.ChatChunk
		if json.Unmarshal([]byte(f), &ch) != nil {
			continue
		}
		for _, choice := range ch.Choices {
			msg.Content += choice.Delta.Content
			msg.ToolCalls = append(msg.ToolCalls, choice.Delta.ToolCalls...)
		}
	}
	if msg.Content != words || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Arguments != `{"id":"C-3"}` {
		t.Fatalf("client saw text %q and calls %+v", msg.Content, msg.ToolCalls)
	}
	if n := len(env.Model.Requests()); n < 2 {
		t.Fatalf("model called %d times; the stop did not interrupt the call", n)
	}
	next := chatBody{"model": "assistant", "messages": afterCalls("C-3?", msg, "delivered"), "tools": []any{lookupTool}}
	if c := decode[wire.ChatCompletion](t, do(t, env, "POST", "/v1/chat/completions", next, nil)); c.Choices[0].Message.Content != "C-3 arrived." {
		t.Fatalf("continued: %+v", c)
	}
}
