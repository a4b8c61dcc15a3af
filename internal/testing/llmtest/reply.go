package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"
)

// Reply is a scripted answer to a chat completion request. Build one with
// Text, JSON, ToolCalls, Func, Status, FailTimes, Delay, Hang or Drop; the
// zero Reply is not valid. A Reply is a handle: copies refer to the same
// reply, share its counters (see Calls) and, for FailTimes, its attempt count.
type Reply struct {
	r *reply
}

// ToolCall is one function call the scripted assistant asks for. When ID is
// empty the server generates "call_<n>", numbered per server from 1.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Option tunes how a Reply is delivered.
type Option func(*options)

type replyKind int

const (
	kindMessage replyKind = iota + 1
	kindStatus
	kindHang
	kindDrop
	kindFail
	kindDelay
	kindFunc
)

// reply is the shared state behind a Reply handle. Everything but the
// counters is immutable once the constructor returns.
type reply struct {
	kind replyKind

	// kindMessage.
	content   string
	isJSON    bool
	toolCalls []ToolCall

	// kindStatus and kindFail.
	status  int
	message string

	// kindFail: failN failures of status failCode, then next.
	failN int
	// kindDelay: delay, then next.
	delay time.Duration
	next  *reply

	// kindFunc.
	fn func(Request) Reply

	opts options

	calls    atomic.Int64
	attempts atomic.Int64
}

// options holds delivery settings. Fields are merged from the outermost
// wrapper (FailTimes, Delay, Func) to the innermost reply; see merge.
type options struct {
	chunkSize      int
	chunkDelay     time.Duration
	firstByteDelay time.Duration
	hasCut         bool
	cutAfter       int
	hasStall       bool
	stallAfter     int
	malformed      bool
	usage          *usage
	finishReason   string
	header         http.Header
	errType        string
	errCode        string
	reasoning      string
	// toolCallSilence and streamErr are ToolCallSilence's and
	// StreamError's.
	toolCallSilence time.Duration
	streamErr       *streamErr
}

// merge returns o with inner's settings applied on top: first-byte delays
// add up, headers are merged (inner wins per key) and every other setting of
// inner that is set replaces o's.
func (o options) merge(inner options) options {
	if inner.chunkSize > 0 {
		o.chunkSize = inner.chunkSize
	}
	if inner.chunkDelay > 0 {
		o.chunkDelay = inner.chunkDelay
	}
	o.firstByteDelay += inner.firstByteDelay
	if inner.hasCut {
		o.hasCut, o.cutAfter = true, inner.cutAfter
	}
	if inner.hasStall {
		o.hasStall, o.stallAfter = true, inner.stallAfter
	}
	o.malformed = o.malformed || inner.malformed
	if inner.usage != nil {
		o.usage = inner.usage
	}
	if inner.finishReason != "" {
		o.finishReason = inner.finishReason
	}
	if len(inner.header) > 0 {
		h := o.header.Clone()
		if h == nil {
			h = http.Header{}
		}
		for k, vs := range inner.header {
			h[k] = append([]string(nil), vs...)
		}
		o.header = h
	}
	if inner.errType != "" {
		o.errType = inner.errType
	}
	if inner.errCode != "" {
		o.errCode = inner.errCode
	}
	if inner.reasoning != "" {
		o.reasoning = inner.reasoning
	}
	if inner.toolCallSilence > 0 {
		o.toolCallSilence = inner.toolCallSilence
	}
	if inner.streamErr != nil {
		o.streamErr = inner.streamErr
	}
	return o
}

func newReply(kind replyKind, opts []Option) Reply {
	r := &reply{kind: kind}
	for _, o := range opts {
		o(&r.opts)
	}
	return Reply{r: r}
}

// Text returns a Reply in which the assistant answers s. A streaming request
// receives s one word per chunk (each chunk carrying the whitespace before its
// word) unless ChunkSize says otherwise; the finish_reason is "stop".
func Text(s string, opts ...Option) Reply {
	r := newReply(kindMessage, opts)
	r.r.content = s
	return r
}

// JSON returns a Reply whose content is the JSON encoding of v, as a model
// answers a request carrying response_format json_schema or json_object. It
// streams like Text, except that the whitespace-free encoding is split into
// chunks of 8 runes unless ChunkSize says otherwise. JSON panics if v cannot
// be encoded; to send pre-encoded or deliberately invalid JSON use Text.
func JSON(v any, opts ...Option) Reply {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Errorf("llmtest: JSON reply: %w", err))
	}
	r := newReply(kindMessage, opts)
	r.r.content = string(b)
	r.r.isJSON = true
	return r
}

