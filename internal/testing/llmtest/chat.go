package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// defaultModel is reported when a request names no model.
const defaultModel = "llmtest"

// defaultPieceRunes is the chunk size for JSON content and tool-call
// arguments when ChunkSize is not set.
const defaultPieceRunes = 8

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	body, fields, ok := readJSONBody(w, r)
	if !ok {
		return
	}
	chat, err := decodeChat(fields)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), "invalid_request_error", nil)
		return
	}

	req := Request{
		Method:    r.Method,
		Path:      r.URL.Path,
		Header:    r.Header.Clone(),
		Body:      body,
		Chat:      chat,
		Reasoning: messageReasoning(fields),
	}
	s.mu.Lock()
	window, behaviour, flavour := s.window, s.behaviour, s.flavour
	s.mu.Unlock()
	f := applyWindow(&req, window, behaviour)
	var vllmRefusal *vllmError
	if flavour == FlavourVLLM && behaviour == BehaviourOpenAI && window > 0 {
		vllmRefusal = vllmContextRefusal(req.PromptTokens, chat, window)
		f.refusal = ""
		req.Cut = vllmRefusal != nil
	}
	if window > 0 {
		req.read = f.prompt
	}
	s.mu.Lock()
	firstUse := !slices.Contains(s.used, chat.Model)
	om := s.ollamaModelLocked(chat.Model)
	pulled := s.pulledLocked(chat.Model)
	noAutoTools := s.noAutoTools
	req.N = len(s.reqs) + 1
	s.reqs = append(s.reqs, req)
	if firstUse && (flavour != FlavourOllama || pulled) {
		s.used = append(s.used, chat.Model)
	}
	s.notifyLocked()
	s.mu.Unlock()

	if s.flavourRefuses(w, r, flavourCheck{flavour, chat, fields, pulled, firstUse, noAutoTools, om, vllmRefusal}) {
		return
	}
	if f.refusal != "" {
		refuse(w, f.refusal)
		return
	}
	// The script answers what the model read: after an Ollama cut, rules
	// and Func replies see only the messages it kept.
	seen := req
	seen.Chat = f.kept
	s.serveAction(w, r, seen, s.choose(seen), flavour)
}

// flavourCheck is what flavourRefuses reads of one chat request.
type flavourCheck struct {
	flavour     Flavour
	chat        openai.ChatCompletionRequest
	fields      map[string]json.RawMessage
	pulled      bool
	firstUse    bool
	noAutoTools bool
	om          OllamaModel
	vllm        *vllmError
}

// flavourRefuses answers a request the flavour's server refuses before it
// generates anything (or waits out a model's load) and says whether it
// answered.
func (s *Server) flavourRefuses(w http.ResponseWriter, r *http.Request, c flavourCheck) bool {
	switch c.flavour {
	case FlavourOllama:
		// In Ollama's order: ChatMiddleware converts the request
		// (FromChatRequest), ChatHandler looks the model up, then
		// schedules (loads) it, then renders the prompt.
		if badToolArguments(c.chat) {
			writeOllamaMiddlewareError(w, http.StatusBadRequest, ollamaInvalidToolArguments)
			return true
		}
		if !c.pulled {
			writeOllamaError(w, http.StatusNotFound, ollamaNotFound(c.chat.Model), "", nil)
			return true
		}
		if c.firstUse && c.om.LoadDelay > 0 && !s.wait(r.Context(), c.om.LoadDelay) {
			return true
		}
	case FlavourVLLM:
		if msg := vllmToolChoiceRefusal(c.fields, c.chat); c.noAutoTools && msg != "" {
			writeVLLMError(w, http.StatusBadRequest, msg, "", nil, nil)
			return true
		}
		if c.vllm != nil {
			writeVLLMError(w, http.StatusBadRequest, c.vllm.message, "", nil, &c.vllm.param)
			return true
		}
	}
	return false
}

