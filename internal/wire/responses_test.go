package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
)

func TestResponseIDRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		run   string
		start int64
	}{{"run-1b4e28ba-2fa1-11d2-883f-0016d3cca427", 0}, {"chat-x_y.z-turn-3", 57}} {
		id := ResponseID(tc.run, tc.start)
		run, start, ok := ParseResponseID(id)
		if !ok || run != tc.run || start != tc.start {
			t.Errorf("parseResponseID(%q) = %q, %d, %v; want %q, %d", id, run, start, ok, tc.run, tc.start)
		}
	}
	for _, bad := range []string{"", "resp_", "resp_abc", "resp_!!.1", "resp_YQ.-1", "resp_YQ.x", "chatcmpl-1", "resp_.3"} {
		if _, _, ok := ParseResponseID(bad); ok {
			t.Errorf("parseResponseID(%q) accepted", bad)
		}
	}
}

func TestItemsToMessages(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []longhaul.Message
		err   string
	}{
		{"string", `"Hi"`, []longhaul.Message{{Role: "user", Content: "Hi"}}, ""},
		{"easy messages", `[{"role":"developer","content":"Be brief"},{"role":"user","content":"Hi"}]`,
			[]longhaul.Message{{Role: "system", Content: "Be brief"}, {Role: "user", Content: "Hi"}}, ""},
		{"text parts", `[{"type":"message","role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]}]`,
			[]longhaul.Message{{Role: "user", Content: "a\nb"}}, ""},
		{"image", `[{"role":"user","content":[{"type":"input_text","text":"what is it?"},{"type":"input_image","image_url":"data:image/png;base64,AAAA","detail":"low"}]}]`,
			[]longhaul.Message{{Role: "user", Content: "what is it?", Parts: []longhaul.Part{
				{Type: "text", Text: "what is it?"}, {Type: "image_url", URL: "data:image/png;base64,AAAA", Detail: "low"},
			}}}, ""},
		{"a whole exchange", `[
			{"role":"user","content":"Weather in Oslo?"},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me check."}]},
			{"type":"function_call","call_id":"c1","name":"weather","arguments":"{\"city\":\"Oslo\"}"},
			{"type":"function_call","call_id":"c2","name":"time","arguments":"{}"},
			{"type":"function_call_output","call_id":"c1","output":"rain"},
			{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"noon"}]},
			{"type":"reasoning","id":"rs_1","summary":[]}
		]`, []longhaul.Message{
			{Role: "user", Content: "Weather in Oslo?"},
			{Role: "assistant", Content: "Let me check.", ToolCalls: []longhaul.ToolCall{
				{ID: "c1", Name: "weather", Arguments: `{"city":"Oslo"}`}, {ID: "c2", Name: "time", Arguments: "{}"},
			}},
			{Role: "tool", ToolCallID: "c1", Content: "rain"},
			{Role: "tool", ToolCallID: "c2", Content: "noon"},
		}, ""},
		{"a call alone", `[{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}]`,
			[]longhaul.Message{{Role: "assistant", ToolCalls: []longhaul.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}}}, ""},
		{"bad role", `[{"role":"robot","content":"x"}]`, nil, `input[0]: role: "robot"`},
		{"file", `[{"role":"user","content":[{"type":"input_file","file_id":"f"}]}]`, nil, `parts of type "input_file" are not supported`},
		{"image by file id", `[{"role":"user","content":[{"type":"input_image","file_id":"f"}]}]`, nil, "needs an image_url"},
		{"assistant image", `[{"role":"assistant","content":[{"type":"input_image","image_url":"http://x"}]}]`, nil, "only user messages"},
		{"item reference", `[{"type":"item_reference","id":"msg_1"}]`, nil, `items of type "item_reference" are not supported`},
		{"output without call", `[{"type":"function_call_output","output":"x"}]`, nil, "needs a call_id"},
		{"only reasoning", `[{"type":"reasoning","id":"rs"}]`, nil, "holds no message"},
		{"not items", `{"role":"user"}`, nil, "must be a string or an array"},
		{"empty", `[]`, nil, "must not be empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			items, err := InputItems(json.RawMessage(tc.input))
			var got []longhaul.Message
			if err == nil {
				got, err = ItemsToMessages(items)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMessagesToItems(t *testing.T) {
	msgs := []longhaul.Message{
		{Role: "user", Content: "look", Parts: []longhaul.Part{{Type: "text", Text: "look"}, {Type: "image_url", URL: "http://img"}}},
		{Role: "assistant", Content: "Checking.", ToolCalls: []longhaul.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}},
		{Role: "tool", ToolCallID: "c1", Content: "out"},
		{Role: "assistant", Content: "Done."},
	}
	got := MessagesToItems(msgs, "k")
	wire, _ := json.Marshal(got)
	want := `[{"type":"message","id":"msg_k_0","role":"user","status":"completed","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"http://img"}]},` +
		`{"type":"message","id":"msg_k_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Checking.","annotations":[],"logprobs":[]}]},` +
		`{"type":"function_call","id":"fc_k_2","status":"completed","call_id":"c1","name":"f","arguments":"{}"},` +
		`{"type":"function_call_output","id":"fco_k_3","status":"completed","call_id":"c1","output":"out"},` +
		`{"type":"message","id":"msg_k_4","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Done.","annotations":[],"logprobs":[]}]}]`
	if diff := cmp.Diff(want, string(wire)); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	// And back: the conversation survives the round trip.
	back, err := ItemsToMessages(got)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(msgs, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// autoRanker is a RankingCheck that takes the rankers none and auto, as
// the documents package's takes.
func autoRanker(ranker string) error {
	switch ranker {
	case "", "none", "auto":
		return nil
	}
	return fmt.Errorf("ranking_options.ranker: %q is not supported", ranker)
}

// objectSchema is a SchemaCheck that takes object schemas only, as
// tools.CheckSchema does a structured answer's.
func objectSchema(raw json.RawMessage) error {
	var s struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &s) != nil || (s.Type != "" && s.Type != "object") {
		return fmt.Errorf("not an object schema")
	}
	return nil
}

func TestResponsesRequestValidate(t *testing.T) {
	no, fifty, fiftyOne := false, 50, 51
	tests := []struct {
		name string
		req  ResponsesRequest
		err  string
	}{
		{"ok", ResponsesRequest{Model: "m", Input: json.RawMessage(`"hi"`)}, ""},
		{"no model", ResponsesRequest{Input: json.RawMessage(`"hi"`)}, "model: required"},
		{"no input", ResponsesRequest{Model: "m"}, "input: required"},
		{"hosted tool", ResponsesRequest{Model: "m", Input: json.RawMessage(`"hi"`), Tools: []ResponseTool{{Type: "web_search"}}},
			`type "web_search" is not supported: Longhaul's agents bring their own server-side tools`},
		{"nameless function", ResponsesRequest{Model: "m", Input: json.RawMessage(`"hi"`), Tools: []ResponseTool{{Type: "function"}}}, `tools[0].name: "" must be`},
		{"two functions of a name", ResponsesRequest{Model: "m", Input: json.RawMessage(`"hi"`), Tools: []ResponseTool{{Type: "function", Name: "f"}, {Type: "function", Name: "f"}}}, "declared twice"},
		{"parameters not an object", ResponsesRequest{Model: "m", Input: json.RawMessage(`"hi"`), Tools: []ResponseTool{{Type: "function", Name: "f", Parameters: json.RawMessage(`[1]`)}}}, "JSON schema object"},
		{"background unstored", ResponsesRequest{Model: "m", Input: json.RawMessage(`"hi"`), Background: true, Store: &no}, "must be stored"},
		{"bad format", ResponsesRequest{Model: "m", Input: json.RawMessage(`"hi"`), Text: &ResponseText{Format: &ResponseTextFormat{Type: "yaml"}}}, "text.format.type"},
		{"schema without name", ResponsesRequest{Model: "m", Input: json.RawMessage(`"hi"`), Text: &ResponseText{Format: &ResponseTextFormat{Type: "json_schema", Schema: json.RawMessage(`{}`)}}}, "text.format.name"},
		{"schema that is no object schema", ResponsesRequest{Model: "m", Input: json.RawMessage(`"hi"`), Text: &ResponseText{Format: &ResponseTextFormat{Type: "json_schema", Name: "x", Schema: json.RawMessage(`{"type":"string"}`)}}}, "text.format.schema"},
		{"bad tool choice", ResponsesRequest{Model: "m", Input: json.RawMessage(`"hi"`), ToolChoice: json.RawMessage(`{"type":"web_search"}`)}, "tool_choice"},
		{"file_search", ResponsesRequest{Model: "m", Input: json.RawMessage(`"hi"`), Tools: []ResponseTool{{Type: "file_search", VectorStoreIDs: []string{"vs_1"}, MaxNumResults: &fifty, RankingOptions: &RankingOptions{Ranker: "auto"}}}}, ""},
		{"file_search without stores", ResponsesRequest{Model: "m", Input: json.RawMessage(`"hi"`), Tools: []ResponseTool{{Type: "file_search"}}}, "tools[0].vector_store_ids"},
		{"file_search with filters", ResponsesRequest{Model: "m", Input: json.RawMessage(`"hi"`), Tools: []ResponseTool{{Type: "file_search", VectorStoreIDs: []string{"vs_1"}, Filters: json.RawMessage(`{"type":"eq","key":"a","value":1}`)}}}, "tools[0].filters: not supported"},
		{"file_search asking too much", ResponsesRequest{Model: "m", Input: json.RawMessage(`"hi"`), Tools: []ResponseTool{{Type: "file_search", VectorStoreIDs: []string{"vs_1"}, MaxNumResults: &fiftyOne}}}, "tools[0].max_num_results"},
		{"file_search with a re-ranker", ResponsesRequest{Model: "m", Input: json.RawMessage(`"hi"`), Tools: []ResponseTool{{Type: "file_search", VectorStoreIDs: []string{"vs_1"}, RankingOptions: &RankingOptions{Ranker: "default-2024-11-15"}}}}, "ranker"},
		{"function with stores", ResponsesRequest{Model: "m", Input: json.RawMessage(`"hi"`), Tools: []ResponseTool{{Type: "function", Name: "f", VectorStoreIDs: []string{"vs_1"}}}}, "a function tool takes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Validate(objectSchema, autoRanker)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error = %v, want one containing %q", err, tc.err)
			}
		})
	}
}

