package conformance

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
)

// The scenarios' prompts: each routes its requests to its own script.
const (
	stockPrompt    = "How many widgets are in stock, and what is the weather in Oslo?"
	eventPrompt    = "Alice and Bob are going to a science fair on Friday."
	tokyoPrompt    = "What is the weather in Tokyo?"
	sfPrompt       = "What is the weather in San Francisco?"
	recipePrompt   = "Generate a lasagna recipe."
	multiplyPrompt = "What is 3 * 12?"
	jokePrompt     = "Tell me a joke about cats"
)

// The scripted answers.
var (
	stockAnswer    = "7 widgets are in stock; it is -3°C and snowing in Oslo."
	tokyoAnswer    = "The weather in Tokyo is sunny."
	sfAnswer       = "It is 72°F in San Francisco."
	multiplyAnswer = "3 * 12 = 36."
	event          = map[string]any{"name": "Science Fair", "date": "Friday", "participants": []any{"Alice", "Bob"}}
	recipe         = map[string]any{"recipe": map[string]any{
		"name":        "Lasagna",
		"ingredients": []any{map[string]any{"name": "pasta sheets", "amount": "12"}, map[string]any{"name": "ragù", "amount": "500 g"}},
		"steps":       []any{"Layer.", "Bake."},
	}}
	joke = map[string]any{"setup": "Why did the cat sit on the computer?", "punchline": "To keep an eye on the mouse.", "rating": 7.0}
)

// script answers every scenario's model calls by its prompt, from what the
// conversation holds so far, so that the scenarios stand alone: a failed
// one leaves nothing queued for the next.
func (s *stack) script() {
	m := s.env.Model
	m.On(llmtest.AnyMessageContains(stockPrompt), llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		switch len(toolResults(r)) {
		case 0: // the agent's own tool first: the client never sees it
			return llmtest.ToolCalls(llmtest.ToolCall{Name: "stock_level", Arguments: `{"item":"widget"}`})
		case 1: // then the client's
			return llmtest.ToolCalls(llmtest.ToolCall{Name: "get_weather", Arguments: `{"city":"Oslo"}`})
		}
		return llmtest.Text(stockAnswer)
	}))
	m.On(llmtest.AnyMessageContains(eventPrompt), llmtest.JSON(event))
	m.On(llmtest.AnyMessageContains(tokyoPrompt), toolThenText("get_weather", `{"city":"Tokyo"}`, tokyoAnswer))
	m.On(llmtest.AnyMessageContains(sfPrompt), toolThenText("weather", `{"location":"San Francisco"}`, sfAnswer))
	m.On(llmtest.AnyMessageContains(recipePrompt), llmtest.JSON(recipe))
	m.On(llmtest.AnyMessageContains(multiplyPrompt), toolThenText("multiply", `{"a":3,"b":12}`, multiplyAnswer))
	// LangChain asks for a json_schema response_format for any model it
	// does not know to lack one.
	m.On(llmtest.AnyMessageContains(jokePrompt), llmtest.JSON(joke))
	m.On(llmtest.AnyMessageContains(gadgetPrompt), toolThenText("stock_level", `{"item":"gadget"}`, gadgetAnswer))
	s.scriptDocuments()
}

// toolThenText calls the tool name with args, then, once its result is in,
// answers text.
func toolThenText(name, args, text string) llmtest.Reply {
	return llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		if len(toolResults(r)) == 0 {
			return llmtest.ToolCalls(llmtest.ToolCall{Name: name, Arguments: args})
		}
		return llmtest.Text(text)
	})
}

// openaiTools: openai-node's function-calling loop. The model calls the
// agent's stock_level (run by Longhaul) and then the client's get_weather
// (handed to the client as tool_calls); the client's result continues the
// same run to the answer.
func (s *stack) openaiTools(t *testing.T, stream string) {
	var out struct {
		FirstFinish string `json:"first_finish"`
		ToolCalls   []struct {
			ID, Name, Arguments string
		} `json:"tool_calls"`
		SecondFinish string `json:"second_finish"`
		Answer       string `json:"answer"`
	}
	stockBefore := s.stockCalls.Load()
	reqs := s.run(t, "openai-tools.mjs", map[string]string{"STREAM": stream}, &out)
	if out.FirstFinish != "tool_calls" || len(out.ToolCalls) != 1 {
		t.Fatalf("first answer: finish %q with %d tool calls, want tool_calls with 1 (get_weather; stock_level stays inside)", out.FirstFinish, len(out.ToolCalls))
	}
	call := out.ToolCalls[0]
	if call.Name != "get_weather" || call.Arguments != `{"city":"Oslo"}` || !strings.HasPrefix(call.ID, "call_lh_") {
		t.Errorf("tool call %+v, want get_weather {\"city\":\"Oslo\"} with a call_lh_ id", call)
	}
	if out.SecondFinish != "stop" || out.Answer != stockAnswer {
		t.Errorf("second answer: finish %q, %q; want stop, %q", out.SecondFinish, out.Answer, stockAnswer)
	}
	if n := s.stockCalls.Load() - stockBefore; n != 1 {
		t.Errorf("stock_level ran %d times, want 1", n)
	}
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3:\n%s", len(reqs), describe(reqs))
	}
	offered(t, reqs, "get_weather")
	results := toolResults(reqs[2])
	if len(results) != 2 || compact(results[0]) != `{"item":"widget","count":7}` || results[1] != "-3°C and snowing in Oslo" {
		t.Errorf("the last model request's tool results %q, want stock_level's and the client's", results)
	}
}

