package llmtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	openai "github.com/sashabaranov/go-openai"
)

// rawPost sends body to url with plain net/http, with a bearer key unless
// key is empty.
func rawPost(t *testing.T, url, key, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(waitCtx(t), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return http.DefaultClient.Do(req)
}

// decodeEnvelope reads an OpenAI error envelope from resp.
func decodeEnvelope(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var env struct {
		Error map[string]any `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatalf("decoding error envelope: %v", err)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := env.Error[k]; !ok {
			t.Errorf("error envelope lacks %q: %v", k, env.Error)
		}
	}
	return env.Error
}

func TestRulesTakePrecedenceOverQueue(t *testing.T) {
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.Text("main 1"), llmtest.Text("main 2"))
	title := llmtest.JSON(map[string]string{"title": "Chat title"})
	srv.On(llmtest.LastUserContains("### Task:"), title)
	srv.On(llmtest.LastUserContains("### Task:"), llmtest.Text("shadowed by the first rule"))
	srv.On(llmtest.HasResponseFormat(), llmtest.JSON(map[string]string{"label": "x"}))
	c := newClient(srv)

	ask := func(user string, format bool) string {
		t.Helper()
		req := userRequest(user)
		if format {
			req.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
		}
		resp, err := c.CreateChatCompletion(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Choices[0].Message.Content
	}
	steps := []struct {
		user    string
		format  bool
		want    string
		pending int
	}{
		{user: "### Task: generate a title", want: `{"title":"Chat title"}`, pending: 2},
		{user: "hello", want: "main 1", pending: 1},
		{user: "### Task: generate a title", want: `{"title":"Chat title"}`, pending: 1},
		{user: "classify", format: true, want: `{"label":"x"}`, pending: 1},
		{user: "hello again", want: "main 2", pending: 0},
	}
	for i, s := range steps {
		if got := ask(s.user, s.format); got != s.want {
			t.Errorf("step %d (%q): reply = %q, want %q", i, s.user, got, s.want)
		}
		if p := srv.Pending(); p != s.pending {
			t.Errorf("step %d: Pending() = %d, want %d", i, p, s.pending)
		}
	}
	if title.Calls() != 2 {
		t.Errorf("title rule Calls() = %d, want 2", title.Calls())
	}
}

func TestDefaultReply(t *testing.T) {
	srv := llmtest.New(t)
	c := newClient(srv)

	_, err := c.CreateChatCompletion(context.Background(), userRequest("x"))
	e := apiError(t, err)
	if e.HTTPStatusCode != 500 || e.Message != "llmtest: no scripted reply for request 1" {
		t.Errorf("unscripted request: status %d message %q", e.HTTPStatusCode, e.Message)
	}
	_, err = c.CreateChatCompletionStream(context.Background(), streamRequest("x"))
	if e := apiError(t, err); e.HTTPStatusCode != 500 || !strings.Contains(e.Message, "no scripted reply for request 2") {
		t.Errorf("unscripted stream: %v", e)
	}

	srv.SetDefault(llmtest.Text("fallback"))
	srv.Enqueue(llmtest.Text("queued"))
	for _, want := range []string{"queued", "fallback", "fallback"} {
		resp, err := c.CreateChatCompletion(context.Background(), userRequest("x"))
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Choices[0].Message.Content; got != want {
			t.Errorf("reply = %q, want %q", got, want)
		}
	}

	srv.SetDefault(llmtest.Reply{})
	_, err = c.CreateChatCompletion(context.Background(), userRequest("x"))
	if e := apiError(t, err); e.Message != "llmtest: no scripted reply for request 6" {
		t.Errorf("after resetting the default: %v", e)
	}
}

func TestRequestsRecorded(t *testing.T) {
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.Text("ok"))

	cfg := srv.ClientConfig()
	cfg.OrgID = "org-test"
	req := openai.ChatCompletionRequest{
		Model: "gpt-test",
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: "sys"},
			{Role: openai.ChatMessageRoleUser, Content: "what is the weather?"},
			{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{
				ID: "call_9", Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: "weather", Arguments: `{"city":"Oslo"}`},
			}}},
			{Role: openai.ChatMessageRoleTool, ToolCallID: "call_9", Content: "-3C"},
			{Role: openai.ChatMessageRoleUser, MultiContent: []openai.ChatMessagePart{
				{Type: openai.ChatMessagePartTypeText, Text: "and"},
				{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: "data:image/png;base64,AA=="}},
				{Type: openai.ChatMessagePartTypeText, Text: "tomorrow?"},
			}},
		},
		Tools: []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: "weather", Parameters: json.RawMessage(`{"type":"object"}`),
		}}},
		Stream:        true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
	}
	if _, err := streamChat(t, openai.NewClientWithConfig(cfg), req); err != nil {
		t.Fatal(err)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("recorded %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.N != 1 || r.Method != http.MethodPost || r.Path != "/v1/chat/completions" {
		t.Errorf("N %d, method %q, path %q", r.N, r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer sk-llmtest" {
		t.Errorf("Authorization = %q", got)
	}
	if got := r.Header.Get("OpenAI-Organization"); got != "org-test" {
		t.Errorf("OpenAI-Organization = %q", got)
	}
	if !json.Valid(r.Body) || !strings.Contains(string(r.Body), `"tool_call_id":"call_9"`) {
		t.Errorf("raw body = %s", r.Body)
	}
	ch := r.Chat
	if ch.Model != "gpt-test" || !ch.Stream || ch.StreamOptions == nil || !ch.StreamOptions.IncludeUsage {
		t.Errorf("model %q stream %v stream_options %+v", ch.Model, ch.Stream, ch.StreamOptions)
	}
	var roles []string
	for _, m := range ch.Messages {
		roles = append(roles, m.Role)
	}
	if d := diff([]string{"system", "user", "assistant", "tool", "user"}, roles); d != "" {
		t.Errorf("roles:\n%s", d)
	}
	if tc := ch.Messages[2].ToolCalls; len(tc) != 1 || tc[0].ID != "call_9" || tc[0].Function.Arguments != `{"city":"Oslo"}` {
		t.Errorf("assistant tool_calls = %+v", tc)
	}
	if ch.Messages[3].ToolCallID != "call_9" || ch.Messages[3].Content != "-3C" {
		t.Errorf("tool message = %+v", ch.Messages[3])
	}
	if len(ch.Tools) != 1 || ch.Tools[0].Function.Name != "weather" {
		t.Errorf("tools = %+v", ch.Tools)
	}
	if got := r.LastUserMessage(); got != "and\ntomorrow?" {
		t.Errorf("LastUserMessage() = %q", got)
	}
	if got := r.SystemPrompt(); got != "sys" {
		t.Errorf("SystemPrompt() = %q", got)
	}
	if !r.Streaming() || !llmtest.HasTools()(r) || llmtest.HasResponseFormat()(r) {
		t.Errorf("Streaming %v HasTools %v HasResponseFormat %v", r.Streaming(), llmtest.HasTools()(r), llmtest.HasResponseFormat()(r))
	}
	if !llmtest.AnyMessageContains("-3C")(r) || llmtest.AnyMessageContains("absent")(r) {
		t.Error("AnyMessageContains misjudged the messages")
	}
}

func TestStopAsString(t *testing.T) {
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.Text("ok"))
	resp, err := rawPost(t, srv.URL()+"/chat/completions", "", `{"model":"m","stop":"END","messages":[{"role":"user","content":null},{"role":"user","content":"x"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d, want 200", resp.StatusCode)
	}
	if got := srv.Requests()[0].Chat.Stop; len(got) != 1 || got[0] != "END" {
		t.Errorf("stop = %q, want [END]", got)
	}
}

func TestWaitRequests(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetDefault(llmtest.Text("ok"))
	c := newClient(srv)

	done := make(chan error, 1)
	go func() { done <- srv.WaitRequests(waitCtx(t), 2) }()
	for range 2 {
		if _, err := c.CreateChatCompletion(context.Background(), userRequest("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Errorf("WaitRequests(2) = %v", err)
	}
	if err := srv.WaitRequests(context.Background(), 1); err != nil {
		t.Errorf("WaitRequests for requests already received = %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := srv.WaitRequests(ctx, 3)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "have 2") {
		t.Errorf("WaitRequests with a cancelled context = %v, want context.Canceled mentioning the count", err)
	}
}

func TestWaitRequestsSeesRequestBeforeReply(t *testing.T) {
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.Hang())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := newClient(srv).CreateChatCompletion(ctx, userRequest("x"))
		errc <- err
	}()
	if err := srv.WaitRequests(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[0].LastUserMessage(); got != "x" {
		t.Errorf("recorded message = %q", got)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("client error = %v", err)
	}
}

func norm(v []float32) float64 {
	var s float64
	for _, f := range v {
		s += float64(f) * float64(f)
	}
	return math.Sqrt(s)
}

func TestEmbeddings(t *testing.T) {
	srv := llmtest.New(t)
	c := newClient(srv)
	embed := func(req openai.EmbeddingRequestConverter) openai.EmbeddingResponse {
		t.Helper()
		resp, err := c.CreateEmbeddings(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	single := embed(openai.EmbeddingRequest{Input: "hello world", Model: "embed-model"})
	batch := embed(openai.EmbeddingRequestStrings{Input: []string{"other text", "hello world"}, Model: "embed-model"})
	b64 := embed(openai.EmbeddingRequest{Input: []string{"hello world"}, Model: "embed-model", EncodingFormat: openai.EmbeddingEncodingFormatBase64})
	sized := embed(openai.EmbeddingRequest{Input: "hello world", Model: "embed-model", Dimensions: 8})
	tokens := embed(openai.EmbeddingRequestTokens{Input: [][]int{{1, 2, 3}, {1, 2, 3}}, Model: "embed-model"})

	if single.Object != "list" || single.Model != "embed-model" || len(single.Data) != 1 || single.Data[0].Object != "embedding" {
		t.Fatalf("response shape = %+v", single)
	}
	v := single.Data[0].Embedding
	if len(v) != 64 {
		t.Errorf("default dimension = %d, want 64", len(v))
	}
	if n := norm(v); math.Abs(n-1) > 1e-5 {
		t.Errorf("norm = %v, want 1", n)
	}
	if d := diff(llmtest.Embed("hello world", 64), v); d != "" {
		t.Errorf("vector differs from Embed:\n%s", d)
	}
	if len(batch.Data) != 2 || batch.Data[0].Index != 0 || batch.Data[1].Index != 1 {
		t.Fatalf("batch = %+v", batch.Data)
	}
	if d := diff(v, batch.Data[1].Embedding); d != "" {
		t.Errorf("same input embedded twice differs:\n%s", d)
	}
	if dot, _ := batch.Data[0].DotProduct(&batch.Data[1]); math.Abs(float64(dot)) > 0.9 {
		t.Errorf("different inputs have near-identical vectors (dot %v)", dot)
	}
	if d := diff(v, b64.Data[0].Embedding); d != "" {
		t.Errorf("base64 encoding differs from float:\n%s", d)
	}
	if len(sized.Data[0].Embedding) != 8 {
		t.Errorf("dimensions=8 gave %d", len(sized.Data[0].Embedding))
	}
	if d := diff(tokens.Data[0].Embedding, tokens.Data[1].Embedding); d != "" || len(tokens.Data[0].Embedding) != 64 {
		t.Errorf("token inputs: %s", d)
	}
	if single.Usage.PromptTokens != 2 || single.Usage.TotalTokens != 2 {
		t.Errorf("usage = %+v, want 2 tokens", single.Usage)
	}

	srv.SetEmbeddingDimensions(16)
	if got := len(embed(openai.EmbeddingRequest{Input: "x", Model: "m"}).Data[0].Embedding); got != 16 {
		t.Errorf("after SetEmbeddingDimensions(16): dimension %d", got)
	}

	recs := srv.EmbeddingRequests()
	if len(recs) != 6 {
		t.Fatalf("recorded %d embeddings requests, want 6", len(recs))
	}
	if d := diff([]string{"other text", "hello world"}, recs[1].Input); d != "" {
		t.Errorf("recorded input:\n%s", d)
	}
	if recs[2].EncodingFormat != "base64" || recs[3].Dimensions != 8 || len(recs[4].Tokens) != 2 || recs[5].N != 6 {
		t.Errorf("records = %+v", recs)
	}
	if recs[0].Path != "/v1/embeddings" || recs[0].Model != "embed-model" {
		t.Errorf("record 0 = %+v", recs[0])
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("embeddings leaked into chat Requests(): %d", n)
	}
}

func TestEmbedDeterministic(t *testing.T) {
	a, b := llmtest.Embed("same", 32), llmtest.Embed("same", 32)
	if d := diff(a, b); d != "" {
		t.Errorf("Embed not deterministic:\n%s", d)
	}
	if d := diff(a, llmtest.Embed("different", 32)); d == "" {
		t.Error("different inputs gave the same vector")
	}
}

func TestRequireKey(t *testing.T) {
	srv := llmtest.New(t)
	srv.RequireKey("sk-right")
	srv.SetDefault(llmtest.Text("ok"))
	clientWith := func(key string) *openai.Client {
		cfg := openai.DefaultConfig(key)
		cfg.BaseURL = srv.URL()
		return openai.NewClientWithConfig(cfg)
	}

	for _, key := range []string{"", "sk-wrong"} {
		c := clientWith(key)
		_, err := c.CreateChatCompletion(context.Background(), userRequest("x"))
		if e := apiError(t, err); e.HTTPStatusCode != 401 || e.Code != "invalid_api_key" {
			t.Errorf("key %q: chat error %v, want 401 invalid_api_key", key, e)
		}
		_, err = c.CreateEmbeddings(context.Background(), openai.EmbeddingRequest{Input: "x", Model: "m"})
		if e := apiError(t, err); e.HTTPStatusCode != 401 {
			t.Errorf("key %q: embeddings error %v, want 401", key, e)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("rejected requests were recorded: %d", n)
	}

	if _, err := clientWith("sk-right").CreateChatCompletion(context.Background(), userRequest("x")); err != nil {
		t.Errorf("right key: %v", err)
	}
	if _, err := openai.NewClientWithConfig(srv.ClientConfig()).CreateEmbeddings(context.Background(), openai.EmbeddingRequest{Input: "x", Model: "m"}); err != nil {
		t.Errorf("ClientConfig should carry the required key: %v", err)
	}
}

func TestProtocolErrors(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetDefault(llmtest.Text("ok"))
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		status int
	}{
		{name: "bad JSON", method: http.MethodPost, path: "/chat/completions", body: `{"model":`, status: 400},
		{name: "not an object", method: http.MethodPost, path: "/chat/completions", body: `[1,2]`, status: 400},
		{name: "wrong field type", method: http.MethodPost, path: "/chat/completions", body: `{"model":"m","messages":"hi"}`, status: 400},
		{name: "no messages", method: http.MethodPost, path: "/chat/completions", body: `{"model":"m","messages":[]}`, status: 400},
		{name: "no model", method: http.MethodPost, path: "/chat/completions", body: `{"messages":[{"role":"user","content":"x"}]}`, status: 400},
		{name: "embeddings bad JSON", method: http.MethodPost, path: "/embeddings", body: `nope`, status: 400},
		{name: "embeddings empty input", method: http.MethodPost, path: "/embeddings", body: `{"model":"m","input":[]}`, status: 400},
		{name: "embeddings wrong input", method: http.MethodPost, path: "/embeddings", body: `{"model":"m","input":{"a":1}}`, status: 400},
		{name: "unknown path", method: http.MethodPost, path: "/completions", body: `{}`, status: 404},
		{name: "wrong method", method: http.MethodGet, path: "/chat/completions", status: 405},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(waitCtx(t), tt.method, srv.URL()+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.status)
			}
			env := decodeEnvelope(t, resp)
			if msg, _ := env["message"].(string); !strings.HasPrefix(msg, "llmtest: ") {
				t.Errorf("message = %q", msg)
			}
		})
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("invalid requests were recorded: %d", n)
	}
}

func TestStatusEnvelopeRaw(t *testing.T) {
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.Status(429, "slow down", llmtest.Header("Retry-After", "7")))
	resp, err := rawPost(t, srv.URL()+"/chat/completions", "", `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" {
		t.Errorf("status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	env := decodeEnvelope(t, resp)
	want := map[string]any{"message": "slow down", "type": "rate_limit_error", "param": nil, "code": "rate_limit_exceeded"}
	if d := diff(want, env); d != "" {
		t.Errorf("envelope:\n%s", d)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
}
