package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	openai "github.com/sashabaranov/go-openai"
	"github.com/tiktoken-go/tokenizer"
)

// Behaviour is what the scripted model does with a chat request whose
// prompt does not fit its window (SetWindow). Both are read from the
// servers' own source, cited on each constant, so a test that passes
// against them has proven that Longhaul never sends what a real model
// would cut or refuse.
type Behaviour int

const (
	// BehaviourOllama cuts silently, as Ollama v0.32.15 (the tag
	// docker-compose.yml pins) does on /v1/chat/completions:
	// server/prompt.go chatPrompt "truncates any messages that exceed the
	// context window of the model, making sure to always include 1) the
	// latest message and 2) system messages": for i from the first
	// message on, it renders the system messages among msgs[:i] plus
	// msgs[i:] and stops at the first i whose tokens are <= opts.NumCtx
	// ("if ctxLen <= opts.NumCtx { currMsgIdx = i; break }"), keeping at
	// least the last message, and says so only in a debug log
	// ("truncating input messages which exceed context length"). A prompt
	// still too long after that (the system messages and the last one) is
	// cut again in the runner by a context shift
	// (llm/llama_server.go completionPromptForRequest: keep num_keep
	// tokens, 4 by api.DefaultOptions plus the BOS, then
	// contextShiftPromptLimit: numCtx - max((numCtx-numKeep)/2, 1)). The
	// answer is an ordinary 200 whose usage.prompt_tokens counts what was
	// kept, and the script's rules and Func replies see only the kept
	// messages, as the model does. The request is recorded with Cut set.
	BehaviourOllama Behaviour = iota + 1
	// BehaviourOpenAI refuses, as OpenAI's API does: HTTP 400 with
	// {"error": {"message": "This model's maximum context length is N
	// tokens. However, your messages resulted in M tokens. Please reduce
	// the length of the messages.", "type": "invalid_request_error",
	// "param": "messages", "code": "context_length_exceeded"}} (the
	// envelope as OpenAI returns it, quoted whole in
	// github.com/chathub-dev/chathub issue 126), and, when the request
	// reserves an answer with max_tokens or max_completion_tokens and the
	// two together exceed the window, "However, you requested T tokens
	// (P in the messages, C in the completion). Please reduce the length
	// of the messages or completion." (quoted in The-Vibe-Company/quivr
	// issue 505 and StampyAI/stampy-chat issue 133). No scripted reply is
	// consumed: the model never saw the request. The request is recorded
	// with Cut set.
	BehaviourOpenAI
)

// String names the behaviour, for test names and messages.
func (b Behaviour) String() string {
	switch b {
	case BehaviourOllama:
		return "ollama"
	case BehaviourOpenAI:
		return "openai"
	}
	return fmt.Sprintf("Behaviour(%d)", int(b))
}

// The chat template's tokens, as Ollama renders Llama 3.1 (the library's
// llama3.1 template; the same headers as ollama v0.32.15
// template/llama3-instruct.gotmpl, "<|start_header_id|>{{ .Role
// }}<|end_header_id|>\n\n{{ .Content }}<|eot_id|>", and the tool block of
// Meta's Llama 3.1 template in template/index.json). Special tokens are
// one token each and not in cl100k's vocabulary, so they are added, not
// tokenized.
const (
	// specialsPerMessage: <|start_header_id|>, <|end_header_id|>,
	// <|eot_id|>.
	specialsPerMessage = 3
	// specialsPerRequest: <|begin_of_text|>, and the answer's own
	// <|start_header_id|>assistant<|end_header_id|>.
	specialsPerRequest = 3
	// ImageTokens is what one image in a message costs: Ollama's
	// truncation heuristic (server/prompt.go chatPrompt: "Clip images are
	// represented as 768 tokens, each an embedding"); a low-detail image
	// is OpenAI's documented 85.
	ImageTokens    = 768
	imageTokensLow = 85
)

// toolsPreamble is the text Llama 3.1's template puts before the tool
// definitions (template/index.json, Meta's Llama 3.1 template, and the
// library's llama3.1 template Ollama serves), and the system prompt's
// tool note of the latter.
const toolsPreamble = "When you receive a tool call response, use the output to format an answer to the orginal user question.\n\n" +
	"You are a helpful assistant with tool calling capabilities.\n\n" +
	"Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n" +
	"Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}. Do not use variables.\n\n" +
	"\nQuestion: "