// openaiParse: openai-node's chat.completions.parse with zodResponseFormat.
func (s *stack) openaiParse(t *testing.T, stream string) {
	var out struct {
		Parsed  map[string]any `json:"parsed"`
		Refusal *string        `json:"refusal"`
		Finish  string         `json:"finish"`
	}
	reqs := s.run(t, "openai-parse.mjs", map[string]string{"STREAM": stream}, &out)
	if diff := cmp.Diff(event, out.Parsed); diff != "" {
		t.Errorf("parsed (-want +got):\n%s", diff)
	}
	if out.Finish != "stop" || out.Refusal != nil {
		t.Errorf("finish %q, refusal %v", out.Finish, out.Refusal)
	}
	checkSchema(t, reqs, "event")
}

// compact is JSON text without its insignificant spaces; other text as is.
func compact(s string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return s
	}
	return b.String()
}

// checkSchema checks that the model was asked for a JSON schema named name
// (any name when empty).
func checkSchema(t *testing.T, reqs []llmtest.Request, name string) {
	t.Helper()
	if len(reqs) == 0 {
		t.Fatal("no model request")
	}
	f := reqs[len(reqs)-1].Chat.ResponseFormat
	if f == nil || f.Type != "json_schema" || f.JSONSchema == nil || (name != "" && f.JSONSchema.Name != name) {
		t.Errorf("the model was asked for response_format %+v, want a json_schema named %q", f, name)
	}
}

// toolThenObject checks the model requests of a scenario that runs the
// client's tool, then asks for structured output: three, the two of the
// tool turn offering tool, the last asking for a JSON schema named schema
// (any name when empty).
func toolThenObject(t *testing.T, reqs []llmtest.Request, tool, schema string) {
	t.Helper()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3:\n%s", len(reqs), describe(reqs))
	}
	offered(t, reqs[:2], tool)
	checkSchema(t, reqs, schema)
}

// agents: the OpenAI Agents SDK's quick-start agent, in chat-completions or
// in its default Responses mode.
func (s *stack) agents(t *testing.T, mode, stream string) {
	var out struct {
		FinalOutput string   `json:"final_output"`
		ToolCities  []string `json:"tool_cities"`
	}
	reqs := s.run(t, "agents.mjs", map[string]string{"STREAM": stream, "AGENTS_API": mode}, &out)
	if out.FinalOutput != tokyoAnswer || !cmp.Equal(out.ToolCities, []string{"Tokyo"}) {
		t.Errorf("final output %q after get_weather for %v, want %q after Tokyo", out.FinalOutput, out.ToolCities, tokyoAnswer)
	}
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2:\n%s", len(reqs), describe(reqs))
	}
	offered(t, reqs, "get_weather")
	if r := toolResults(reqs[1]); len(r) != 1 || !strings.Contains(r[0], "The weather in Tokyo is sunny") {
		t.Errorf("tool results %q, want the SDK's get_weather output", r)
	}
}

// aiSDK: the Vercel AI SDK's generateText/streamText with tool(), then
// generateObject.
func (s *stack) aiSDK(t *testing.T, stream string) {
	var out struct {
		Text          string         `json:"text"`
		ToolCities    []string       `json:"tool_cities"`
		FinishReasons []string       `json:"finish_reasons"`
		Object        map[string]any `json:"object"`
	}
	reqs := s.run(t, "ai-sdk.mjs", map[string]string{"STREAM": stream}, &out)
	if out.Text != sfAnswer || !cmp.Equal(out.ToolCities, []string{"San Francisco"}) {
		t.Errorf("text %q after weather for %v, want %q after San Francisco", out.Text, out.ToolCities, sfAnswer)
	}
	if !cmp.Equal(out.FinishReasons, []string{"tool-calls", "stop"}) {
		t.Errorf("steps finished %v, want [tool-calls stop]", out.FinishReasons)
	}
	if diff := cmp.Diff(recipe, out.Object); diff != "" {
		t.Errorf("object (-want +got):\n%s", diff)
	}
	toolThenObject(t, reqs, "weather", "")
}

