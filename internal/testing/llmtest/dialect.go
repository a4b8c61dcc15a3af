package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// The dialects: how each Flavour answers a chat completion, read from the
// servers' own source. Ollama is cited at v0.32.15 (the tag
// docker-compose.yml pins); vLLM at the newest source the search index
// holds of vllm-project/vllm (files on main after the v0.28.0 release,
// each cited with the commit the index stores it at).

// ollamaFingerprint is every Ollama answer's system_fingerprint (ollama
// v0.32.15 openai/openai.go:282 ToChatCompletion, :332 toChunk, :388 FinishChunk).
const ollamaFingerprint = "fp_ollama"

// thinkOpen and thinkClose wrap the reasoning of a FlavourThinkTags
// answer: a model such as Qwen3 or DeepSeek-R1 writes them at the start
// of its output, and a server with no reasoning parser passes them on as
// content.
const (
	thinkOpen  = "<think>\n"
	thinkClose = "\n</think>\n\n"
)

// SetPulled makes a FlavourOllama server know only names, as an Ollama
// that has pulled just these: GET /api/tags lists them, and a chat
// request or POST /api/show naming another gets Ollama's 404. A name
// without a tag means its ":latest", as Ollama parses it. Without
// SetPulled every model exists.
func (s *Server) SetPulled(names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pulled = []string{}
	for _, n := range names {
		s.pulled = append(s.pulled, ollamaName(n))
	}
}

// SetAutoToolChoice says whether a FlavourVLLM server was started with
// --enable-auto-tool-choice and --tool-call-parser; it was, until
// SetAutoToolChoice(false). Without them vLLM refuses with a 400 every
// request whose tool_choice is "auto" (which is what a request offering
// tools and naming no tool_choice gets), "required" or a named
// function; see vllmToolChoiceRefusal.
func (s *Server) SetAutoToolChoice(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noAutoTools = !on
}

// ToolCallSilence makes a streamed reply send nothing for d before each
// tool call, as Ollama does while the model writes a call: its tool
// parser buffers the call's text and sends the call only once it is
// whole (ollama v0.32.15 server/routes.go:2861-2890, toolParser.Add
// returns no content while a call is being written).
func ToolCallSilence(d time.Duration) Option {
	return func(o *options) { o.toolCallSilence = d }
}

// StreamError makes a streamed reply fail after afterChunks data frames
// as the flavour's server fails mid-stream. FlavourOllama sends what
// Ollama writes on its OpenAI route when the runner fails after the
// first chunk: one chunk with an empty content delta, then the response
// ends, with no finish_reason and no [DONE]; the message itself never
// reaches the client (ollama v0.32.15 server/routes.go:2120 encodes
// {"error": msg} into the ChatWriter, whose writeResponse at
// middleware/openai.go:80 decodes it as an empty api.ChatResponse and
// writes it through toChunk, openai/openai.go:301; streamResponse then
// returns false and the body ends). With afterChunks 0, before anything
// was written, Ollama answers HTTP 500 with its error envelope carrying
// msg (server/routes.go:2116-2118, through ChatWriter.writeError,
// middleware/openai.go:64), and so does a non-streaming reply
// (server/routes.go:2417). Other flavours send their error envelope as
// a data frame, then [DONE], as vLLM does
// (vllm/entrypoints/openai/chat_completion/serving.py at 006c49d4,
// chat_completion_stream_generator: on an exception it yields the
// create_streaming_error_response envelope as a data frame, and then
// "data: [DONE]" as every stream ends).
func StreamError(afterChunks int, msg string) Option {
	return func(o *options) { o.streamErr = &streamErr{after: afterChunks, msg: msg} }
}

type streamErr struct {
	after int
	msg   string
}

// ollamaName is name as Ollama resolves it: ":latest" when it has no
// tag (types/model/name.go:41 defaultTag, filled in by ParseName).
func ollamaName(name string) string {
	base := name
	if i := strings.LastIndex(name, "/"); i >= 0 {
		base = name[i+1:]
	}
	if !strings.Contains(base, ":") {
		return name + ":latest"
	}
	return name
}

// pulledLocked reports whether a FlavourOllama server has name; s.mu
// must be held.
func (s *Server) pulledLocked(name string) bool {
	if s.pulled == nil {
		return true
	}
	n := ollamaName(name)
	return slices.Contains(s.pulled, n)
}