func TestResponsesOptions(t *testing.T) {
	temp, effort, strict := float32(0.2), "high", true
	req := ResponsesRequest{
		Temperature: &temp, MaxOutputTokens: 99, Reasoning: &ResponseReasoning{Effort: &effort},
		ToolChoice: json.RawMessage(`{"type":"function","name":"lookup"}`),
		Text:       &ResponseText{Format: &ResponseTextFormat{Type: "json_schema", Name: "s", Schema: json.RawMessage(`{"type":"object"}`), Strict: &strict}},
		Tools:      []ResponseTool{{Type: "function", Name: "lookup", Description: "Look up", Parameters: json.RawMessage(`{"type":"object"}`), Strict: &strict}},
	}
	got := req.Options()
	want := longhaul.ModelOptions{
		Temperature: &temp, MaxCompletionTokens: 99, ReasoningEffort: "high",
		ToolChoice:     json.RawMessage(`{"function":{"name":"lookup"},"type":"function"}`),
		ResponseFormat: &longhaul.ResponseFormat{Type: "json_schema", Name: "s", Schema: json.RawMessage(`{"type":"object"}`), Strict: true},
		// OpenAI's default: an input over the window is refused.
		Truncation: longhaul.TruncationDisabled,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
	req.Truncation = "auto"
	if got := req.Options().Truncation; got != "auto" {
		t.Errorf("truncation auto: options say %q", got)
	}
	req.Model, req.Input, req.Truncation = "assistant", json.RawMessage(`"hi"`), "sometimes"
	if err := req.Validate(anySchema, autoRanker); err == nil || !strings.Contains(err.Error(), "truncation") {
		t.Errorf("truncation sometimes: validate = %v, want an error naming truncation", err)
	}
	if diff := cmp.Diff([]longhaul.ToolSpec{{Name: "lookup", Description: "Look up", Parameters: json.RawMessage(`{"type":"object"}`), Strict: true}}, req.ClientTools()); diff != "" {
		t.Errorf("client tools (-want +got):\n%s", diff)
	}
	if got := string(responsesToolChoice(got.ToolChoice)); got != `{"name":"lookup","type":"function"}` {
		t.Errorf("tool_choice back = %s", got)
	}
}

func TestFunctionOutputs(t *testing.T) {
	a1, a2, b1 := contract.ClientCallID("run-a", 1), contract.ClientCallID("run-a", 2), contract.ClientCallID("run-b", 1)
	out := func(id, text string) InputItem {
		return InputItem{Type: "function_call_output", CallID: id, Output: jsonString(text)}
	}
	tests := []struct {
		name  string
		items []InputItem
		run   string
		n     int
	}{
		{"two of one run", []InputItem{{Type: "message", Role: "user"}, out(a1, "x"), out(a2, "y")}, "run-a", 2},
		{"two runs", []InputItem{out(a1, "x"), out(b1, "y")}, "", 0},
		{"foreign id", []InputItem{out("call_123", "x")}, "", 0},
		{"not last", []InputItem{out(a1, "x"), {Type: "message", Role: "user"}}, "", 0},
	}
	for _, tc := range tests {
		run, results, ok := FunctionOutputs(tc.items)
		if run != tc.run || len(results) != tc.n || ok != (tc.run != "") {
			t.Errorf("%s: functionOutputs = %q, %d results, %v", tc.name, run, len(results), ok)
		}
	}
}

func TestNextCut(t *testing.T) {
	text := "The quick brown fox jumps over the lazy dog and then " + strings.Repeat("é", 40) + " end"
	var cuts []int
	for from := 0; ; {
		c := nextCut(text, from, true)
		if c < 0 {
			break
		}
		cuts = append(cuts, c)
		from = c
	}
	if cuts[len(cuts)-1] != len(text) {
		t.Fatalf("cuts %v do not end at %d", cuts, len(text))
	}
	// Every prefix decides a prefix of the same cuts.
	for n := range len(text) {
		from := 0
		for _, want := range cuts {
			c := nextCut(text[:n], from, false)
			if c < 0 {
				break
			}
			if c != want {
				t.Fatalf("prefix %d: cut at %d, want %d", n, c, want)
			}
			from = c
		}
	}
	for i := 1; i < len(cuts); i++ {
		if cuts[i]-cuts[i-1] > maxCut+4 || !strings.HasPrefix(text[cuts[i-1]:], text[cuts[i-1]:cuts[i]]) {
			t.Fatalf("cut %d..%d too long", cuts[i-1], cuts[i])
		}
	}
}

// segment is a run's log with a model call that reasons and answers, a
// tool call, a second answer and the end.
func segment() []longhaul.Event {
	at := time.Unix(0, 0)
	ev := func(off int64, typ longhaul.EventType, data any) longhaul.Event {
		e := longhaul.NewEvent(typ, at, data)
		e.Offset = off
		return e
	}
	return []longhaul.Event{
		ev(1, longhaul.EventContent, longhaul.ContentData{Call: "turn-1", Reasoning: "The user wants the page, so I fetch it with the tool first.", Text: "Let me look that up for you right away."}),
		ev(2, longhaul.EventToolStart, longhaul.ToolStartData{ToolCallID: "t1", Name: "web_fetch", Arguments: `{"url":"x"}`}),
		ev(3, longhaul.EventToolOutput, longhaul.ToolOutputData{ToolCallID: "t1", Name: "web_fetch", Output: "page"}),
		ev(4, longhaul.EventContent, longhaul.ContentData{Call: "turn-2", Text: "The page says hello to everyone who reads it, and goodbye."}),
		ev(5, longhaul.EventUsage, longhaul.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}),
		ev(6, longhaul.EventDone, longhaul.DoneData{Status: "completed", FinishReason: "stop"}),
	}
}

