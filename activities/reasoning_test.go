package activities_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
)

// frameServer is a model endpoint that answers every chat request with
// the same stream, written frame by frame as given (each a whole SSE
// line, "data: …"), and keeps the requests' bodies: the exact frames
// servers send, which the scripted model does not speak.
type frameServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

func newFrameServer(t *testing.T, frames ...string) *frameServer {
	t.Helper()
	fs := &frameServer{}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fs.mu.Lock()
		fs.bodies = append(fs.bodies, body)
		fs.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		for _, f := range frames {
			_, _ = io.WriteString(w, f+"\n\n")
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(fs.Close)
	return fs
}

// request is the n-th chat request's body, decoded.
func (fs *frameServer) request(t *testing.T, n int) map[string]any {
	t.Helper()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if n >= len(fs.bodies) {
		t.Fatalf("the server got %d requests, want more than %d", len(fs.bodies), n)
	}
	var m map[string]any
	if err := json.Unmarshal(fs.bodies[n], &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// frame is a chunk's SSE line with the given delta and finish reason.
func frame(delta string, finish string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + fr + `}]}`
}

// usageFrame is the usage chunk with reasoning tokens, as OpenAI's and
// vLLM's are.
const usageFrame = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21,"completion_tokens_details":{"reasoning_tokens":8}}}`

const done = "data: [DONE]"

func frameFixture(t *testing.T, frames ...string) (*fixture, *frameServer) {
	t.Helper()
	fs := newFrameServer(t, frames...)
	f := newFixture(t, nil, func(c *activities.LLMConfig) { c.BaseURL = fs.URL + "/v1" })
	return f, fs
}

// reasoningOf concatenates the reasoning deltas of ds, checking that their
// From positions follow on from each other.
func reasoningOf(t *testing.T, ds []longhaul.Delta) string {
	t.Helper()
	var sb strings.Builder
	for _, d := range ds {
		if d.Kind == longhaul.DeltaReasoning {
			if d.From != sb.Len() {
				t.Errorf("reasoning delta from %d, want %d", d.From, sb.Len())
			}
			sb.WriteString(d.Text)
		}
	}
	return sb.String()
}

// TestChatCompletionReadsEveryReasoningForm: reasoning in
// reasoning_content (DeepSeek), in reasoning (Ollama, vLLM), or in a
// <think> block at the start of the content (a server without a reasoning
// parser, the tags cut across chunks) is the call's reasoning: published as
// reasoning deltas, returned apart, never in the text.
func TestChatCompletionReadsEveryReasoningForm(t *testing.T) {
	for _, tt := range []struct {
		name   string
		frames []string
	}{
		{"reasoning_content", []string{frame(`{"role":"assistant","reasoning_content":"Two and "}`, ""), frame(`{"reasoning_content":"two."}`, ""), frame(`{"content":"Four."}`, "")}},
		{"reasoning", []string{frame(`{"role":"assistant","reasoning":"Two and "}`, ""), frame(`{"reasoning":"two."}`, ""), frame(`{"content":"Four."}`, "")}},
		{"think tags", []string{frame(`{"role":"assistant","content":"<thi"}`, ""), frame(`{"content":"nk>\nTwo and "}`, ""), frame(`{"content":"two.\n</th"}`, ""), frame(`{"content":"ink>\n\n"}`, ""), frame(`{"content":"Four."}`, "")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := frameFixture(t, append(tt.frames, frame(`{}`, "stop"), usageFrame, done)...)
			env, fl := f.followedEnv(t)
			got, err := chat(t, env, f.acts, contract.ModelRequest{Call: "turn-1", Agent: "naked", Messages: userMessage("2+2?"), Publish: true})
			if err != nil {
				t.Fatalf("ChatCompletion: %v", err)
			}
			if got.Reasoning != "Two and two." || got.Message.Reasoning != "Two and two." || got.Message.Content != "Four." {
				t.Errorf("reasoning %q (message %q), content %q", got.Reasoning, got.Message.Reasoning, got.Message.Content)
			}
			if got.Usage.ReasoningTokens != 8 {
				t.Errorf("usage %+v, want 8 reasoning tokens", got.Usage)
			}
			ds := fl.drain(t)
			if r, x := reasoningOf(t, ds), textOf(ds); r != "Two and two." || x != "Four." {
				t.Errorf("published reasoning %q, text %q", r, x)
			}
		})
	}
}

// TestChatCompletionTakesArgumentsAsAnObject: a server that sends a tool
// call's arguments as a JSON object, not a string of JSON, is understood.
func TestChatCompletionTakesArgumentsAsAnObject(t *testing.T) {
	f, _ := frameFixture(t,
		frame(`{"role":"assistant","reasoning":"The time, then."}`, ""),
		frame(`{"tool_calls":[{"index":0,"id":"call_ab12cd34","type":"function","function":{"name":"current_time","arguments":{"timezone": "Asia/Tokyo"}}}]}`, ""),
		frame(`{}`, "tool_calls"), done)
	got, err := chat(t, f.activityEnv(), f.acts, contract.ModelRequest{Call: "turn-1", Agent: "assistant", Messages: userMessage("time?"), Tools: []string{"current_time"}})
	if err != nil {
		t.Fatalf("ChatCompletion: %v", err)
	}
	diff(t, "tool calls", []longhaul.ToolCall{{ID: "call_ab12cd34", Name: "current_time", Arguments: `{"timezone":"Asia/Tokyo"}`}}, got.Message.ToolCalls)
	if got.Message.Reasoning != "The time, then." {
		t.Errorf("reasoning %q", got.Message.Reasoning)
	}
	// No usage reported: estimated, the reasoning counted.
	if u := got.Usage; u.PromptTokens == 0 || u.ReasoningTokens == 0 || u.CompletionTokens <= u.ReasoningTokens || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("estimated usage %+v", u)
	}
}

// TestChatCompletionReadsMidStreamErrors: an error frame after the stream
// began is the call's error, in the server's words: retried unless its
// code says the request is at fault. Ollama's, which loses the words (an
// empty chunk, then the end), says what happened.
func TestChatCompletionReadsMidStreamErrors(t *testing.T) {
	start := frame(`{"role":"assistant","content":"Par"}`, "")
	for _, tt := range []struct {
		name         string
		frames       []string
		typ          string
		nonRetryable bool
		msg          string
	}{
		{"vLLM server error", []string{start, `data: {"error": {"message": "CUDA out of memory", "type": "InternalServerError", "param": null, "code": 500}}`, done},
			longhaul.ErrTypeModelUnavailable, false, "CUDA out of memory (InternalServerError)"},
		{"vLLM bad request", []string{start, `data: {"error": {"message": "tool parser failed", "type": "BadRequestError", "param": null, "code": 400}}`, done},
			longhaul.ErrTypeModelRejected, true, "tool parser failed"},
		{"OpenAI string code", []string{start, `data: {"error": {"message": "The server had an error", "type": "server_error", "code": "server_error"}}`},
			longhaul.ErrTypeModelUnavailable, false, "The server had an error"},
		{"error object", []string{start, `data: {"object": "error", "message": "engine dead", "type": "InternalServerError", "code": 500}`},
			longhaul.ErrTypeModelUnavailable, false, "engine dead"},
		{"Ollama", []string{start, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}`},
			longhaul.ErrTypeModelUnavailable, false, "failed mid-answer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := frameFixture(t, tt.frames...)
			_, err := chat(t, f.activityEnv(), f.acts, contract.ModelRequest{Call: "turn-1", Agent: "naked", Messages: userMessage("hi")})
			wantAppError(t, err, tt.typ, tt.nonRetryable, tt.msg)
		})
	}
}