// langchain: ChatOpenAI.bindTools with a tool the caller runs, then
// withStructuredOutput.
func (s *stack) langchain(t *testing.T, stream string) {
	var out struct {
		ToolCalls []struct {
			ID   string         `json:"id"`
			Name string         `json:"name"`
			Args map[string]any `json:"args"`
		} `json:"tool_calls"`
		Answer string         `json:"answer"`
		Joke   map[string]any `json:"joke"`
	}
	reqs := s.run(t, "langchain.mjs", map[string]string{"STREAM": stream}, &out)
	if len(out.ToolCalls) != 1 || out.ToolCalls[0].Name != "multiply" ||
		!cmp.Equal(out.ToolCalls[0].Args, map[string]any{"a": 3.0, "b": 12.0}) {
		t.Errorf("tool calls %+v, want multiply {a:3 b:12}", out.ToolCalls)
	}
	if out.Answer != multiplyAnswer {
		t.Errorf("answer %q, want %q", out.Answer, multiplyAnswer)
	}
	if diff := cmp.Diff(joke, out.Joke); diff != "" {
		t.Errorf("joke (-want +got):\n%s", diff)
	}
	toolThenObject(t, reqs, "multiply", "joke")
	if r := toolResults(reqs[1]); len(r) != 1 || r[0] != "36" {
		t.Errorf("tool results %q, want the caller's 36", r)
	}
}

// gadgetPrompt is the audit scenario's question; gadgetAnswer its answer.
const (
	gadgetPrompt = "How many gadgets are in stock?"
	gadgetAnswer = "7 gadgets are in stock."
)

// openaiAudit: Longhaul's audit trail through openai-node. Unasked, the
// completion has exactly OpenAI's fields and no chunk carries longhaul;
// asked with an extra body field (non-streamed) or the X-Longhaul-Audit
// header (streamed, through the ChatCompletionStream helper), the object
// parses and names the agent's own tool call with the model's arguments.
func (s *stack) openaiAudit(t *testing.T) {
	type audit struct {
		RunID     string `json:"run_id"`
		Mode      string `json:"mode"`
		Status    string `json:"status"`
		Plans     []any  `json:"plans"`
		ToolCalls []struct {
			Name, Arguments, Status, Result string
		} `json:"tool_calls"`
	}
	var out struct {
		Plain struct {
			Keys           []string
			Answer, Finish string
		}
		Asked struct {
			Answer   string
			Longhaul *audit
		}
		PlainStream struct {
			Answer       string
			Chunks       int
			WithLonghaul int `json:"with_longhaul"`
		} `json:"plain_stream"`
		HeaderStream struct {
			Answer, Finish string
			Usage          map[string]any
			Longhaul       *audit
			At, Chunks     int
			FinalRun       string `json:"final_run"`
		} `json:"header_stream"`
	}
	stockBefore := s.stockCalls.Load()
	s.run(t, "openai-audit.mjs", nil, &out)
	if want := []string{"choices", "created", "id", "model", "object", "usage"}; !cmp.Equal(out.Plain.Keys, want) || out.Plain.Answer != gadgetAnswer || out.Plain.Finish != "stop" {
		t.Errorf("unasked completion: keys %v, answer %q, finish %q; want %v, %q, stop", out.Plain.Keys, out.Plain.Answer, out.Plain.Finish, want, gadgetAnswer)
	}
	if out.PlainStream.WithLonghaul != 0 || out.PlainStream.Answer != gadgetAnswer {
		t.Errorf("unasked stream: %d chunks carry longhaul, answer %q", out.PlainStream.WithLonghaul, out.PlainStream.Answer)
	}
	check := func(how string, a *audit) {
		t.Helper()
		if a == nil {
			t.Fatalf("%s: no longhaul object", how)
		}
		if !strings.HasPrefix(a.RunID, "run-") || a.Mode != "chat" || a.Status != "completed" || a.Plans == nil || len(a.ToolCalls) != 1 {
			t.Fatalf("%s: longhaul = %+v", how, *a)
		}
		c := a.ToolCalls[0]
		if c.Name != "stock_level" || c.Arguments != `{"item":"gadget"}` || c.Status != "ok" || compact(c.Result) != `{"item":"widget","count":7}` {
			t.Errorf("%s: tool call %+v", how, c)
		}
	}
	if out.Asked.Answer != gadgetAnswer {
		t.Errorf("asked: answer %q", out.Asked.Answer)
	}
	check("body field", out.Asked.Longhaul)
	hs := out.HeaderStream
	if hs.Answer != gadgetAnswer || hs.Finish != "stop" || hs.Usage == nil || hs.At != hs.Chunks-1 {
		t.Errorf("asked stream: answer %q finish %q usage %v, longhaul on chunk %d of %d (want the last)", hs.Answer, hs.Finish, hs.Usage, hs.At, hs.Chunks)
	}
	check("header, streamed", hs.Longhaul)
	if hs.FinalRun != hs.Longhaul.RunID {
		t.Errorf("finalChatCompletion().longhaul names run %q, the chunk %q", hs.FinalRun, hs.Longhaul.RunID)
	}
	if n := s.stockCalls.Load() - stockBefore; n != 4 {
		t.Errorf("stock_level ran %d times, want 4 (one a request)", n)
	}
}