// TestResponseRendererLiveMatchesLog renders a segment twice — from its
// durable events alone, and with each call's text streaming live first in
// uneven pieces — and checks both streams are the same, numbered 0, 1, 2, …
func TestResponseRendererLiveMatchesLog(t *testing.T) {
	render := func(live bool) []StreamEvent {
		r := NewResponseRenderer(Response{ID: "resp_x.0", Object: "response"}, longhaul.Usage{})
		out := r.Begin(false)
		for _, e := range segment() {
			var d longhaul.ContentData
			if live && e.Type == longhaul.EventContent && e.Decode(&d) == nil {
				// As it streams: the reasoning first, then the text.
				for n := 0; n < len(d.Reasoning); n += 7 {
					out = append(out, r.Live(d.Call, 1, d.Reasoning[:n], "")...)
				}
				for n := 0; n < len(d.Text); n += 7 {
					out = append(out, r.Live(d.Call, 1, d.Reasoning, d.Text[:n])...)
				}
			}
			evs, _ := r.Durable(e)
			out = append(out, evs...)
		}
		return out
	}
	fromLog, fromLive := render(false), render(true)
	if diff := cmp.Diff(fromLog, fromLive); diff != "" {
		t.Fatalf("live stream differs from the log's (-log +live):\n%s", diff)
	}
	var types []string
	var text, reasoning strings.Builder
	for i, e := range fromLog {
		if e.SequenceNumber != int64(i) {
			t.Fatalf("event %d has sequence number %d", i, e.SequenceNumber)
		}
		if len(types) == 0 || types[len(types)-1] != e.Type {
			types = append(types, e.Type)
		}
		if e.Type == "response.output_text.delta" && *e.OutputIndex == 3 {
			text.WriteString(*e.Delta)
		}
		if e.Type == "response.reasoning_text.delta" {
			reasoning.WriteString(*e.Delta)
		}
	}
	want := []string{
		"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added", "response.reasoning_text.delta", // reasoning
		"response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.mcp_call.in_progress", "response.mcp_call.completed", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.completed",
	}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("event types (-want +got):\n%s", diff)
	}
	if text.String() != "The page says hello to everyone who reads it, and goodbye." {
		t.Errorf("deltas of the second answer make %q", text.String())
	}
	if reasoning.String() != "The user wants the page, so I fetch it with the tool first." {
		t.Errorf("reasoning deltas make %q", reasoning.String())
	}
	final := fromLog[len(fromLog)-1].Response
	wire, _ := json.Marshal(final.Output)
	wantOut := `[{"type":"reasoning","id":"rs_` + NewResponseRenderer(Response{ID: "resp_x.0"}, longhaul.Usage{}).key + `_0","status":"completed","content":[{"type":"reasoning_text","text":"The user wants the page, so I fetch it with the tool first."}],"summary":[]},`
	if !strings.HasPrefix(string(wire), wantOut) {
		t.Errorf("output = %s", wire)
	}
	if final.Status != "completed" || final.Usage.TotalTokens != 15 || len(final.Output) != 4 || *final.Output[2].Output != "page" || final.Output[2].ServerLabel != "longhaul" {
		t.Errorf("final response = %+v", final)
	}
}