var (
	codecOnce sync.Once
	codec     tokenizer.Codec
	codecErr  error

	// counted keeps the counts of texts already seen: a conversation
	// sends its messages again with every request, and cl100k's encoder
	// costs about 3.5 ms per 16,000 characters (55 ms under -race).
	countedMu    sync.Mutex
	counted      = map[string]int{}
	countedBytes int
)

// maxCountedBytes bounds the texts counted keeps; past it, it starts
// over.
const maxCountedBytes = 64 << 20

// tokens counts s with cl100k_base. Llama 3's 128K vocabulary holds
// cl100k's 100K tokens and 28K more for other languages, with the same
// pre-tokenizer pattern (Meta, "The Llama 3 Herd of Models", 2024, §3.1;
// meta-llama/llama3 llama/tokenizer.py), so on English text and code
// cl100k's count is Llama 3's or a little more; internal/window's
// tokenizer test measures the difference.
func tokens(s string) int {
	if s == "" {
		return 0
	}
	countedMu.Lock()
	n, ok := counted[s]
	countedMu.Unlock()
	if ok {
		return n
	}
	codecOnce.Do(func() { codec, codecErr = tokenizer.Get(tokenizer.Cl100kBase) })
	if codecErr != nil {
		panic(fmt.Errorf("llmtest: cl100k_base: %w", codecErr))
	}
	n, err := codec.Count(s)
	if err != nil {
		// Count fails only on a codec bug; every string has an encoding.
		panic(fmt.Errorf("llmtest: counting tokens: %w", err))
	}
	countedMu.Lock()
	if countedBytes+len(s) > maxCountedBytes {
		clear(counted)
		countedBytes = 0
	}
	counted[s] = n
	countedBytes += len(s)
	countedMu.Unlock()
	return n
}

// PromptTokens counts the prompt of a chat request as the scripted model
// reads it: every message rendered by Llama 3.1's chat template as Ollama
// renders it (header and end markers, role, text, tool calls as
// {"name": …, "parameters": …}, images as ImageTokens), the tool
// definitions as JSON with the template's instructions around them, and
// the answer's header, in cl100k_base tokens. It is the count behind
// SetWindow and the usage a windowed server reports; response_format is
// not counted (Ollama turns it into a grammar, not prompt text).
func PromptTokens(chat openai.ChatCompletionRequest) int {
	n := requestTokens(chat.Tools)
	for _, m := range chat.Messages {
		n += messageTokens(m)
	}
	return n
}

// requestTokens is what a request costs beside its messages.
func requestTokens(tools []openai.Tool) int {
	n := specialsPerRequest + tokens("assistant") + tokens("\n\n")
	if len(tools) == 0 {
		return n
	}
	n += tokens(toolsPreamble)
	for _, t := range tools {
		b, err := json.Marshal(t)
		if err != nil {
			continue
		}
		n += tokens(string(b) + "\n")
	}
	return n
}

// messageTokens is one message's cost, the same wherever it stands, so a
// truncation can sum them.
func messageTokens(m openai.ChatCompletionMessage) int {
	role := m.Role
	if role == openai.ChatMessageRoleTool {
		role = "ipython" // Llama 3.1's role for tool results
	}
	n := specialsPerMessage + tokens(role) + tokens("\n\n"+MessageText(m))
	for _, p := range m.MultiContent {
		switch {
		case p.ImageURL != nil && p.ImageURL.Detail == openai.ImageURLDetailLow:
			n += imageTokensLow
		case p.ImageURL != nil:
			n += ImageTokens
		}
	}
	for _, tc := range m.ToolCalls {
		args := tc.Function.Arguments
		if args == "" {
			args = "{}"
		}
		n += tokens(fmt.Sprintf("\n{\"name\": %q, \"parameters\": %s}", tc.Function.Name, args))
	}
	return n
}

