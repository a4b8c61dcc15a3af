package wire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
)

// anySchema is a SchemaCheck that takes every schema: compiling one is the
// api package's test (it passes tools.CheckSchema).
func anySchema(json.RawMessage) error { return nil }

func TestDecodeRequest(t *testing.T) {
	body := `{"model":"assistant","stream":true,"stop":"END","stream_options":{"include_usage":true},
	  "messages":[
	    {"role":"system","content":"be brief"},
	    {"role":"user","content":[{"type":"text","text":"look at"},{"type":"image_url","image_url":{"url":"data:x"}},{"type":"text","text":"this"}]},
	    {"role":"assistant","content":"Sure.\n<details type=\"tool_calls\" done=\"true\" id=\"c1\" name=\"web_fetch\" arguments=\"&quot;{}&quot;\" result=\"&quot;page&quot;\">\n<summary>Tool Executed</summary>\n</details>\nIt says hi.","tool_calls":null},
	    {"role":"user","content":"thanks"}
	  ],"unknown_field":{"a":1}}`
	var req ChatRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	if err := req.Validate(anySchema); err != nil {
		t.Fatal(err)
	}
	got := DomainMessages(req.Messages)
	want := []longhaul.Message{
		{Role: longhaul.RoleSystem, Content: "be brief"},
		{Role: longhaul.RoleUser, Content: "look at\nthis", Parts: []longhaul.Part{
			{Type: longhaul.PartText, Text: "look at"}, {Type: longhaul.PartImage, URL: "data:x"}, {Type: longhaul.PartText, Text: "this"},
		}},
		{Role: longhaul.RoleAssistant, Content: "Sure.\nIt says hi."},
		{Role: longhaul.RoleUser, Content: "thanks"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if req.Turn() != 2 {
		t.Errorf("turn = %d, want 2", req.Turn())
	}
	if diff := cmp.Diff(longhaul.ModelOptions{Stop: []string{"END"}}, req.Options()); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
}

func TestValidate(t *testing.T) {
	n2 := 2
	tests := []struct {
		name string
		req  ChatRequest
		want string
	}{
		{"no model", ChatRequest{Messages: []ChatMessage{{Role: "user", Content: MessageContent{Text: "hi"}}}}, "model: required"},
		{"no messages", ChatRequest{Model: "m"}, "messages: must not be empty"},
		{"bad role", ChatRequest{Model: "m", Messages: []ChatMessage{{Role: "robot"}}}, `messages[0].role: "robot"`},
		{"no user", ChatRequest{Model: "m", Messages: []ChatMessage{{Role: "system", Content: MessageContent{Text: "x"}}}}, "at least one user message"},
		{"tool without id", ChatRequest{Model: "m", Messages: []ChatMessage{{Role: "user"}, {Role: "tool"}}}, "tool_call_id: required"},
		{"n", ChatRequest{Model: "m", N: &n2, Messages: []ChatMessage{{Role: "user"}}}, "n: only 1"},
		{"negative max_tokens", ChatRequest{Model: "m", MaxTokens: -1, Messages: []ChatMessage{{Role: "user"}}}, "max_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.req.Validate(anySchema)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want it to say %q", err, tt.want)
			}
		})
	}
}

func TestStringList(t *testing.T) {
	for in, want := range map[string]StringList{`"a"`: {"a"}, `["a","b"]`: {"a", "b"}, `null`: nil} {
		var s StringList
		if err := json.Unmarshal([]byte(in), &s); err != nil || !cmp.Equal(want, s) {
			t.Errorf("%s → %v, %v", in, s, err)
		}
	}
	var s StringList
	if err := json.Unmarshal([]byte(`3`), &s); err == nil {
		t.Error("a number was accepted as stop")
	}
}

func TestRequestOptions(t *testing.T) {
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"max_completion_tokens":9,
	  "seed":3,"logprobs":true,"top_logprobs":4,"reasoning_effort":"high","parallel_tool_calls":false,
	  "tool_choice":"required","tools":[{"type":"function","function":{"name":"f","parameters":null}}],
	  "response_format":{"type":"json_schema","json_schema":{"name":"r","schema":{"type":"object"},"strict":true}}}`
	var req ChatRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	if err := req.Validate(anySchema); err != nil {
		t.Fatal(err)
	}
	seed, no := 3, false
	want := longhaul.ModelOptions{MaxTokens: 5, MaxCompletionTokens: 9, Seed: &seed, Logprobs: true, TopLogprobs: 4,
		ReasoningEffort: "high", ParallelToolCalls: &no, ToolChoice: json.RawMessage(`"required"`),
		ResponseFormat: &longhaul.ResponseFormat{Type: "json_schema", Name: "r", Schema: json.RawMessage(`{"type":"object"}`), Strict: true}}
	if diff := cmp.Diff(want, req.Options()); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]longhaul.ToolSpec{{Name: "f"}}, req.ClientTools()); diff != "" {
		t.Errorf("client tools (-want +got):\n%s", diff)
	}
	for _, bad := range []string{
		`"tool_choice":"sometimes"`, `"tool_choice":{"type":"function"}`, `"top_logprobs":3`,
		`"tools":[{"type":"function","function":{"name":"has space"}}]`,
		`"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]`,
		`"tools":[{"type":"function","function":{"name":"f","parameters":[1]}}]`,
		`"response_format":{"type":"yaml"}`, `"response_format":{"type":"json_schema"}`,
	} {
		var req ChatRequest
		if err := json.Unmarshal([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],`+bad+`}`), &req); err != nil {
			t.Fatalf("%s: %v", bad, err)
		}
		if err := req.Validate(anySchema); err == nil {
			t.Errorf("%s: validate passed", bad)
		}
	}
}
