package llmtest

// This file holds the OpenAI wire types the scripted model answers with:
// a whole chat.completion and the chunks of a streamed one.

// Wire types of a non-streaming chat.completion.

type completion struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	SystemFingerprint string             `json:"system_fingerprint"`
	Choices           []completionChoice `json:"choices"`
	Usage             usage              `json:"usage"`
}

type completionChoice struct {
	Index        int             `json:"index"`
	Message      responseMessage `json:"message"`
	Logprobs     *struct{}       `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

type responseMessage struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
	// Reasoning is vLLM's message.reasoning
	// (vllm/entrypoints/openai/chat_completion/serving.py at 006c49d4,
	// chat_completion_full_generator: _create_chat_message(role=role,
	// reasoning=reasoning, content=content)).
	Reasoning string             `json:"reasoning,omitempty"`
	Refusal   *string            `json:"refusal"`
	ToolCalls []responseToolCall `json:"tool_calls,omitempty"`
}

type responseToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function responseFunction `json:"function"`
}

type responseFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Wire types of a streamed chat.completion.chunk.

type chunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint string        `json:"system_fingerprint"`
	Choices           []chunkChoice `json:"choices"`
	// Usage is absent without include_usage, null in ordinary chunks with
	// it, and set in the final usage chunk.
	Usage any `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int       `json:"index"`
	Delta        delta     `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type delta struct {
	Role             string  `json:"role,omitempty"`
	Content          *string `json:"content,omitempty"`
	ReasoningContent string  `json:"reasoning_content,omitempty"`
	// Reasoning is vLLM's delta.reasoning (DeltaMessage, imported from
	// vllm/entrypoints/generate/base/protocol.py by
	// vllm/entrypoints/openai/chat_completion/serving.py at 006c49d4,
	// which streams delta_message.reasoning).
	Reasoning string          `json:"reasoning,omitempty"`
	ToolCalls []deltaToolCall `json:"tool_calls,omitempty"`
}

type deltaToolCall struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function deltaFunction `json:"function"`
}

type deltaFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

const fingerprint = "fp_llmtest"
