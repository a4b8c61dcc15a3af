package llmtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	openai "github.com/sashabaranov/go-openai"
	"github.com/sashabaranov/go-openai/jsonschema"
)

func TestStreamText(t *testing.T) {
	tests := []struct {
		name       string
		text       string
		opts       []llmtest.Option
		wantChunks int // content chunks carrying text
	}{
		{name: "one word per chunk", text: "The quick brown fox jumps.", wantChunks: 5},
		{name: "whitespace kept", text: "  leading and trailing\n\nlines  ", wantChunks: 4},
		{name: "chunk size in runes", text: "héllo wörld", opts: []llmtest.Option{llmtest.ChunkSize(3)}, wantChunks: 4},
		{name: "single chunk", text: "short", opts: []llmtest.Option{llmtest.ChunkSize(100)}, wantChunks: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Enqueue(llmtest.Text(tt.text, tt.opts...))

			req := userRequest("hi")
			req.Stream = true
			chunks, err := streamChat(t, newClient(srv), req)
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if got := content(chunks); got != tt.text {
				t.Errorf("concatenated content = %q, want %q", got, tt.text)
			}
			var withText int
			for i, c := range chunks {
				if c.Object != "chat.completion.chunk" {
					t.Errorf("chunk %d object = %q", i, c.Object)
				}
				if c.Model != "test-model" {
					t.Errorf("chunk %d model = %q, want the request's", i, c.Model)
				}
				if c.ID != chunks[0].ID || c.ID == "" {
					t.Errorf("chunk %d id = %q, want the same non-empty id as chunk 0 (%q)", i, c.ID, chunks[0].ID)
				}
				if c.Usage != nil {
					t.Errorf("chunk %d has usage without include_usage", i)
				}
				if len(c.Choices) != 1 {
					t.Fatalf("chunk %d has %d choices, want 1", i, len(c.Choices))
				}
				d := c.Choices[0].Delta
				if wantRole := i == 0; (d.Role == openai.ChatMessageRoleAssistant) != wantRole || (!wantRole && d.Role != "") {
					t.Errorf("chunk %d role = %q; the role belongs in the first chunk only", i, d.Role)
				}
				if d.Content != "" {
					withText++
				}
				if fr := c.Choices[0].FinishReason; (fr != "") != (i == len(chunks)-1) {
					t.Errorf("chunk %d finish_reason = %q; only the last chunk has one", i, fr)
				}
			}
			if withText != tt.wantChunks {
				t.Errorf("content chunks = %d, want %d", withText, tt.wantChunks)
			}
			if got := finishReason(chunks); got != openai.FinishReasonStop {
				t.Errorf("finish_reason = %q, want stop", got)
			}
		})
	}
}

func TestStreamIncludeUsage(t *testing.T) {
	tests := []struct {
		name string
		opts []llmtest.Option
		want openai.Usage
	}{
		// Prompt: "You are terse." (4) + "count me in" (3); completion: 3 words.
		{name: "computed", want: openai.Usage{PromptTokens: 7, CompletionTokens: 3, TotalTokens: 10}},
		{name: "overridden", opts: []llmtest.Option{llmtest.Usage(100, 20)}, want: openai.Usage{PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Enqueue(llmtest.Text("one two three", tt.opts...))

			s, err := newClient(srv).CreateChatCompletionStream(context.Background(), streamRequest("count me in"))
			if err != nil {
				t.Fatal(err)
			}
			chunks, err := readStream(s) // nil error: the stream ended with [DONE]
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			last := chunks[len(chunks)-1]
			if len(last.Choices) != 0 {
				t.Errorf("usage chunk has %d choices, want none", len(last.Choices))
			}
			if last.Usage == nil {
				t.Fatal("last chunk before [DONE] has no usage")
			}
			got := openai.Usage{PromptTokens: last.Usage.PromptTokens, CompletionTokens: last.Usage.CompletionTokens, TotalTokens: last.Usage.TotalTokens}
			if d := diff(tt.want, got); d != "" {
				t.Errorf("usage:\n%s", d)
			}
			for i, c := range chunks[:len(chunks)-1] {
				if c.Usage != nil {
					t.Errorf("chunk %d has usage; only the final chunk does", i)
				}
			}
			if got := finishReason(chunks); got != openai.FinishReasonStop {
				t.Errorf("finish_reason = %q, want stop", got)
			}
		})
	}
}