// decodeChat decodes a chat completion request. It accepts "stop" as a
// string, as the API does, and rejects requests without a model or messages.
func decodeChat(fields map[string]json.RawMessage) (openai.ChatCompletionRequest, error) {
	var req openai.ChatCompletionRequest
	if stop, ok := fields["stop"]; ok {
		var one string
		if json.Unmarshal(stop, &one) == nil {
			fields["stop"], _ = json.Marshal([]string{one})
		}
	}
	norm, err := json.Marshal(fields)
	if err != nil {
		return req, fmt.Errorf("llmtest: re-encoding chat request: %w", err)
	}
	if err := json.Unmarshal(norm, &req); err != nil {
		return req, fmt.Errorf("llmtest: cannot decode chat completion request: %w", err)
	}
	if req.Model == "" {
		return req, fmt.Errorf("llmtest: chat completion request without model")
	}
	if len(req.Messages) == 0 {
		return req, fmt.Errorf("llmtest: chat completion request without messages")
	}
	return req, nil
}

// choose picks and resolves the reply for req: the first matching rule, else
// the head of the queue, else the default.
func (s *Server) choose(req Request) action {
	s.mu.Lock()
	rules := s.rules[:len(s.rules):len(s.rules)]
	s.mu.Unlock()

	var act action
	matched := false
	for _, rl := range rules {
		if rl.match(req) {
			act, matched = resolve(rl.reply, options{}), true
			break
		}
	}
	if !matched {
		s.mu.Lock()
		switch {
		case len(s.queue) > 0:
			act = resolve(s.queue[0], options{})
			if act.consume {
				s.queue[0] = nil
				s.queue = s.queue[1:]
				s.notifyLocked()
			}
		case s.def != nil:
			act = resolve(s.def, options{})
		default:
			act = action{
				status:  http.StatusInternalServerError,
				message: fmt.Sprintf("llmtest: no scripted reply for request %d", req.N),
			}
			s.logf("llmtest: no scripted reply for request %d (last user message %q)", req.N, req.LastUserMessage())
		}
		s.mu.Unlock()
	}

	for act.leaf != nil && act.leaf.kind == kindFunc {
		next := act.leaf.fn(req)
		if next.r == nil {
			return action{
				status:  http.StatusInternalServerError,
				message: fmt.Sprintf("llmtest: Func returned a zero Reply for request %d", req.N),
			}
		}
		consume := act.consume
		act = resolve(next.r, act.opts)
		act.consume = consume
	}
	return act
}

func (s *Server) serveAction(w http.ResponseWriter, r *http.Request, req Request, act action, flavour Flavour) {
	opts := act.opts
	for k, vs := range opts.header {
		w.Header()[k] = append([]string(nil), vs...)
	}
	ctx := r.Context()
	if !s.wait(ctx, opts.firstByteDelay) {
		return
	}
	if act.leaf == nil || act.leaf.kind == kindStatus {
		status, message := act.status, act.message
		if act.leaf != nil {
			status, message = act.leaf.status, act.leaf.message
		}
		if message == "" {
			message = http.StatusText(status)
		}
		writeFlavourError(w, flavour, status, message, opts.errType, opts.errCode)
		return
	}
	switch act.leaf.kind {
	case kindHang:
		s.waitGone(ctx)
	case kindDrop:
		abort()
	case kindMessage:
		m := s.buildMessage(req, act.leaf, opts, flavour)
		switch {
		case opts.streamErr != nil && (!req.Chat.Stream || opts.streamErr.after <= 0):
			// Failed before anything was written: the error envelope
			// with HTTP 500 (see StreamError).
			writeFlavourError(w, flavour, http.StatusInternalServerError, opts.streamErr.msg, "", "")
		case req.Chat.Stream:
			s.stream(ctx, w, req, m, opts)
		case flavour == FlavourOllama && !opts.malformed && !opts.hasCut && !opts.hasStall:
			completeOllama(w, m)
		default:
			s.complete(ctx, w, m, opts)
		}
	}
}

