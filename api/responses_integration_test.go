package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/wire"
	openai "github.com/sashabaranov/go-openai"
)

// respStack is a stack with two principals, alice and bob.
func respStack(t *testing.T) (*testenv.Env, map[string]string, map[string]string) {
	t.Helper()
	env := testenv.Start(t, testenv.Options{API: api.Config{Keys: []identity.Key{{Name: "alice", Secret: "sk-alice"}, {Name: "bob", Secret: "sk-bob"}}}})
	return env, map[string]string{"Authorization": "Bearer sk-alice"}, map[string]string{"Authorization": "Bearer sk-bob"}
}

// respEvents reads a Responses stream: each frame an event line naming its
// type and a data line holding it, no [DONE].
func respEvents(t *testing.T, resp *http.Response) []wire.StreamEvent {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, readBody(t, resp))
	}
	frames, err := ssetest.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read SSE: %v", err)
	}
	var out []wire.StreamEvent
	for _, f := range frames {
		if !slices.Equal(f.Fields, []string{"event", "data"}) {
			t.Fatalf("frame %+v: want an event and a data line", f)
		}
		var e wire.StreamEvent
		if err := json.Unmarshal([]byte(f.Data), &e); err != nil {
			t.Fatalf("frame data %q: %v", f.Data, err)
		}
		if e.Type != f.Event {
			t.Fatalf("frame event %q carries type %q", f.Event, e.Type)
		}
		out = append(out, e)
	}
	return out
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// okResponse decodes a 200 response object.
func okResponse(t *testing.T, resp *http.Response) wire.Response {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, readBody(t, resp))
	}
	return decode[wire.Response](t, resp)
}

// outputText is the text of a response's message items.
func outputText(r wire.Response) string {
	var b strings.Builder
	for _, it := range r.Output {
		if it.Type == "message" && it.Content != nil {
			for _, p := range *it.Content {
				b.WriteString(p.Text)
			}
		}
	}
	return b.String()
}

// modelConversation is a model request's messages other than system ones, as
// "role: text" lines.
func modelConversation(r llmtest.Request) []string {
	var out []string
	for _, m := range r.Chat.Messages {
		if m.Role != openai.ChatMessageRoleSystem {
			out = append(out, m.Role+": "+llmtest.MessageText(m))
		}
	}
	return out
}

// TestResponsesChain continues a conversation with previous_response_id
// twice: each model request carries the whole conversation although the
// client sends only its new message, and instructions do not carry over.
func TestResponsesChain(t *testing.T) {
	env, alice, bob := respStack(t)
	env.Model.Enqueue(llmtest.Text("Hello Ann."), llmtest.Text("Blue it is."), llmtest.Text("You are Ann and like blue."))
	first := okResponse(t, do(t, env, "POST", "/v1/responses", map[string]any{"model": "naked", "input": "My name is Ann."}, alice))
	if first.Object != "response" || first.Status != "completed" || outputText(first) != "Hello Ann." || first.PreviousResponseID != nil || !first.Store {
		t.Fatalf("first response = %+v", first)
	}
	if first.Output[0].Type != "message" || first.Output[0].Role != "assistant" || (*first.Output[0].Content)[0].Type != "output_text" {
		t.Errorf("first output = %+v", first.Output)
	}
	second := okResponse(t, do(t, env, "POST", "/v1/responses", map[string]any{
		"model": "naked", "previous_response_id": first.ID, "instructions": "Answer in three words.",
		"input": []map[string]any{{"role": "user", "content": []map[string]string{{"type": "input_text", "text": "I like blue."}}}},
	}, alice))
	if *second.PreviousResponseID != first.ID || *second.Instructions != "Answer in three words." {
		t.Errorf("second response = %+v", second)
	}
	third := okResponse(t, do(t, env, "POST", "/v1/responses", map[string]any{"model": "naked", "previous_response_id": second.ID, "input": "Who am I?"}, alice))
	if outputText(third) != "You are Ann and like blue." {
		t.Errorf("third answer = %q", outputText(third))
	}
	reqs := env.Model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	want := []string{"user: My name is Ann.", "assistant: Hello Ann.", "user: I like blue.", "assistant: Blue it is.", "user: Who am I?"}
	if diff := cmp.Diff(want, modelConversation(reqs[2])); diff != "" {
		t.Errorf("third model request (-want +got):\n%s", diff)
	}
	if !strings.Contains(reqs[1].SystemPrompt(), "Answer in three words.") {
		t.Errorf("second request's system prompt %q lacks the instructions", reqs[1].SystemPrompt())
	}
	if strings.Contains(reqs[2].SystemPrompt(), "three words") {
		t.Errorf("instructions carried over to the third request: %q", reqs[2].SystemPrompt())
	}
	// The response is rebuilt from the run: GET shows what POST returned.
	got := okResponse(t, do(t, env, "GET", "/v1/responses/"+third.ID, nil, alice))
	if diff := cmp.Diff(third.Output, got.Output); diff != "" || got.Status != "completed" || *got.PreviousResponseID != second.ID {
		t.Errorf("GET = %+v; output (-post +get):\n%s", got, diff)
	}
	// Its input items are its own input, not the conversation before it.
	items := decode[wire.InputItemList](t, do(t, env, "GET", "/v1/responses/"+second.ID+"/input_items", nil, alice))
	if len(items.Data) != 1 || items.Data[0].Role != "user" || !strings.Contains(string(items.Data[0].Content), "I like blue.") || items.HasMore {
		t.Errorf("input items = %+v", items)
	}
	// Bob can continue none of it.
	resp := do(t, env, "POST", "/v1/responses", map[string]any{"model": "naked", "previous_response_id": third.ID, "input": "Who am I?"}, bob)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob continuing alice's response: status %d", resp.StatusCode)
	}
}

