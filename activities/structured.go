package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"
)

// structuredCall is one model call that must answer with a JSON object
// matching schema.
type structuredCall struct {
	model    string
	messages []openai.ChatCompletionMessage
	// name names the schema for the endpoint ("plan", "review", …).
	name   string
	schema json.RawMessage
	// accept, when set, is the schema answers are checked against instead
	// of schema: a looser one, which takes what an endpoint that does not
	// hold to the schema sent (or a model that leaves out an optional
	// field) may answer.
	accept json.RawMessage
	// check, when set, validates the decoded answer beyond the schema; its
	// error message is shown to the model when it is asked to fix it.
	check func(raw json.RawMessage) error
	// temperature is the sampling temperature; nil leaves the endpoint's.
	temperature *float32
	// spend counts each call against the run's budgets (zero: none).
	spend spender
}

// structured runs c: it asks for response_format json_schema (strict when
// the schema allows it), and, because not every OpenAI-compatible endpoint
// honours that, parses and validates the answer itself; an invalid answer is
// sent back once with the problems, and a second invalid answer is an error.
// It returns the raw JSON object and the usage of all calls made.
func (a *Activities) structured(ctx context.Context, c structuredCall) (_ json.RawMessage, usage longhaul.Usage, err error) {
	ctx, end := modelSpan(ctx, "structured", a.canonical(c.model))
	defer func() { end("", usage, err) }()
	ep, err := a.resolve(c.model)
	if err != nil {
		return nil, usage, err
	}
	msgs := c.messages
	defer a.heartbeat(ctx)()
	f, err := a.newFitting(ctx, ep, 0, longhaul.ModelOptions{})
	if err != nil {
		return nil, usage, err
	}
	for attempt := 1; ; attempt++ {
		req := openai.ChatCompletionRequest{
			Model:    ep.model,
			Messages: msgs,
			ResponseFormat: &openai.ChatCompletionResponseFormat{
				Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
				JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
					Name:   c.name,
					Schema: c.schema,
					Strict: strictCompatible(c.schema),
				},
			},
			Temperature: sampling(c.temperature),
		}
		data, err := fitStructured(&req, f)
		observeWindow(ctx, data, 0, err)
		if err != nil {
			return nil, usage, err
		}
		// Priced as the model that answers, never as the list typed.
		settle, err := c.spend.call(ctx, a.ref(ep, ""), strconv.Itoa(attempt), req)
		if err != nil {
			return nil, usage, err
		}
		resp, err := ep.client.CreateChatCompletion(ctx, req)
		call := wholeUsage(req, resp)
		settle(unaryCharge(ctx, req, resp, err))
		if err != nil {
			return nil, usage, a.modelError(ctx, err, ep)
		}
		usage = usage.Add(call)
		if len(resp.Choices) == 0 {
			return nil, usage, temporal.NewApplicationError("model answered without a choice", longhaul.ErrTypeModelUnavailable)
		}
		// A thinking model's thought is not the JSON: in a field of its
		// own (go-openai leaves Ollama's and vLLM's "reasoning" out), or
		// a <think> block before it in the content, dropped here.
		_, text := splitThink(resp.Choices[0].Message.Content)
		if len(text) > a.outputLimit() {
			return nil, usage, outputTooLarge(a.outputLimit())
		}
		accept := c.accept
		if accept == nil {
			accept = c.schema
		}
		raw, err := decodeStructured(text, accept, c.check)
		if err == nil {
			return raw, usage, nil
		}
		if attempt == 2 {
			return nil, usage, temporal.NewApplicationError(
				fmt.Sprintf("the model's %s is not valid after one correction: %v", c.name, err), longhaul.ErrTypeModelBadOutput)
		}
		a.log.Debug("structured answer invalid; asking again", "schema", c.name, "error", err)
		msgs = append(append([]openai.ChatCompletionMessage(nil), msgs...), correction(text, err)...)
	}
}

// correction asks a model once more for a JSON answer: its invalid answer,
// then what is wrong with it.
func correction(answer string, problem error) []openai.ChatCompletionMessage {
	return []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleAssistant, Content: answer},
		{Role: openai.ChatMessageRoleUser, Content: "That answer is not valid: " + problem.Error() +
			"\n\nReply again with only the corrected JSON object, matching the schema exactly, and nothing else."},
	}
}

