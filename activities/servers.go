package activities

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/modelcheck"
	"github.com/sashabaranov/go-openai"
)

// This file reads model servers' errors as each server writes them, and
// enforces the request parameters a server ignores.

// serverContextExceeded reports whether a model endpoint's error is a
// request longer than the model's window. OpenAI says so with the code
// "context_length_exceeded". vLLM answers 400 with its ErrorResponse,
// whose code is the HTTP status as a number (ErrorInfo "code: int",
// vllm/entrypoints/serve/engine/protocol.py at f1bf7bd0; vllm-project/vllm
// as the search index holds it, files on main after the v0.28.0 release),
// and words it by release: "This model's maximum context length is N
// tokens. However, your request has M input tokens." before its renderer,
// and now "You passed M input tokens and requested K output tokens.
// However, the model's context length is only N tokens, …" (param
// "input_tokens") or "max_tokens=K cannot be greater than
// max_model_len=N. Please request fewer output tokens."
// (vllm/renderers/params.py at 017638d7, TokenizeParams). Each is read as
// the window's refusal, which a model with a larger window may take.
func serverContextExceeded(apiErr *openai.APIError, status int) bool {
	if apiErr == nil {
		return false
	}
	if apiErr.Code == longhaul.ErrTypeContextLength {
		return true
	}
	if status != http.StatusBadRequest {
		return false
	}
	msg := strings.ToLower(apiErr.Message)
	return strings.Contains(msg, "maximum context length") || strings.Contains(msg, "context length is only") ||
		strings.Contains(msg, "cannot be greater than max_model_len")
}

// reOllamaMissing is Ollama's answer to a chat naming a model it has not
// pulled: 404 "model 'x' not found" from its ChatHandler (ollama v0.32.15
// server/routes.go:2485) or `model "x" not found, try pulling it first`
// once the scheduler finds no model (routes.go:3116 handleScheduleError),
// turned into OpenAI's envelope by middleware/openai.go:73 (writeError,
// openai.NewError: type "not_found_error").
var reOllamaMissing = regexp.MustCompile(`model ['"]([^'"]+)['"] not found`)

// serverAdvice is what to do about a model endpoint's refusal, appended
// to its own words: the model Ollama lacks is named with `ollama pull`,
// and vLLM's refusal of tools with the flags it needs. "" when there is
// nothing to add.
func serverAdvice(status int, msg string) string {
	switch {
	case status == http.StatusNotFound:
		if m := reOllamaMissing.FindStringSubmatch(msg); m != nil {
			return "; pull it on the Ollama host: `" + modelcheck.PullCommand(m[1]) + "`"
		}
	case status == http.StatusBadRequest && modelcheck.RefusesTools(msg):
		return "; the server refuses tool calls: " + modelcheck.AutoToolChoiceFix
	}
	return ""
}

// toolChoiceNone reports whether a request's tool_choice is "none".
func toolChoiceNone(choice json.RawMessage) bool {
	var s string
	return len(choice) > 0 && json.Unmarshal(choice, &s) == nil && s == "none"
}

// enforceParams makes oreq say, to the server at ep, what the client's
// options ask, where the server would ignore them. Ollama's OpenAI route
// reads no tool_choice, parallel_tool_calls or max_completion_tokens (its
// ChatCompletionRequest has none of them, ollama v0.32.15
// openai/openai.go:105-124) and reads max_tokens as num_predict
// (openai.go:656-657). So:
//
//   - tool_choice "none" sends no tools at all, to any server: a model
//     offered none calls none, whatever the server makes of tool_choice.
//   - max_completion_tokens (and the Responses API's max_output_tokens,
//     which arrives as it) is sent to an Ollama as max_tokens. Any other
//     server keeps max_completion_tokens: OpenAI's reasoning models
//     refuse max_tokens, and so does go-openai's own check before the
//     request leaves (reasoning_validator.go, ErrReasoningModelMaxTokensDeprecated
//     for o1/o3/o4/gpt-5 names), which an Ollama model is not named.
//
// parallel_tool_calls false is enforced on the answer (oneCallARound).
func (a *Activities) enforceParams(ctx context.Context, ep endpoint, oreq *openai.ChatCompletionRequest, opts longhaul.ModelOptions) {
	if toolChoiceNone(opts.ToolChoice) {
		oreq.Tools, oreq.ToolChoice, oreq.ParallelToolCalls = nil, nil, nil
	}
	if oreq.MaxCompletionTokens > 0 && a.servers.ollama(ctx, ep) {
		oreq.MaxTokens, oreq.MaxCompletionTokens = oreq.MaxCompletionTokens, 0
	}
}

// oneCallARound keeps the first tool call of an answer when the request
// said parallel_tool_calls false, which Ollama ignores (see
// enforceParams): the rest are dropped before they are recorded, so the
// conversation holds only the call that runs and its result.
func oneCallARound(opts longhaul.ModelOptions, calls []longhaul.ToolCall) []longhaul.ToolCall {
	if p := opts.ParallelToolCalls; p != nil && !*p && len(calls) > 1 {
		return calls[:1]
	}
	return calls
}

// serverKinds remembers which endpoints are Ollama, asked once per base
// URL (modelcheck.IsOllama) the first time a request needs to know; an
// endpoint that could not be asked is asked again next time.
type serverKinds struct {
	mu   sync.Mutex
	seen map[string]bool
}

// serverProbeTimeout bounds the one request that asks an endpoint what it
// is.
const serverProbeTimeout = 2 * time.Second

func (k *serverKinds) ollama(ctx context.Context, ep endpoint) bool {
	k.mu.Lock()
	is, known := k.seen[ep.BaseURL]
	k.mu.Unlock()
	if known {
		return is
	}
	pctx, cancel := context.WithTimeout(ctx, serverProbeTimeout)
	defer cancel()
	is, err := modelcheck.IsOllama(pctx, http.DefaultClient, ep.BaseURL, ep.APIKey)
	if err != nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.seen == nil {
		k.seen = map[string]bool{}
	}
	k.seen[ep.BaseURL] = is
	return is
}