// TestResponsesStream streams a response whose agent calls a tool, checks
// the event order and numbering, and resumes it from the middle.
func TestResponsesStream(t *testing.T) {
	env, alice, bob := respStack(t)
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{Name: "current_time", Arguments: `{"timezone":"UTC"}`}).WithText("Let me check the clock."),
		llmtest.Text("It is some time in the day, and the clock agrees with that statement entirely."),
	)
	events := respEvents(t, do(t, env, "POST", "/v1/responses", map[string]any{"model": "assistant", "input": "What time is it?", "stream": true}, alice))
	var types []string
	for i, e := range events {
		if e.SequenceNumber != int64(i) {
			t.Fatalf("event %d (%s) has sequence number %d", i, e.Type, e.SequenceNumber)
		}
		if len(types) == 0 || types[len(types)-1] != e.Type {
			types = append(types, e.Type)
		}
	}
	want := []string{
		"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.mcp_call.in_progress", "response.mcp_call.completed", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.completed",
	}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Fatalf("event types (-want +got):\n%s", diff)
	}
	final := events[len(events)-1].Response
	if final.Status != "completed" || len(final.Output) != 3 || final.Output[1].Type != "mcp_call" || final.Output[1].Name != "current_time" || final.Output[1].Output == nil {
		t.Fatalf("final response = %+v", final)
	}
	if events[0].Response.Status != "in_progress" || len(events[0].Response.Output) != 0 {
		t.Errorf("created = %+v", events[0].Response)
	}
	// Resuming after any event sends exactly the events after it.
	for _, n := range []int{0, 5, len(events) / 2, len(events) - 2} {
		resumed := respEvents(t, do(t, env, "GET", "/v1/responses/"+final.ID+"?stream=true&starting_after="+strconv.Itoa(n), nil, alice))
		if diff := cmp.Diff(events[n+1:], resumed); diff != "" {
			t.Errorf("resumed after %d (-want +got):\n%s", n, diff)
		}
	}
	if resp := do(t, env, "GET", "/v1/responses/"+final.ID+"?stream=true", nil, bob); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob streaming alice's response: status %d", resp.StatusCode)
	}

	// A stream cut off while the answer streams live resumes after its
	// last event, numbered as a stream read from the log afterwards is.
	long := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 12)
	env.Model.Enqueue(llmtest.Text(long, llmtest.ChunkSize(4), llmtest.ChunkDelay(10*time.Millisecond)))
	bg := okResponse(t, do(t, env, "POST", "/v1/responses", map[string]any{"model": "naked", "input": "Tell a story.", "background": true}, alice))
	cut := do(t, env, "GET", "/v1/responses/"+bg.ID+"?stream=true", nil, alice)
	rd := ssetest.NewReader(cut.Body)
	var head []wire.StreamEvent
	for len(head) < 7 {
		f, err := rd.Next()
		if err != nil {
			t.Fatalf("read the live stream: %v", err)
		}
		var e wire.StreamEvent
		if err := json.Unmarshal([]byte(f.Data), &e); err != nil {
			t.Fatal(err)
		}
		head = append(head, e)
	}
	cut.Body.Close()
	last := strconv.FormatInt(head[len(head)-1].SequenceNumber, 10)
	rest := respEvents(t, do(t, env, "GET", "/v1/responses/"+bg.ID+"?stream=true&starting_after="+last, nil, alice))
	whole := respEvents(t, do(t, env, "GET", "/v1/responses/"+bg.ID+"?stream=true", nil, alice))
	if diff := cmp.Diff(whole, append(head, rest...)); diff != "" {
		t.Errorf("cut and resumed stream (-whole +cut and resumed):\n%s", diff)
	}
	if got := outputText(*whole[len(whole)-1].Response); got != long {
		t.Errorf("answer = %q", got)
	}
}