// namedCalls are a reply's tool calls as the flavour's server sends them:
// each with an id (Ollama's own form of it) and, from Ollama, arguments
// as it re-encodes them.
func (s *Server) namedCalls(in []ToolCall, flavour Flavour) []ToolCall {
	calls := make([]ToolCall, 0, len(in))
	for _, tc := range in {
		if tc.ID == "" {
			if flavour == FlavourOllama {
				tc.ID = ollamaCallID(s.callSeq.Add(1))
			} else {
				tc.ID = fmt.Sprintf("call_%d", s.callSeq.Add(1))
			}
		}
		if flavour == FlavourOllama {
			tc.Arguments = ollamaArguments(tc.Arguments)
		}
		calls = append(calls, tc)
	}
	return calls
}

// message is a resolved assistant message ready to be sent.
type message struct {
	id           string
	model        string
	created      int64
	content      string
	contentParts []string
	// flavour is the dialect the message is written in.
	flavour Flavour
	// reasoning is the thinking before the answer; reasoningParts its
	// streamed pieces, sent before the content in the flavour's field.
	reasoning      string
	reasoningParts []string
	toolCalls      []ToolCall
	argParts       [][]string
	finishReason   string
	usage          usage
}

type usage struct {
	Prompt     int `json:"prompt_tokens"`
	Completion int `json:"completion_tokens"`
	Total      int `json:"total_tokens"`
	// Details is vLLM's completion_tokens_details, set when the answer
	// thought (vllm/entrypoints/openai/chat_completion/serving.py at
	// 006c49d4: reasoning_tokens are reported by a server with a
	// reasoning parser).
	Details *completionDetails `json:"completion_tokens_details,omitempty"`
}

type completionDetails struct {
	Reasoning int `json:"reasoning_tokens"`
}

func (s *Server) buildMessage(req Request, rp *reply, opts options, flavour Flavour) message {
	m := message{
		id:        fmt.Sprintf("chatcmpl-llmtest-%d", req.N),
		model:     req.Chat.Model,
		created:   s.started.Unix(),
		content:   rp.content,
		flavour:   flavour,
		reasoning: opts.reasoning,
	}
	if flavour == FlavourOllama {
		// middleware/openai.go:478: "chatcmpl-" and rand.Intn(999).
		m.id = fmt.Sprintf("chatcmpl-%d", req.N%999)
	}
	if m.model == "" {
		m.model = defaultModel
	}
	if flavour == FlavourThinkTags && m.reasoning != "" {
		m.content = thinkOpen + m.reasoning + thinkClose + m.content
		m.reasoning = ""
	}
	var calls []ToolCall
	var cut bool
	m.reasoning, m.content, calls, cut = limitOutput(m.reasoning, m.content, s.namedCalls(rp.toolCalls, flavour), outputLimit(flavour, req.Chat))
	switch {
	case opts.chunkSize > 0:
		m.contentParts = splitRunes(m.content, opts.chunkSize)
	case rp.isJSON && !strings.HasPrefix(m.content, thinkOpen):
		m.contentParts = splitRunes(m.content, defaultPieceRunes)
	default:
		m.contentParts = splitWords(m.content)
	}
	m.reasoningParts = splitWords(m.reasoning)
	argSize := opts.chunkSize
	if argSize <= 0 {
		argSize = defaultPieceRunes
	}
	completion := CountTokens(m.content)
	if flavour != FlavourOpenAI {
		// The reasoning is output the model generated: Ollama's
		// eval_count and vLLM's completion_tokens count it.
		completion += CountTokens(m.reasoning)
	}
	for _, tc := range calls {
		m.toolCalls = append(m.toolCalls, tc)
		m.argParts = append(m.argParts, splitRunes(tc.Arguments, argSize))
		completion += CountTokens(tc.Name) + CountTokens(tc.Arguments)
	}
	m.finishReason = string(openai.FinishReasonStop)
	if len(m.toolCalls) > 0 {
		m.finishReason = string(openai.FinishReasonToolCalls)
	}
	if cut {
		m.finishReason = string(openai.FinishReasonLength)
	}
	if opts.finishReason != "" {
		m.finishReason = opts.finishReason
	}
	if opts.usage != nil {
		m.usage = *opts.usage
	} else {
		p := req.read
		if p == 0 {
			p = promptTokens(req.Chat)
		}
		m.usage = usage{Prompt: p, Completion: completion, Total: p + completion}
		if flavour == FlavourVLLM && m.reasoning != "" {
			m.usage.Details = &completionDetails{Reasoning: CountTokens(m.reasoning)}
		}
	}
	return m
}