// ToolCalls returns a Reply in which the assistant asks for calls, in order,
// with finish_reason "tool_calls". Streamed, each call starts with a delta
// carrying its index, id, type "function", name and empty arguments, followed
// by deltas carrying its arguments in pieces of 8 runes (or ChunkSize). Use
// WithText for text content before the calls and With for options.
func ToolCalls(calls ...ToolCall) Reply {
	r := newReply(kindMessage, nil)
	r.r.toolCalls = append([]ToolCall(nil), calls...)
	return r
}

// CallsUntil returns a Reply that asks for call until the request holds n
// tool results, then answers with answer(the number of results): a model
// that works through a task one tool call at a time.
func CallsUntil(n int, call ToolCall, answer func(results int) Reply) Reply {
	return Func(func(r Request) Reply {
		if got := len(r.ToolResults()); got >= n {
			return answer(got)
		}
		return ToolCalls(call)
	})
}

// Func returns a Reply computed per request by fn, for dynamic answers such
// as echoing the last user message. fn runs on the server's handler goroutine
// without any lock held and may call the Server's methods. A zero Reply from
// fn is answered with HTTP 500. The Reply fn returns is served once per
// call: to make a FailTimes counter persist, return the same Reply every time
// (or wrap the Func in FailTimes instead).
func Func(fn func(Request) Reply) Reply {
	if fn == nil {
		panic("llmtest: Func with nil function")
	}
	r := newReply(kindFunc, nil)
	r.r.fn = fn
	return r
}

// Status returns a Reply that fails with HTTP status code and an OpenAI error
// envelope {"error":{"message","type","param","code"}}. An empty message
// becomes the status text. The type is "rate_limit_error" for 429,
// "server_error" for 5xx and "invalid_request_error" otherwise; ErrorType and
// ErrorCode override the type and code, and Header adds response headers such
// as Retry-After.
func Status(code int, message string, opts ...Option) Reply {
	r := newReply(kindStatus, opts)
	r.r.status = code
	r.r.message = message
	return r
}

// FailTimes returns a Reply whose first n requests fail with HTTP status code
// (as Status does) and whose later requests get then. Queued, a failing
// attempt leaves the entry at the head of the queue; only the request served
// by then consumes it. Options given with With apply to the failures.
func FailTimes(n, code int, then Reply) Reply {
	mustValid(then, "FailTimes")
	r := newReply(kindFail, nil)
	r.r.failN = n
	r.r.status = code
	r.r.next = then.r
	return r
}

// Delay returns a Reply that waits d before answering with reply, as a slow
// model does; the wait ends early when the client gives up. It is equivalent
// to the FirstByteDelay option but wraps any Reply, including faults.
func Delay(d time.Duration, reply Reply) Reply {
	mustValid(reply, "Delay")
	r := newReply(kindDelay, nil)
	r.r.delay = d
	r.r.next = reply.r
	return r
}

// Hang returns a Reply that never answers: the handler waits until the client
// cancels the request or the server is closed.
func Hang() Reply {
	return newReply(kindHang, nil)
}

// Drop returns a Reply that closes the connection without sending a
// response, so the client sees a transport error such as EOF.
func Drop() Reply {
	return newReply(kindDrop, nil)
}

// With returns a new Reply like r with opts applied on top of r's own. The new
// Reply has its own counters; for FailTimes and Delay it wraps the same inner
// Reply. Options on a Delay or Func reply also apply to the reply it produces
// (where that reply does not set them itself); options on a FailTimes reply
// apply to its failures only.
func (r Reply) With(opts ...Option) Reply {
	mustValid(r, "With")
	c := r.clone()
	for _, o := range opts {
		o(&c.opts)
	}
	return Reply{r: c}
}

// WithText returns a new Reply like r whose assistant text content is s. On a
// ToolCalls reply the text is sent before the tool calls, as models do when
// they say "let me check" first. It panics on replies that carry no message.
func (r Reply) WithText(s string) Reply {
	mustValid(r, "WithText")
	if r.r.kind != kindMessage {
		panic("llmtest: WithText on a reply that is not Text, JSON or ToolCalls")
	}
	c := r.clone()
	c.content = s
	c.isJSON = false
	return Reply{r: c}
}

// Calls reports how many requests have reached r so far, including the
// failing attempts of a FailTimes reply and requests that gave up early.
func (r Reply) Calls() int {
	if r.r == nil {
		return 0
	}
	return int(r.r.calls.Load())
}

func (r Reply) clone() *reply {
	o := r.r
	c := &reply{
		kind:      o.kind,
		content:   o.content,
		isJSON:    o.isJSON,
		toolCalls: append([]ToolCall(nil), o.toolCalls...),
		status:    o.status,
		message:   o.message,
		failN:     o.failN,
		delay:     o.delay,
		next:      o.next,
		fn:        o.fn,
		opts:      o.opts,
	}
	c.opts.header = o.opts.header.Clone()
	return c
}