func TestNonStreamText(t *testing.T) {
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.Text("Paris is the capital."))

	resp, err := newClient(srv).CreateChatCompletion(context.Background(), userRequest("capital of France?"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Object != "chat.completion" || resp.Model != "test-model" || resp.ID == "" {
		t.Errorf("envelope = object %q model %q id %q", resp.Object, resp.Model, resp.ID)
	}
	if len(resp.Choices) != 1 {
		t.Fatalf("choices = %d, want 1", len(resp.Choices))
	}
	c := resp.Choices[0]
	if c.Message.Role != openai.ChatMessageRoleAssistant || c.Message.Content != "Paris is the capital." {
		t.Errorf("message = %+v", c.Message)
	}
	if c.FinishReason != openai.FinishReasonStop {
		t.Errorf("finish_reason = %q, want stop", c.FinishReason)
	}
	// Prompt: "You are terse." (4) + "capital of France?" (4); completion 5.
	want := openai.Usage{PromptTokens: 8, CompletionTokens: 5, TotalTokens: 13}
	got := openai.Usage{PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens, TotalTokens: resp.Usage.TotalTokens}
	if d := diff(want, got); d != "" {
		t.Errorf("usage:\n%s", d)
	}
}

func TestFinishReasonOverride(t *testing.T) {
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.Text("cut short", llmtest.FinishReason("length")), llmtest.Text("cut short", llmtest.FinishReason("length")))
	c := newClient(srv)

	resp, err := c.CreateChatCompletion(context.Background(), userRequest("x"))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].FinishReason; got != openai.FinishReasonLength {
		t.Errorf("non-stream finish_reason = %q, want length", got)
	}
	chunks, err := streamChat(t, c, streamRequest("x"))
	if err != nil {
		t.Fatal(err)
	}
	if got := finishReason(chunks); got != openai.FinishReasonLength {
		t.Errorf("stream finish_reason = %q, want length", got)
	}
}

// accumulateToolCalls reassembles streamed tool calls the way clients do:
// by index, taking id, type and name from the first delta and appending
// argument pieces.
func accumulateToolCalls(t *testing.T, chunks []openai.ChatCompletionStreamResponse) ([]openai.ToolCall, map[int]int) {
	t.Helper()
	var calls []openai.ToolCall
	argDeltas := map[int]int{}
	for _, c := range chunks {
		for _, ch := range c.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index == nil {
					t.Fatalf("tool call delta without index: %+v", tc)
				}
				i := *tc.Index
				for len(calls) <= i {
					calls = append(calls, openai.ToolCall{})
				}
				if tc.ID != "" {
					if calls[i].ID != "" {
						t.Errorf("tool call %d: id sent twice", i)
					}
					calls[i].ID = tc.ID
				}
				if tc.Type != "" {
					calls[i].Type = tc.Type
				}
				if tc.Function.Name != "" {
					calls[i].Function.Name += tc.Function.Name
				}
				if tc.Function.Arguments != "" {
					calls[i].Function.Arguments += tc.Function.Arguments
					argDeltas[i]++
				}
			}
		}
	}
	return calls, argDeltas
}

