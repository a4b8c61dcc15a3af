package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/sashabaranov/go-openai"
)

// This file holds Ollama's own frames of its OpenAI route: its chunks, its
// whole answers and its tool calls, as ollama v0.32.15 openai/openai.go
// writes them.

// Wire types of Ollama's chat.completion.chunk (openai/openai.go:43 Delta,
// :61 ChunkChoice, :137 ChatCompletionChunk): no logprobs unless asked,
// usage only in the usage chunk, content an "any" that is "" rather than
// absent in reasoning and tool-call chunks.
type ollamaChunk struct {
	ID                string              `json:"id"`
	Object            string              `json:"object"`
	Created           int64               `json:"created"`
	Model             string              `json:"model"`
	SystemFingerprint string              `json:"system_fingerprint"`
	Choices           []ollamaChunkChoice `json:"choices"`
	Usage             *usage              `json:"usage,omitempty"`
}

type ollamaChunkChoice struct {
	Index        int         `json:"index"`
	Delta        ollamaDelta `json:"delta"`
	FinishReason *string     `json:"finish_reason"`
}

type ollamaDelta struct {
	Role      string           `json:"role,omitempty"`
	Content   any              `json:"content,omitempty"`
	Reasoning string           `json:"reasoning,omitempty"`
	ToolCalls []ollamaToolCall `json:"tool_calls,omitempty"`
}

// ollamaToolCall is openai/openai.go:185 ToolCall: id, index, type,
// function, in that order.
type ollamaToolCall struct {
	ID       string           `json:"id"`
	Index    int              `json:"index"`
	Type     string           `json:"type"`
	Function responseFunction `json:"function"`
}

// Wire types of Ollama's chat.completion (openai/openai.go:32 Message,
// :54 Choice, :126 ChatCompletion).

type ollamaCompletion struct {
	ID                string                   `json:"id"`
	Object            string                   `json:"object"`
	Created           int64                    `json:"created"`
	Model             string                   `json:"model"`
	SystemFingerprint string                   `json:"system_fingerprint"`
	Choices           []ollamaCompletionChoice `json:"choices"`
	Usage             usage                    `json:"usage"`
}

type ollamaCompletionChoice struct {
	Index        int           `json:"index"`
	Message      ollamaMessage `json:"message"`
	FinishReason *string       `json:"finish_reason"`
}

type ollamaMessage struct {
	Role      string           `json:"role"`
	Content   any              `json:"content"`
	Reasoning string           `json:"reasoning,omitempty"`
	ToolCalls []ollamaToolCall `json:"tool_calls,omitempty"`
}

// ollamaCalls is m's tool calls as Ollama writes them.
func (m message) ollamaCalls() []ollamaToolCall {
	var out []ollamaToolCall
	for i, tc := range m.toolCalls {
		out = append(out, ollamaToolCall{
			ID: tc.ID, Index: i, Type: string(openai.ToolTypeFunction),
			Function: responseFunction{Name: tc.Name, Arguments: tc.Arguments},
		})
	}
	return out
}

// ollamaFrames builds the data frames of an Ollama stream, without
// [DONE], as middleware/openai.go:80 ChatWriter.writeResponse writes
// them: one chunk per piece the runner returns, the first carrying role
// "assistant" (no chunk of its own); reasoning as delta.reasoning with
// content "" (toChunk, openai/openai.go:301); each tool call whole in a
// chunk of its own once parsed (server/routes.go:2862-2870); a wholly
// empty answer still opens with a role chunk; then the finish chunk with
// an empty delta (FinishChunk, :369; "tool_calls" once a call was sent)
// and, with include_usage, a usage chunk with no choices.
func (m message) ollamaFrames(includeUsage bool) []frame {
	mk := func(kind frameKind, c ollamaChunk) frame {
		c.ID, c.Object, c.Created, c.Model, c.SystemFingerprint = m.id, "chat.completion.chunk", m.created, m.model, ollamaFingerprint
		b, err := json.Marshal(c)
		if err != nil {
			panic(fmt.Errorf("llmtest: encoding chunk: %w", err))
		}
		return frame{kind: kind, data: b}
	}
	var fs []frame
	one := func(d ollamaDelta, toolStart bool) {
		if len(fs) == 0 {
			d.Role = openai.ChatMessageRoleAssistant
		}
		f := mk(frameContent, ollamaChunk{Choices: []ollamaChunkChoice{{Delta: d}}})
		f.toolStart = toolStart
		fs = append(fs, f)
	}
	for _, p := range m.reasoningParts {
		one(ollamaDelta{Content: "", Reasoning: p}, false)
	}
	for _, p := range m.contentParts {
		one(ollamaDelta{Content: p}, false)
	}
	for _, tc := range m.ollamaCalls() {
		one(ollamaDelta{Content: "", ToolCalls: []ollamaToolCall{tc}}, true)
	}
	if len(fs) == 0 {
		one(ollamaDelta{Content: ""}, false)
		fs[0].kind = frameRole
	}
	reason := m.finishReason
	fs = append(fs, mk(frameFinish, ollamaChunk{Choices: []ollamaChunkChoice{{Delta: ollamaDelta{}, FinishReason: &reason}}}))
	if includeUsage {
		u := m.usage
		fs = append(fs, mk(frameUsage, ollamaChunk{Choices: []ollamaChunkChoice{}, Usage: &u}))
	}
	return fs
}

// ollamaErrorFrame is the chunk Ollama writes when its runner fails
// mid-stream: the {"error": msg} it encodes decodes as an empty
// api.ChatResponse, so the chunk has no model and an empty content delta
// (see StreamError).
func (m message) ollamaErrorFrame() []byte {
	b, err := json.Marshal(ollamaChunk{
		ID: m.id, Object: "chat.completion.chunk", Created: m.created, SystemFingerprint: ollamaFingerprint,
		Choices: []ollamaChunkChoice{{Delta: ollamaDelta{Content: ""}}},
	})
	if err != nil {
		panic(fmt.Errorf("llmtest: encoding chunk: %w", err))
	}
	return b
}

// completeOllama writes Ollama's non-streaming chat.completion
// (openai/openai.go:269 ToChatCompletion, written by json.Encoder at
// middleware/openai.go:168, so with a trailing newline).
func completeOllama(w http.ResponseWriter, m message) {
	reason := m.finishReason
	body, err := json.Marshal(ollamaCompletion{
		ID: m.id, Object: "chat.completion", Created: m.created, Model: m.model, SystemFingerprint: ollamaFingerprint,
		Choices: []ollamaCompletionChoice{{
			Message: ollamaMessage{Role: openai.ChatMessageRoleAssistant, Content: m.content,
				Reasoning: m.reasoning, ToolCalls: m.ollamaCalls()},
			FinishReason: &reason,
		}},
		Usage: m.usage,
	})
	if err != nil {
		panic(fmt.Errorf("llmtest: encoding completion: %w", err))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(body, '\n'))
}