// handleTags answers GET /api/tags: the pulled models, shaped as ollama
// v0.32.15 api/types.go:797 ListResponse (server/routes.go:1632
// ListHandler). Without SetPulled it lists the models SetOllamaModel
// named and those chat requests named.
func (s *Server) handleTags(w http.ResponseWriter) {
	type details struct {
		ParentModel       string   `json:"parent_model"`
		Format            string   `json:"format"`
		Family            string   `json:"family"`
		Families          []string `json:"families"`
		ParameterSize     string   `json:"parameter_size"`
		QuantizationLevel string   `json:"quantization_level"`
	}
	type entry struct {
		Name       string    `json:"name"`
		Model      string    `json:"model"`
		ModifiedAt time.Time `json:"modified_at"`
		Size       int64     `json:"size"`
		Digest     string    `json:"digest"`
		Details    details   `json:"details"`
	}
	s.mu.Lock()
	names := s.pulled
	if names == nil {
		for n := range s.ollama {
			names = append(names, ollamaName(n))
		}
		for _, n := range s.used {
			names = append(names, ollamaName(n))
		}
	}
	seen := map[string]bool{}
	models := []entry{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		m := s.ollamaModelLocked(n)
		models = append(models, entry{
			Name: n, Model: n, ModifiedAt: s.started.UTC(), Size: 4_920_753_328,
			Digest:  "46e0c10c039e019119339687c3c1757cc81b9da49709a3b3924863ba87ca666e",
			Details: details{Format: "gguf", Family: m.Arch, Families: []string{m.Arch}, ParameterSize: "8.0B", QuantizationLevel: "Q4_K_M"},
		})
	}
	s.mu.Unlock()
	slices.SortFunc(models, func(a, b entry) int { return strings.Compare(a.Name, b.Name) })
	writeJSON(w, http.StatusOK, map[string]any{"models": models})
}

// ollamaNotFound is Ollama's 404 for a model it has not pulled, as the
// chat handler words it: getModel fails with os.ErrNotExist and
// ChatHandler answers {"error": "model '<name>' not found"} (ollama
// v0.32.15 server/routes.go:2485), which the OpenAI middleware wraps in
// its envelope with type "not_found_error" (middleware/openai.go:64
// writeError, openai/openai.go:225 NewError).
func ollamaNotFound(model string) string {
	return fmt.Sprintf("model '%s' not found", model)
}

// writeOllamaError writes Ollama's OpenAI error envelope
// (openai/openai.go:225 NewError: type "invalid_request_error" for 400,
// "not_found_error" for 404, "api_error" otherwise; param and code
// null), encoded by json.Encoder, so with a trailing newline
// (middleware/openai.go:73).
func writeOllamaError(w http.ResponseWriter, status int, message, typ string, code any) {
	if typ == "" {
		switch status {
		case http.StatusBadRequest:
			typ = "invalid_request_error"
		case http.StatusNotFound:
			typ = "not_found_error"
		default:
			typ = "api_error"
		}
	}
	if c, ok := code.(string); ok && c == "" {
		code = nil
	}
	b, err := json.Marshal(errorEnvelope{Error: errorBody{Message: message, Type: typ, Code: code}})
	if err != nil {
		panic(fmt.Errorf("llmtest: encoding error: %w", err))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// vllmErrorType is the type vLLM gives an error of status
// (vllm/entrypoints/serve/exception_handling/error_response.py at
// ba638200, create_error_response: "BadRequestError" by default and for
// validation errors, "NotFoundError", "UnprocessableEntityError",
// "InternalServerError", "NotImplementedError", else the status's
// phrase).
func vllmErrorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "BadRequestError"
	case http.StatusNotFound:
		return "NotFoundError"
	case http.StatusUnprocessableEntity:
		return "UnprocessableEntityError"
	case http.StatusInternalServerError:
		return "InternalServerError"
	case http.StatusNotImplemented:
		return "NotImplementedError"
	}
	return http.StatusText(status)
}

// writeVLLMError writes vLLM's ErrorResponse: {"error": {"message",
// "type", "param", "code"}} whose code is the HTTP status as a number
// (vllm/entrypoints/serve/engine/protocol.py at f1bf7bd0, ErrorInfo
// "code: int"; error_response.py create_error_response sets
// code=status_code.value).
func writeVLLMError(w http.ResponseWriter, status int, message, typ string, code any, param *string) {
	if typ == "" {
		typ = vllmErrorType(status)
	}
	if c, ok := code.(string); !ok || c == "" {
		code = status
	}
	writeJSON(w, status, errorEnvelope{Error: errorBody{Message: message, Type: typ, Param: param, Code: code}})
}

// writeFlavourError writes an error envelope in the flavour's dialect.
// typ and code override the flavour's own when set.
func writeFlavourError(w http.ResponseWriter, f Flavour, status int, message, typ, code string) {
	switch f {
	case FlavourOllama:
		writeOllamaError(w, status, message, typ, code)
	case FlavourVLLM:
		writeVLLMError(w, status, message, typ, code, nil)
	default:
		if typ == "" {
			typ = errorTypeFor(status)
		}
		if code == "" {
			code = errorCodeFor(status)
		}
		writeError(w, status, message, typ, code)
	}
}