func TestResponseRendererFunctionCalls(t *testing.T) {
	r := NewResponseRenderer(Response{ID: "resp_x.0"}, longhaul.Usage{PromptTokens: 4, TotalTokens: 4})
	r.Begin(false)
	calls := longhaul.NewEvent(longhaul.EventClientToolCalls, time.Unix(0, 0), longhaul.ClientToolCallsData{Calls: []longhaul.ToolCall{{ID: "call_lh_a.1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}})
	calls.Offset = 3
	usage := longhaul.NewEvent(longhaul.EventUsage, time.Unix(0, 0), longhaul.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12})
	usage.Offset = 2
	r.Durable(usage)
	evs, end := r.Durable(calls)
	if !end {
		t.Fatal("the client's calls did not end the response")
	}
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	want := []string{"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done", "response.completed"}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if *evs[0].Item.Arguments != "" || evs[0].Item.Status != "in_progress" {
		t.Errorf("added item = %+v", evs[0].Item)
	}
	final := evs[len(evs)-1].Response
	it := final.Output[0]
	if it.Type != "function_call" || it.CallID != "call_lh_a.1" || *it.Arguments != `{"city":"Oslo"}` || it.Status != "completed" {
		t.Errorf("item = %+v", it)
	}
	if final.Usage.InputTokens != 6 || final.Usage.TotalTokens != 8 {
		t.Errorf("usage = %+v, want the segment's own", final.Usage)
	}
}

// TestResponseRendererFileSearch checks that a document_search call shows as
// a file_search_call item, streamed as OpenAI streams one, with its
// results only when the request's include asked for them.
func TestResponseRendererFileSearch(t *testing.T) {
	out := `{"results":[{"file_id":"file-1","filename":"paper.pdf","vector_store_id":"vs_1","chunk":3,"score":0.8,"text":"the answer","attributes":{"year":2024}}]}`
	for _, include := range []bool{false, true} {
		r := NewResponseRenderer(Response{ID: "resp_x.0", SearchResults: include}, longhaul.Usage{})
		r.Begin(false)
		start := longhaul.NewEvent(longhaul.EventToolStart, time.Unix(0, 0), longhaul.ToolStartData{ToolCallID: "t1", Name: documentSearchTool, Arguments: `{"query":"what is the answer"}`})
		start.Offset = 1
		done := longhaul.NewEvent(longhaul.EventToolOutput, time.Unix(0, 0), longhaul.ToolOutputData{ToolCallID: "t1", Name: documentSearchTool, Output: out})
		done.Offset = 2
		evs, _ := r.Durable(start)
		more, _ := r.Durable(done)
		var types []string
		for _, e := range append(evs, more...) {
			types = append(types, e.Type)
		}
		want := []string{"response.output_item.added", "response.file_search_call.in_progress", "response.file_search_call.searching",
			"response.file_search_call.completed", "response.output_item.done"}
		if diff := cmp.Diff(want, types); diff != "" {
			t.Errorf("include=%v: event types (-want +got):\n%s", include, diff)
		}
		it := r.resp.Output[0]
		if it.Type != "file_search_call" || it.Status != "completed" || !strings.HasPrefix(it.ID, "fs_") || it.Queries == nil || (*it.Queries)[0] != "what is the answer" {
			t.Errorf("include=%v: item = %+v", include, it)
		}
		switch {
		case include && (it.Results == nil || len(*it.Results) != 1 || !cmp.Equal((*it.Results)[0], FileSearchResult{FileID: "file-1", Filename: "paper.pdf", Score: 0.8, Text: "the answer", Attributes: map[string]any{"year": float64(2024)}})):
			t.Errorf("results = %+v", it.Results)
		case !include && it.Results != nil:
			t.Errorf("results without include = %+v", *it.Results)
		}
	}
}