// TestChatCompletionSendsReasoningBack: the reasoning behind a tool call
// of the current round goes back with it in "reasoning", the field Ollama
// and vLLM read; an earlier turn's does not, and no reasoning is ever
// content.
func TestChatCompletionSendsReasoningBack(t *testing.T) {
	f, fs := frameFixture(t, frame(`{"role":"assistant","content":"Noon."}`, "stop"), done)
	conv := []longhaul.Message{
		{Role: longhaul.RoleUser, Content: "hi"},
		{Role: longhaul.RoleAssistant, Content: "Hello.", Reasoning: "A greeting."},
		{Role: longhaul.RoleUser, Content: "time?"},
		{Role: longhaul.RoleAssistant, Reasoning: "I need the clock.", ToolCalls: []longhaul.ToolCall{{ID: "call_1", Name: "current_time", Arguments: `{}`}}},
		{Role: longhaul.RoleTool, ToolCallID: "call_1", Content: "12:00"},
	}
	if _, err := chat(t, f.activityEnv(), f.acts, contract.ModelRequest{Call: "turn-2", Agent: "naked", Messages: conv, Tools: []string{"current_time"}}); err != nil {
		t.Fatalf("ChatCompletion: %v", err)
	}
	var got []string
	for _, m := range fs.request(t, 0)["messages"].([]any) {
		m := m.(map[string]any)
		if _, ok := m["reasoning_content"]; ok {
			t.Errorf("message %v carries reasoning_content", m)
		}
		if m["role"] == "assistant" {
			r, _ := m["reasoning"].(string)
			c, _ := m["content"].(string)
			got = append(got, c+"|"+r)
		}
	}
	diff(t, "assistant messages (content|reasoning)", []string{"Hello.|", "|I need the clock."}, got)
}