func TestToolCalls(t *testing.T) {
	scripted := []llmtest.ToolCall{
		{ID: "call_weather", Name: "get_weather", Arguments: `{"city":"Paris","unit":"celsius"}`},
		{ID: "call_time", Name: "get_time", Arguments: `{"timezone":"Europe/Paris"}`},
	}
	want := []openai.ToolCall{
		{ID: "call_weather", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris","unit":"celsius"}`}},
		{ID: "call_time", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "get_time", Arguments: `{"timezone":"Europe/Paris"}`}},
	}
	tests := []struct {
		name     string
		reply    llmtest.Reply
		wantText string
	}{
		{name: "calls only", reply: llmtest.ToolCalls(scripted...)},
		{name: "with leading text", reply: llmtest.ToolCalls(scripted...).WithText("Let me check."), wantText: "Let me check."},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/stream", func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Enqueue(tt.reply)
			chunks, err := streamChat(t, newClient(srv), streamRequest("weather and time?"))
			if err != nil {
				t.Fatal(err)
			}
			got, argDeltas := accumulateToolCalls(t, chunks)
			if d := diff(want, got); d != "" {
				t.Errorf("reassembled tool calls:\n%s", d)
			}
			for i := range want {
				if argDeltas[i] < 2 {
					t.Errorf("tool call %d arguments arrived in %d deltas, want several", i, argDeltas[i])
				}
			}
			if got := content(chunks); got != tt.wantText {
				t.Errorf("text content = %q, want %q", got, tt.wantText)
			}
			if got := finishReason(chunks); got != openai.FinishReasonToolCalls {
				t.Errorf("finish_reason = %q, want tool_calls", got)
			}
			if role := chunks[0].Choices[0].Delta.Role; role != openai.ChatMessageRoleAssistant {
				t.Errorf("first chunk role = %q", role)
			}
		})
		t.Run(tt.name+"/non-stream", func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Enqueue(tt.reply)
			resp, err := newClient(srv).CreateChatCompletion(context.Background(), userRequest("weather and time?"))
			if err != nil {
				t.Fatal(err)
			}
			msg := resp.Choices[0].Message
			if d := diff(want, msg.ToolCalls); d != "" {
				t.Errorf("tool calls:\n%s", d)
			}
			if msg.Content != tt.wantText {
				t.Errorf("content = %q, want %q", msg.Content, tt.wantText)
			}
			if resp.Choices[0].FinishReason != openai.FinishReasonToolCalls {
				t.Errorf("finish_reason = %q, want tool_calls", resp.Choices[0].FinishReason)
			}
		})
	}
}

func TestToolCallIDsGenerated(t *testing.T) {
	srv := llmtest.New(t)
	r := llmtest.ToolCalls(llmtest.ToolCall{Name: "a", Arguments: "{}"}, llmtest.ToolCall{Name: "b", Arguments: "{}"})
	srv.Enqueue(r, r)
	c := newClient(srv)

	var ids []string
	resp, err := c.CreateChatCompletion(context.Background(), userRequest("x"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range resp.Choices[0].Message.ToolCalls {
		ids = append(ids, tc.ID)
	}
	chunks, err := streamChat(t, c, streamRequest("x"))
	if err != nil {
		t.Fatal(err)
	}
	calls, _ := accumulateToolCalls(t, chunks)
	for _, tc := range calls {
		ids = append(ids, tc.ID)
	}
	if d := diff([]string{"call_1", "call_2", "call_3", "call_4"}, ids); d != "" {
		t.Errorf("generated ids:\n%s", d)
	}
}

func TestJSONStructuredOutput(t *testing.T) {
	type verdict struct {
		Label      string   `json:"label"`
		Confidence float64  `json:"confidence"`
		Tags       []string `json:"tags"`
	}
	want := verdict{Label: "billing", Confidence: 0.93, Tags: []string{"refund", "urgent"}}
	schema, err := jsonschema.GenerateSchemaForType(want)
	if err != nil {
		t.Fatal(err)
	}
	req := userRequest("classify: I want my money back")
	req.ResponseFormat = &openai.ChatCompletionResponseFormat{
		Type:       openai.ChatCompletionResponseFormatTypeJSONSchema,
		JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: "verdict", Schema: schema, Strict: true},
	}

	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Enqueue(llmtest.JSON(want))
			c := newClient(srv)

			var text string
			if stream {
				r := req
				r.Stream = true
				chunks, err := streamChat(t, c, r)
				if err != nil {
					t.Fatal(err)
				}
				if len(chunks) < 4 {
					t.Errorf("JSON arrived in %d chunks, want it split", len(chunks))
				}
				text = content(chunks)
			} else {
				resp, err := c.CreateChatCompletion(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				text = resp.Choices[0].Message.Content
			}
			var got verdict
			if err := json.Unmarshal([]byte(text), &got); err != nil {
				t.Fatalf("content %q is not JSON: %v", text, err)
			}
			if d := diff(want, got); d != "" {
				t.Errorf("structured output:\n%s", d)
			}

			recorded := srv.Requests()[0].Chat.ResponseFormat
			if recorded == nil || recorded.JSONSchema == nil || recorded.JSONSchema.Name != "verdict" || recorded.JSONSchema.Schema == nil {
				t.Errorf("recorded response_format = %+v, want the json_schema sent", recorded)
			}
		})
	}
}