func (s *Server) complete(ctx context.Context, w http.ResponseWriter, m message, opts options) {
	msg := responseMessage{Role: openai.ChatMessageRoleAssistant}
	if m.flavour == FlavourVLLM {
		msg.Reasoning = m.reasoning
	}
	if m.content != "" || len(m.toolCalls) == 0 {
		msg.Content = &m.content
	}
	for _, tc := range m.toolCalls {
		msg.ToolCalls = append(msg.ToolCalls, responseToolCall{
			ID:       tc.ID,
			Type:     string(openai.ToolTypeFunction),
			Function: responseFunction{Name: tc.Name, Arguments: tc.Arguments},
		})
	}
	body, err := json.Marshal(completion{
		ID:                m.id,
		Object:            "chat.completion",
		Created:           m.created,
		Model:             m.model,
		SystemFingerprint: fingerprint,
		Choices:           []completionChoice{{Message: msg, FinishReason: m.finishReason}},
		Usage:             m.usage,
	})
	if err != nil {
		panic(fmt.Errorf("llmtest: encoding completion: %w", err))
	}

	w.Header().Set("Content-Type", "application/json")
	half := body[:len(body)/2]
	switch {
	case opts.malformed:
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(half)
	case opts.hasCut, opts.hasStall:
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(half)
		_ = http.NewResponseController(w).Flush()
		if opts.hasStall {
			s.waitGone(ctx)
			return
		}
		abort()
	default:
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	}
}

type frameKind int

const (
	frameRole frameKind = iota
	frameContent
	frameMalformed
	frameFinish
	frameUsage
)

type frame struct {
	kind frameKind
	data []byte
	// toolStart marks the first frame of a tool call, which
	// ToolCallSilence delays.
	toolStart bool
}

// frames builds the data frames of a streamed reply, without [DONE].
func (m message) frames(includeUsage, malformed bool) []frame {
	var usageField any
	if includeUsage {
		usageField = json.RawMessage("null")
	}
	mk := func(kind frameKind, choices []chunkChoice, u any) frame {
		b, err := json.Marshal(chunk{
			ID: m.id, Object: "chat.completion.chunk", Created: m.created, Model: m.model,
			SystemFingerprint: fingerprint, Choices: choices, Usage: u,
		})
		if err != nil {
			panic(fmt.Errorf("llmtest: encoding chunk: %w", err))
		}
		return frame{kind: kind, data: b}
	}
	one := func(kind frameKind, d delta) frame {
		return mk(kind, []chunkChoice{{Delta: d}}, usageField)
	}
	broken := frame{kind: frameMalformed, data: []byte(fmt.Sprintf(
		`{"id":%q,"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"`, m.id))}

	empty := ""
	fs := []frame{one(frameRole, delta{Role: openai.ChatMessageRoleAssistant, Content: &empty})}
	for _, p := range m.reasoningParts {
		if m.flavour == FlavourVLLM {
			fs = append(fs, one(frameContent, delta{Reasoning: p}))
		} else {
			fs = append(fs, one(frameContent, delta{ReasoningContent: p}))
		}
	}
	for _, p := range m.contentParts {
		fs = append(fs, one(frameContent, delta{Content: &p}))
	}
	for i, tc := range m.toolCalls {
		start := one(frameContent, delta{ToolCalls: []deltaToolCall{{
			Index: i, ID: tc.ID, Type: string(openai.ToolTypeFunction),
			Function: deltaFunction{Name: tc.Name},
		}}})
		start.toolStart = true
		fs = append(fs, start)
		for _, p := range m.argParts[i] {
			fs = append(fs, one(frameContent, delta{ToolCalls: []deltaToolCall{{
				Index: i, Function: deltaFunction{Arguments: p},
			}}}))
		}
	}
	if malformed {
		at := len(fs) // before the finish frame when there is no content
		if len(fs) > 1 {
			at = 2 // right after the first content frame
		}
		fs = append(fs[:at], append([]frame{broken}, fs[at:]...)...)
	}
	reason := m.finishReason
	fs = append(fs, mk(frameFinish, []chunkChoice{{FinishReason: &reason}}, usageField))
	if includeUsage {
		u := m.usage
		fs = append(fs, mk(frameUsage, []chunkChoice{}, &u))
	}
	return fs
}