// vllmToolChoiceRefusal is the 400 vLLM answers a request whose
// tool_choice needs a tool parser on a server started without
// --enable-auto-tool-choice and --tool-call-parser, or "" when it
// serves it (vllm/renderers/online_renderer.py at 01063cd0,
// OnlineRenderer.render_chat, before the prompt is rendered: "auto"
// without --enable-auto-tool-choice gets the first message,
// "required" or a named function the second; None and "none" pass).
// The tool_choice is read as vLLM's ChatCompletionRequest reads it:
// left out of a request that offers tools it is "auto"
// (chat_completion/protocol.py at 002032ee, check_tool_usage: "if
// \"tool_choice\" not in data and data.get(\"tools\")"), an explicit
// null stays None, and without tools the default is "none".
func vllmToolChoiceRefusal(fields map[string]json.RawMessage, chat openai.ChatCompletionRequest) string {
	raw, ok := fields["tool_choice"]
	switch {
	case !ok && len(chat.Tools) > 0:
		raw = json.RawMessage(`"auto"`)
	case !ok, string(raw) == "null":
		return ""
	}
	var choice string
	if json.Unmarshal(raw, &choice) != nil {
		var named struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		_ = json.Unmarshal(raw, &named)
		return fmt.Sprintf(`tool_choice=function "%s" requires --tool-call-parser to be set`, named.Function.Name)
	}
	switch choice {
	case "none":
		return ""
	case "auto":
		return `"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`
	}
	return fmt.Sprintf(`tool_choice="%s" requires --tool-call-parser to be set`, choice)
}

// vllmError is a 400 vLLM answers with a param.
type vllmError struct {
	message, param string
}

// vllmContextRefusal is vLLM's 400 for a request that does not fit
// max_model_len, or nil when it fits, as its renderer checks it
// (vllm/renderers/params.py at 017638d7, TokenizeParams): the output
// requested is max_completion_tokens, else max_tokens, else 0
// (chat_completion/protocol.py at 002032ee, build_tok_params). An output
// over the window is refused in __post_init__ ("Please request fewer
// output tokens", param the field's name; worded as
// tests/renderers/test_params_validation.py at aef31ab0 asserts it once
// the missing space and the leaked attribute name were fixed); else a prompt over the window less the
// output in _token_len_check (param "input_tokens"), which reports the
// tokens the tokenizer read: it truncates at that limit plus one
// (get_encode_kwargs: max_length = max_input_tokens + 1).
func vllmContextRefusal(prompt int, chat openai.ChatCompletionRequest, window int) *vllmError {
	output, param := chat.MaxCompletionTokens, "max_completion_tokens"
	if output == 0 {
		output, param = chat.MaxTokens, "max_tokens"
	}
	if output > window {
		return &vllmError{param: param, message: fmt.Sprintf(
			"%s=%d cannot be greater than max_model_len=%d. Please request fewer output tokens.", param, output, window)}
	}
	maxInput := window - output
	if prompt <= maxInput {
		return nil
	}
	prompt = min(prompt, maxInput+1)
	return &vllmError{param: "input_tokens", message: fmt.Sprintf(
		"You passed %d input tokens and requested %d output tokens. "+
			"However, the model's context length is only %d tokens, resulting in a maximum input length of %d tokens. "+
			"Please reduce the length of the input prompt.", prompt, output, window, maxInput)}
}

// badToolArguments reports whether a message of the request carries a
// tool call whose arguments Ollama cannot decode into its argument map:
// FromCompletionToolCall json.Unmarshals each call's arguments string
// into an ordered map and fails with "invalid tool call arguments"
// (ollama v0.32.15 openai/openai.go:772-781), which ChatMiddleware
// answers with a 400 (middleware/openai.go:462-465, see
// writeOllamaMiddlewareError). JSON null decodes to an empty map and
// passes.
func badToolArguments(chat openai.ChatCompletionRequest) bool {
	for _, m := range chat.Messages {
		for _, tc := range m.ToolCalls {
			a := strings.TrimSpace(tc.Function.Arguments)
			if a == "null" {
				continue
			}
			var obj map[string]json.RawMessage
			if json.Unmarshal([]byte(a), &obj) != nil {
				return true
			}
		}
	}
	return false
}

// ollamaInvalidToolArguments is FromCompletionToolCall's error text.
const ollamaInvalidToolArguments = "invalid tool call arguments"