// decodeStructured finds the JSON object in text (endpoints that ignore
// response_format may wrap it in prose or a code fence, a thinking model
// on a server without a reasoning parser may think before it in <think>), checks it against
// schema and check, and returns it.
func decodeStructured(text string, schema json.RawMessage, check func(json.RawMessage) error) (json.RawMessage, error) {
	_, text = splitThink(text) // a thought before the JSON is not the answer
	s := strings.TrimSpace(text)
	if i := strings.IndexByte(s, '{'); i >= 0 {
		if j := strings.LastIndexByte(s, '}'); j > i {
			s = s[i : j+1]
		}
	}
	if !json.Valid([]byte(s)) || !strings.HasPrefix(s, "{") {
		return nil, errors.New("the answer is not a JSON object")
	}
	raw := json.RawMessage(s)
	if len(schema) == 0 {
		return raw, nil // any object
	}
	if err := tools.ValidateArguments(schema, raw); err != nil {
		msg := err.Error()
		msg = strings.TrimPrefix(msg, tools.ErrInvalidArguments.Error()+": ")
		return nil, errors.New(strings.ReplaceAll(msg, "argument ", "field "))
	}
	if check != nil {
		if err := check(raw); err != nil {
			return nil, err
		}
	}
	return raw, nil
}

// strictCompatible reports whether schema meets OpenAI's strict structured
// output rules: every object lists all its properties as required and
// forbids additional ones. Endpoints reject strict with a schema that does
// not, so a schema that cannot be strict is sent without it.
func strictCompatible(schema json.RawMessage) bool {
	var v any
	if json.Unmarshal(schema, &v) != nil {
		return false
	}
	return strictNode(v)
}

func strictNode(v any) bool {
	switch n := v.(type) {
	case map[string]any:
		if props, ok := n["properties"].(map[string]any); ok || n["type"] == "object" {
			if n["additionalProperties"] != false {
				return false
			}
			req, _ := n["required"].([]any)
			if len(req) != len(props) {
				return false
			}
		}
		for _, child := range n {
			if !strictNode(child) {
				return false
			}
		}
	case []any:
		for _, child := range n {
			if !strictNode(child) {
				return false
			}
		}
	}
	return true
}

// strictify returns a copy of a tool's parameters schema that meets the
// strict rules: each object forbids additional properties and requires all
// of them, with the ones that were optional made nullable, so a model can
// still leave them out by sending null (dropNulls removes those again).
// Keywords strict mode does not support are removed.
func strictify(schema map[string]any) map[string]any {
	out := make(map[string]any, len(schema))
	for k, v := range schema {
		switch k {
		case "default", "examples", "$schema", "title":
			continue
		}
		out[k] = strictValue(v)
	}
	props, ok := out["properties"].(map[string]any)
	if !ok && out["type"] != "object" {
		return out
	}
	if props == nil {
		props = map[string]any{}
		out["properties"] = props
	}
	required := map[string]bool{}
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	names := slices.Sorted(maps.Keys(props))
	all := make([]any, 0, len(names))
	for _, name := range names {
		all = append(all, name)
		if !required[name] {
			if p, ok := props[name].(map[string]any); ok {
				props[name] = nullable(p)
			}
		}
	}
	out["required"] = all
	out["additionalProperties"] = false
	return out
}

func strictValue(v any) any {
	switch n := v.(type) {
	case map[string]any:
		if _, ok := n["properties"]; ok || n["type"] == "object" {
			return strictify(n)
		}
		out := make(map[string]any, len(n))
		for k, c := range n {
			if k == "default" || k == "examples" {
				continue
			}
			out[k] = strictValue(c)
		}
		return out
	case []any:
		out := make([]any, len(n))
		for i, c := range n {
			out[i] = strictValue(c)
		}
		return out
	}
	return v
}

// nullable lets schema p also accept null.
func nullable(p map[string]any) map[string]any {
	switch t := p["type"].(type) {
	case string:
		q := maps.Clone(p)
		q["type"] = []any{t, "null"}
		if enum, ok := q["enum"].([]any); ok {
			q["enum"] = append(append([]any(nil), enum...), nil)
		}
		return q
	case []any:
		for _, x := range t {
			if x == "null" {
				return p
			}
		}
		q := maps.Clone(p)
		q["type"] = append(append([]any(nil), t...), "null")
		return q
	}
	return map[string]any{"anyOf": []any{p, map[string]any{"type": "null"}}}
}

// dropNulls removes the null-valued members of an arguments object, the
// optional arguments a strict-mode model sent as null.
func dropNulls(args json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return args
	}
	changed := false
	for k, v := range m {
		if strings.TrimSpace(string(v)) == "null" {
			delete(m, k)
			changed = true
		}
	}
	if !changed {
		return args
	}
	b, err := json.Marshal(m)
	if err != nil {
		return args
	}
	return b
}