// TestResponsesFunctionCalls runs a client function tool through the
// Responses API: the model's call comes out as a function_call item, the
// function_call_output continues the same run (a retry attaches to it),
// streamed, and a later previous_response_id starts a new run with the
// whole exchange. A client that resends the whole history without
// previous_response_id continues the run as well.
func TestResponsesFunctionCalls(t *testing.T) {
	env, alice, bob := respStack(t)
	weather := []map[string]any{{"type": "function", "name": "get_weather", "description": "The weather in a city",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]string{"type": "string"}}}}}
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{Name: "get_weather", Arguments: `{"city":"Oslo"}`}),
		llmtest.Text("It rains in Oslo, so take an umbrella with you today."),
		llmtest.Text("You are welcome."),
	)
	first := okResponse(t, do(t, env, "POST", "/v1/responses", map[string]any{"model": "naked", "input": "Weather in Oslo?", "tools": weather}, alice))
	if first.Status != "completed" || len(first.Output) != 1 || first.Output[0].Type != "function_call" {
		t.Fatalf("first response = %+v", first)
	}
	call := first.Output[0]
	if call.Name != "get_weather" || *call.Arguments != `{"city":"Oslo"}` || !strings.HasPrefix(call.CallID, "call_lh_") || call.Status != "completed" {
		t.Fatalf("function call = %+v", call)
	}
	if len(first.Tools) != 1 || first.Tools[0].Name != "get_weather" {
		t.Errorf("tools = %+v", first.Tools)
	}
	output := []map[string]any{{"type": "function_call_output", "call_id": call.CallID, "output": "rain"}}
	if resp := do(t, env, "POST", "/v1/responses", map[string]any{"model": "naked", "previous_response_id": first.ID, "input": output}, bob); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob answering alice's call: status %d", resp.StatusCode)
	}
	events := respEvents(t, do(t, env, "POST", "/v1/responses", map[string]any{"model": "naked", "previous_response_id": first.ID, "input": output, "stream": true}, alice))
	second := events[len(events)-1].Response
	if events[len(events)-1].Type != "response.completed" || outputText(*second) != "It rains in Oslo, so take an umbrella with you today." {
		t.Fatalf("second response = %+v", second)
	}
	if second.ID == first.ID || *second.PreviousResponseID != first.ID {
		t.Errorf("second id %s, previous %v; first %s", second.ID, second.PreviousResponseID, first.ID)
	}
	for i, e := range events {
		if e.SequenceNumber != int64(i) {
			t.Fatalf("event %d has sequence number %d", i, e.SequenceNumber)
		}
	}
	if got := modelConversation(env.Model.Requests()[1]); !slices.Contains(got, "tool: rain") {
		t.Errorf("the model did not get the output: %q", got)
	}
	// A retry, and a client resending the whole history, attach to it.
	again := okResponse(t, do(t, env, "POST", "/v1/responses", map[string]any{"model": "naked", "previous_response_id": first.ID, "input": output}, alice))
	history := []map[string]any{
		{"role": "user", "content": "Weather in Oslo?"},
		{"type": "function_call", "call_id": call.CallID, "name": "get_weather", "arguments": `{"city":"Oslo"}`},
		output[0],
	}
	resent := okResponse(t, do(t, env, "POST", "/v1/responses", map[string]any{"model": "naked", "input": history, "tools": weather}, alice))
	for _, r := range []wire.Response{again, resent} {
		if r.ID != second.ID || outputText(r) != outputText(*second) {
			t.Errorf("repeat = %+v, want response %s", r, second.ID)
		}
	}
	items := decode[wire.InputItemList](t, do(t, env, "GET", "/v1/responses/"+second.ID+"/input_items", nil, alice))
	if len(items.Data) != 1 || items.Data[0].Type != "function_call_output" || items.Data[0].CallID != call.CallID || string(items.Data[0].Output) != `"rain"` {
		t.Errorf("input items = %+v", items)
	}
	third := okResponse(t, do(t, env, "POST", "/v1/responses", map[string]any{"model": "naked", "previous_response_id": second.ID, "input": "Thanks!"}, alice))
	if outputText(third) != "You are welcome." {
		t.Errorf("third = %+v", third)
	}
	reqs := env.Model.Requests()
	want := []string{"user: Weather in Oslo?", "assistant: ", "tool: rain", "assistant: It rains in Oslo, so take an umbrella with you today.", "user: Thanks!"}
	if diff := cmp.Diff(want, modelConversation(reqs[len(reqs)-1])); diff != "" {
		t.Errorf("third model request (-want +got):\n%s", diff)
	}
	if n := len(reqs); n != 3 {
		t.Errorf("%d model requests, want 3", n)
	}
}