// TestChatCompletionThinksInEachFlavour: the scripted model's dialects
// (Ollama's delta.reasoning chunks, vLLM's, a server that leaves <think>
// in the content, DeepSeek's reasoning_content): the call's reasoning and
// text come apart the same in each, and a tool loop's next call sends the
// reasoning back in the field Ollama reads.
func TestChatCompletionThinksInEachFlavour(t *testing.T) {
	for name, fl := range map[string]llmtest.Flavour{"openai": llmtest.FlavourOpenAI, "ollama": llmtest.FlavourOllama, "vllm": llmtest.FlavourVLLM, "think-tags": llmtest.FlavourThinkTags} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			f.srv.SetFlavour(fl)
			f.srv.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{ID: "call_1", Name: "current_time", Arguments: `{}`}).With(llmtest.Reasoning("The clock will say.")))
			f.srv.Enqueue(llmtest.Text("It is noon.", llmtest.Reasoning("Noon, then."), llmtest.ChunkSize(3)))
			env := f.activityEnv()
			conv := userMessage("time?")
			first, err := chat(t, env, f.acts, contract.ModelRequest{Call: "turn-1", Agent: "assistant", Messages: conv, Tools: []string{"current_time"}})
			if err != nil {
				t.Fatalf("first call: %v", err)
			}
			if first.Message.Reasoning != "The clock will say." || first.Message.Content != "" || len(first.Message.ToolCalls) != 1 {
				t.Fatalf("first answer %+v", first.Message)
			}
			conv = append(conv, first.Message, longhaul.Message{Role: longhaul.RoleTool, ToolCallID: first.Message.ToolCalls[0].ID, Content: "12:00"})
			second, err := chat(t, env, f.acts, contract.ModelRequest{Call: "turn-2", Agent: "assistant", Messages: conv, Tools: []string{"current_time"}})
			if err != nil {
				t.Fatalf("second call: %v", err)
			}
			if second.Reasoning != "Noon, then." || second.Message.Content != "It is noon." {
				t.Errorf("second answer: reasoning %q, content %q", second.Reasoning, second.Message.Content)
			}
			reqs := f.srv.Requests()
			if got := reqs[1].Reasoning; !slices.Contains(got, "The clock will say.") {
				t.Errorf("the tool loop's next request sent reasoning %q", got)
			}
			for _, m := range reqs[1].Chat.Messages {
				if strings.Contains(m.Content, "clock will say") {
					t.Errorf("reasoning sent back as content: %+v", m)
				}
			}
		})
	}
}

// TestChatCompletionOllamaStreamError: Ollama's mid-stream failure (the
// scripted model writes it as Ollama does) is a retryable failure that
// says what happened, not an answer cut short.
func TestChatCompletionOllamaStreamError(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.SetFlavour(llmtest.FlavourOllama)
	f.srv.Enqueue(llmtest.Text("Par tial answer", llmtest.ChunkSize(4), llmtest.StreamError(2, "model runner has unexpectedly stopped")))
	_, err := chat(t, f.activityEnv(), f.acts, contract.ModelRequest{Call: "turn-1", Agent: "naked", Messages: userMessage("hi")})
	wantAppError(t, err, longhaul.ErrTypeModelUnavailable, false, "failed mid-answer")
}

// TestChatCompletionVLLMStreamError: vLLM's error frame mid-stream fails
// the call with vLLM's words.
func TestChatCompletionVLLMStreamError(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.SetFlavour(llmtest.FlavourVLLM)
	f.srv.Enqueue(llmtest.Text("Par tial answer", llmtest.ChunkSize(4), llmtest.StreamError(2, "engine core died")))
	_, err := chat(t, f.activityEnv(), f.acts, contract.ModelRequest{Call: "turn-1", Agent: "naked", Messages: userMessage("hi")})
	wantAppError(t, err, longhaul.ErrTypeModelUnavailable, false, "engine core died")
}