// SetWindow gives the scripted model a window of tokens (prompt and
// answer together) and what it does with a request over it. A window of
// 0, the default, is unlimited: nothing is cut and usage keeps
// CountTokens's estimate, so scripts written before windows existed keep
// their numbers. With a window, usage.prompt_tokens is PromptTokens of
// what the model read, and the model's native endpoints report the
// window (see SetFlavour).
func (s *Server) SetWindow(tokens int, b Behaviour) {
	if tokens < 0 {
		panic("llmtest: SetWindow with a negative window")
	}
	if tokens > 0 && b != BehaviourOllama && b != BehaviourOpenAI {
		panic("llmtest: SetWindow with an unknown behaviour")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.window, s.behaviour = tokens, b
}

// Window returns the window and behaviour set with SetWindow.
func (s *Server) Window() (int, Behaviour) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.window, s.behaviour
}

// CutRequests returns the chat requests the model had to cut or refuse
// (Request.Cut), in order. A test proves that Longhaul fits every call by
// asserting that it is empty.
func (s *Server) CutRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.reqs {
		if r.Cut {
			out = append(out, r)
		}
	}
	return out
}

// fit is what a window made of one request.
type fit struct {
	// kept is the request as the model reads it (Ollama's cut); the
	// request itself when nothing was dropped.
	kept openai.ChatCompletionRequest
	// prompt is the tokens read: PromptTokens of kept, or the context
	// shift's limit.
	prompt int
	// refusal, when set, is the 400 to answer instead of a reply.
	refusal string
}

// applyWindow fills req's PromptTokens, Cut and Dropped for a window of
// window tokens under b, and returns what the model reads.
func applyWindow(req *Request, window int, b Behaviour) fit {
	chat := req.Chat
	base := requestTokens(chat.Tools)
	per := make([]int, len(chat.Messages))
	total := base
	for i, m := range chat.Messages {
		per[i] = messageTokens(m)
		total += per[i]
	}
	req.PromptTokens = total
	f := fit{kept: chat, prompt: total}
	if window <= 0 {
		return f
	}
	switch b {
	case BehaviourOpenAI:
		reserve := chat.MaxCompletionTokens
		if chat.MaxTokens > reserve {
			reserve = chat.MaxTokens
		}
		switch {
		case total > window && reserve == 0:
			f.refusal = fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", window, total)
		case total+reserve > window:
			f.refusal = fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.", window, total+reserve, total, reserve)
		}
		req.Cut = f.refusal != ""
	case BehaviourOllama:
		f = ollamaCut(req, base, per, window)
	}
	return f
}

// ollamaCut is chatPrompt's loop (ollama v0.32.15 server/prompt.go) over
// the messages' token counts, and the runner's context shift after it.
func ollamaCut(req *Request, base int, per []int, window int) fit {
	msgs := req.Chat.Messages
	last := len(msgs) - 1
	start := 0
	for i := 0; i <= last; i++ {
		n := base
		for j := range i {
			if msgs[j].Role == openai.ChatMessageRoleSystem {
				n += per[j]
			}
		}
		for j := i; j <= last; j++ {
			n += per[j]
		}
		if n <= window || i == last {
			start = i
			break
		}
	}
	kept := req.Chat
	kept.Messages = nil
	prompt := base
	for j, m := range msgs {
		if j >= start || m.Role == openai.ChatMessageRoleSystem {
			kept.Messages = append(kept.Messages, m)
			prompt += per[j]
		}
	}
	req.Dropped = len(msgs) - len(kept.Messages)
	req.Cut = req.Dropped > 0
	if prompt > window-1 {
		// llm/llama_server.go: fullPromptLimit is NumCtx-1; over it, the
		// context shift keeps num_keep (4) + BOS and halves the rest.
		const numKeep = 4 + 1
		prompt = window - max((window-numKeep)/2, 1)
		req.Cut = true
	}
	return fit{kept: kept, prompt: prompt}
}

// refuse answers OpenAI's context_length_exceeded.
func refuse(w http.ResponseWriter, message string) {
	param := "messages"
	writeJSON(w, http.StatusBadRequest, errorEnvelope{Error: errorBody{
		Message: message, Type: "invalid_request_error", Param: &param, Code: "context_length_exceeded",
	}})
}
