package activities

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// reasoningField sends an assistant message's reasoning to the model in
// the field the servers read: go-openai writes only reasoning_content
// (ChatCompletionMessage's MarshalJSON), and Ollama reads "reasoning",
// into the message's Thinking, which the model's template renders
// (ollama v0.32.15 openai/openai.go:35 Message.Reasoning, read at :565,
// :625 and :637; template/template.go:505 passes it to the template as
// .Thinking); vLLM reads "reasoning" since it renamed the field.
// buildMessages puts the reasoning in reasoning_content; this transport
// renames it in a chat request's messages before the request goes out.
type reasoningField struct{ base http.RoundTripper }

// withReasoningField is c (nil: a plain client) with its transport wrapped
// in reasoningField.
func withReasoningField(c *http.Client) *http.Client {
	out := &http.Client{}
	if c != nil {
		*out = *c
	}
	base := out.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out.Transport = reasoningField{base: base}
	return out
}

func (t reasoningField) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || r.Body == nil || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		return t.base.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return nil, err
	}
	if bytes.Contains(body, []byte(`"reasoning_content"`)) {
		body = renameReasoning(body)
	}
	out := r.Clone(r.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return t.base.RoundTrip(out)
}

// renameReasoning moves each message's reasoning_content to reasoning in
// a chat request's body (unchanged when it is not one).
func renameReasoning(body []byte) []byte {
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		return body
	}
	var msgs []map[string]json.RawMessage
	if json.Unmarshal(req["messages"], &msgs) != nil {
		return body
	}
	for _, m := range msgs {
		if r, ok := m["reasoning_content"]; ok {
			m["reasoning"] = r
			delete(m, "reasoning_content")
		}
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		return body
	}
	req["messages"] = b
	out, err := json.Marshal(req)
	if err != nil {
		return body
	}
	return out
}