// writeOllamaMiddlewareError writes an error ChatMiddleware answers
// itself, before its ChatWriter is in place: gin's AbortWithStatusJSON
// renders openai.NewError with render.WriteJSON (gin v1.10.0, the
// version ollama v0.32.15's go.mod requires: render/json.go:66, Content-Type
// "application/json; charset=utf-8", json.Marshal, no trailing newline).
func writeOllamaMiddlewareError(w http.ResponseWriter, status int, message string) {
	typ := "api_error"
	if status == http.StatusBadRequest {
		typ = "invalid_request_error"
	}
	b, err := json.Marshal(errorEnvelope{Error: errorBody{Message: message, Type: typ}})
	if err != nil {
		panic(fmt.Errorf("llmtest: encoding error: %w", err))
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// messageReasoning returns the "reasoning" field of each message of the
// raw request, "" where there is none.
func messageReasoning(fields map[string]json.RawMessage) []string {
	var msgs []struct {
		Reasoning string `json:"reasoning"`
	}
	if json.Unmarshal(fields["messages"], &msgs) != nil {
		return nil
	}
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Reasoning
	}
	return out
}

// outputLimit is the number of tokens the flavour's server lets the
// answer hold, 0 for no limit. Ollama reads max_tokens alone, as
// num_predict (openai/openai.go:656-658; its ChatCompletionRequest at
// :105 has no max_completion_tokens, tool_choice or
// parallel_tool_calls, so they are dropped unread); vLLM reads
// max_completion_tokens, else max_tokens (chat_completion/serving.py at
// 006c49d4, the argument of get_max_tokens; protocol.py at 002032ee,
// build_tok_params). FlavourThinkTags reads them as vLLM does;
// FlavourOpenAI sets none, as before.
func outputLimit(f Flavour, chat openai.ChatCompletionRequest) int {
	switch f {
	case FlavourOllama:
		return chat.MaxTokens
	case FlavourVLLM, FlavourThinkTags:
		if chat.MaxCompletionTokens > 0 {
			return chat.MaxCompletionTokens
		}
		return chat.MaxTokens
	}
	return 0
}

// tokenPrefix returns the longest prefix of s holding at most n tokens
// as CountTokens counts them, and the tokens it holds. A prefix that
// stops short of s ends with its last token: the whitespace after it
// belongs to the next one, as in a BPE vocabulary.
func tokenPrefix(s string, n int) (string, int) {
	count := 0
	inWord := false
	end := 0
	for i, c := range s {
		starts := false
		switch {
		case unicode.IsLetter(c) || unicode.IsDigit(c):
			starts = !inWord
			inWord = true
		case unicode.IsSpace(c):
			inWord = false
		default:
			starts = true
			inWord = false
		}
		if starts {
			if count == n {
				return s[:end], count
			}
			count++
		}
		if !unicode.IsSpace(c) {
			end = i + utf8.RuneLen(c)
		}
	}
	return s, count
}

// limitOutput cuts an answer to limit tokens, spent in the order the
// model writes them: reasoning, content, then each tool call. A call cut
// short is lost (Ollama would hand the half-written call's raw text back
// as content, server/routes.go:2882-2884, in the model's own call format,
// which the scripted model does not have). It reports whether anything
// was cut.
func limitOutput(reasoning, content string, calls []ToolCall, limit int) (string, string, []ToolCall, bool) {
	if limit <= 0 {
		return reasoning, content, calls, false
	}
	r, used := tokenPrefix(reasoning, limit)
	if r != reasoning {
		return r, "", nil, true
	}
	c, n := tokenPrefix(content, limit-used)
	used += n
	if c != content {
		return r, c, nil, true
	}
	for i, tc := range calls {
		cost := CountTokens(tc.Name) + CountTokens(tc.Arguments)
		if used+cost > limit {
			return r, c, calls[:i], true
		}
		used += cost
	}
	return r, c, calls, false
}

// ollamaCallID is a tool call id as Ollama makes one: "call_" and 8
// characters from a-z0-9 (server/routes.go:2305 toolCallId), here
// counted from seq so runs repeat.
func ollamaCallID(seq int64) string {
	s := strconv.FormatInt(seq, 36)
	if len(s) < 8 {
		s = strings.Repeat("0", 8-len(s)) + s
	}
	return "call_" + s[len(s)-8:]
}

// ollamaArguments is a call's arguments as Ollama sends them: it decodes
// the model's call into an ordered map and json.Marshals it back
// (openai/openai.go:249 ToToolCalls), so compact, keys in order, HTML
// characters escaped. Arguments that are not JSON go out as scripted,
// which a real Ollama never does.
func ollamaArguments(args string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(args)) != nil {
		return args
	}
	var e bytes.Buffer
	json.HTMLEscape(&e, b.Bytes())
	return e.String()
}