func mustValid(r Reply, what string) {
	if r.r == nil {
		panic("llmtest: " + what + " with a zero Reply")
	}
}

// ChunkSize makes a streamed reply send n runes per content chunk (and per
// tool-call arguments delta) instead of one word per chunk.
func ChunkSize(n int) Option {
	return func(o *options) { o.chunkSize = n }
}

// ChunkDelay makes a streamed reply wait d before each frame after the first.
func ChunkDelay(d time.Duration) Option {
	return func(o *options) { o.chunkDelay = d }
}

// FirstByteDelay makes a reply wait d before sending anything.
func FirstByteDelay(d time.Duration) Option {
	return func(o *options) { o.firstByteDelay += d }
}

// CutAfter makes a streamed reply end abruptly after n content chunks (text
// chunks and tool-call deltas; the initial role chunk does not count): the
// connection is closed with no finish_reason and no [DONE], so the client
// sees an unexpected EOF. A reply with fewer than n content chunks is cut
// before its finish chunk. A non-streaming reply is cut in the middle of its
// JSON body regardless of n.
func CutAfter(n int) Option {
	return func(o *options) { o.hasCut, o.cutAfter = true, n }
}

// StallAfter makes a streamed reply stop sending after n content chunks and
// keep the connection open until the client gives up, as a stuck model does
// (a reply with fewer than n content chunks stalls before its finish chunk).
// A non-streaming reply stalls in the middle of its JSON body regardless of n.
func StallAfter(n int) Option {
	return func(o *options) { o.hasStall, o.stallAfter = true, n }
}

// MalformedChunk makes a streamed reply send a data frame holding truncated
// JSON right after its first content chunk (or before the finish chunk when
// there is no content), then carry on normally. A non-streaming reply gets a
// truncated JSON body with status 200.
func MalformedChunk() Option {
	return func(o *options) { o.malformed = true }
}

// Usage overrides the token counts reported for a reply; total_tokens is
// their sum.
func Usage(prompt, completion int) Option {
	return func(o *options) { o.usage = &usage{Prompt: prompt, Completion: completion, Total: prompt + completion} }
}

// Reasoning makes the model think text before its answer. How the
// thinking reaches the client is the flavour's (SetFlavour):
// FlavourOpenAI streams it as delta.reasoning_content (DeepSeek's
// field); FlavourOllama and FlavourVLLM as delta.reasoning, and in
// message.reasoning when not streamed; FlavourThinkTags as
// "<think>\n" + text + "\n</think>\n\n" at the start of the content.
func Reasoning(text string) Option {
	return func(o *options) { o.reasoning = text }
}

// FinishReason overrides the finish_reason of a reply, for example "length"
// to simulate output truncated by max_tokens.
func FinishReason(reason string) Option {
	return func(o *options) { o.finishReason = reason }
}

// Header adds a response header, for example Retry-After on a 429.
func Header(key, value string) Option {
	return func(o *options) {
		if o.header == nil {
			o.header = http.Header{}
		}
		o.header.Add(key, value)
	}
}

// ErrorType overrides the "type" of an error envelope sent by Status or
// FailTimes.
func ErrorType(t string) Option {
	return func(o *options) { o.errType = t }
}

// ErrorCode overrides the "code" of an error envelope sent by Status or
// FailTimes.
func ErrorCode(code string) Option {
	return func(o *options) { o.errCode = code }
}

// action is what resolving a Reply for one request produced.
type action struct {
	// leaf is the reply to serve: kindMessage, kindStatus, kindHang, kindDrop
	// or kindFunc (still to be called). It is nil for a scripted failure.
	leaf *reply
	// status and message describe a scripted failure when leaf is nil.
	status  int
	message string
	opts    options
	// consume reports whether a queued entry that produced this action is
	// used up.
	consume bool
}

// resolve walks r's wrappers for one request, counting calls and FailTimes
// attempts, and returns what to serve. It does not call Func functions, so it
// can run under the server's lock.
func resolve(r *reply, acc options) action {
	for {
		r.calls.Add(1)
		switch r.kind {
		case kindFail:
			// FailTimes' own options apply to its failures only.
			if a := r.attempts.Add(1); a <= int64(r.failN) {
				return action{
					status:  r.status,
					message: fmt.Sprintf("llmtest: scripted failure %d of %d", a, r.failN),
					opts:    acc.merge(r.opts),
				}
			}
			r = r.next
		case kindDelay:
			acc = acc.merge(r.opts)
			acc.firstByteDelay += r.delay
			r = r.next
		default:
			return action{leaf: r, opts: acc.merge(r.opts), consume: true}
		}
	}
}