func TestFuncEchoesRequest(t *testing.T) {
	srv := llmtest.New(t)
	echo := llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		return llmtest.Text(fmt.Sprintf("#%d: %s", r.N, strings.ToUpper(r.LastUserMessage())))
	})
	srv.SetDefault(echo)
	c := newClient(srv)

	for i, msg := range []string{"hello", "again"} {
		resp, err := c.CreateChatCompletion(context.Background(), userRequest(msg))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := resp.Choices[0].Message.Content, fmt.Sprintf("#%d: %s", i+1, strings.ToUpper(msg)); got != want {
			t.Errorf("reply = %q, want %q", got, want)
		}
	}
	if echo.Calls() != 2 {
		t.Errorf("Calls() = %d, want 2", echo.Calls())
	}
}

func TestFuncOptionsApplyToResult(t *testing.T) {
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.Func(func(llmtest.Request) llmtest.Reply {
		return llmtest.Text("abcdef")
	}).With(llmtest.ChunkSize(2)))

	req := userRequest("x")
	req.Stream = true
	chunks, err := streamChat(t, newClient(srv), req)
	if err != nil {
		t.Fatal(err)
	}
	var pieces []string
	for _, c := range chunks {
		if d := c.Choices[0].Delta.Content; d != "" {
			pieces = append(pieces, d)
		}
	}
	if d := diff([]string{"ab", "cd", "ef"}, pieces); d != "" {
		t.Errorf("pieces:\n%s", d)
	}
}

func TestFuncZeroReply(t *testing.T) {
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.Func(func(llmtest.Request) llmtest.Reply { return llmtest.Reply{} }))
	_, err := newClient(srv).CreateChatCompletion(context.Background(), userRequest("x"))
	if e := apiError(t, err); e.HTTPStatusCode != 500 || !strings.Contains(e.Message, "zero Reply") {
		t.Errorf("error = %v, want a 500 about the zero Reply", e)
	}
}

func TestConcurrentRequestsConsumeQueueOnce(t *testing.T) {
	const n = 24
	srv := llmtest.New(t)
	var want []string
	for i := range n {
		s := "reply-" + strconv.Itoa(i)
		want = append(want, s)
		if i%2 == 0 {
			srv.Enqueue(llmtest.Text(s))
		} else {
			srv.Enqueue(llmtest.Text(s, llmtest.ChunkSize(3)))
		}
	}
	c := newClient(srv)

	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		got []string
	)
	for i := range n {
		wg.Go(func() {
			var text string
			if i%2 == 0 {
				resp, err := c.CreateChatCompletion(context.Background(), userRequest("x"))
				if err != nil {
					t.Error(err)
					return
				}
				text = resp.Choices[0].Message.Content
			} else {
				chunks, err := streamChat(t, c, streamRequest("x"))
				if err != nil {
					t.Error(err)
					return
				}
				text = content(chunks)
			}
			mu.Lock()
			got = append(got, text)
			mu.Unlock()
		})
	}
	wg.Wait()
	sort.Strings(got)
	sort.Strings(want)
	if d := diff(want, got); d != "" {
		t.Errorf("replies:\n%s", d)
	}
	var ns []int
	for _, r := range srv.Requests() {
		ns = append(ns, r.N)
	}
	sort.Ints(ns)
	for i, v := range ns {
		if v != i+1 {
			t.Fatalf("request numbers = %v, want 1..%d", ns, n)
		}
	}
	if p := srv.Pending(); p != 0 {
		t.Errorf("Pending() = %d, want 0", p)
	}
}