func (s *Server) stream(ctx context.Context, w http.ResponseWriter, req Request, m message, opts options) {
	includeUsage := req.Chat.StreamOptions != nil && req.Chat.StreamOptions.IncludeUsage
	var fs []frame
	if m.flavour == FlavourOllama {
		fs = m.ollamaFrames(includeUsage)
		if opts.malformed {
			broken := frame{kind: frameMalformed, data: []byte(fmt.Sprintf(
				`{"id":%q,"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"`, m.id))}
			at := min(1, len(fs)-1)
			fs = append(fs[:at], append([]frame{broken}, fs[at:]...)...)
		}
	} else {
		fs = m.frames(includeUsage, opts.malformed)
	}

	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return
	}

	var buf bytes.Buffer
	send := func(data []byte) bool {
		buf.Reset()
		buf.WriteString("data: ")
		buf.Write(data)
		buf.WriteString("\n\n")
		if _, err := w.Write(buf.Bytes()); err != nil {
			return false
		}
		return rc.Flush() == nil
	}

	contentSent := 0
	for i, f := range fs {
		if e := opts.streamErr; e != nil && (i >= e.after || f.kind == frameFinish) {
			s.sendStreamError(m, e, send)
			return
		}
		if f.kind != frameRole && f.kind != frameMalformed {
			// A reply with fewer than n content chunks is cut (or stalls)
			// before its finish chunk: the stream never completes.
			last := f.kind == frameFinish
			if opts.hasCut && (last || contentSent >= opts.cutAfter) {
				abort()
			}
			if opts.hasStall && (last || contentSent >= opts.stallAfter) {
				s.waitGone(ctx)
				return
			}
		}
		if i > 0 && !s.wait(ctx, opts.chunkDelay) {
			return
		}
		if f.toolStart && !s.wait(ctx, opts.toolCallSilence) {
			return
		}
		if !send(f.data) {
			return
		}
		if f.kind == frameContent {
			contentSent++
		}
	}
	if !s.wait(ctx, opts.chunkDelay) {
		return
	}
	send([]byte("[DONE]"))
}

// sendStreamError sends the flavour's mid-stream failure (see
// StreamError); the stream ends after it.
func (s *Server) sendStreamError(m message, e *streamErr, send func([]byte) bool) {
	if m.flavour == FlavourOllama {
		send(m.ollamaErrorFrame())
		return
	}
	var b []byte
	var err error
	if m.flavour == FlavourVLLM {
		b, err = json.Marshal(errorEnvelope{Error: errorBody{Message: e.msg,
			Type: vllmErrorType(http.StatusInternalServerError), Code: http.StatusInternalServerError}})
	} else {
		b, err = json.Marshal(errorEnvelope{Error: errorBody{Message: e.msg,
			Type: errorTypeFor(http.StatusInternalServerError), Code: errorCodeFor(http.StatusInternalServerError)}})
	}
	if err != nil {
		panic(fmt.Errorf("llmtest: encoding error: %w", err))
	}
	if send(b) {
		send([]byte("[DONE]"))
	}
}
