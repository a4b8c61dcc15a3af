// Package llmtest provides a scripted, OpenAI-compatible HTTP server that
// stands in for the LLM in Longhaul's tests.
//
// The LLM is the only thing Longhaul's test suite fakes: everything else (the
// engine, the durable workflow runtime, the HTTP API) runs for real. Because
// every other test depends on this fake, it speaks the OpenAI wire format as
// faithfully as practical (server-sent events framed exactly like OpenAI's
// chat.completion.chunk stream, OpenAI error envelopes, tool-call deltas,
// usage chunks) and lets each test script the answers and the faults it
// needs, deterministically and without sleeps.
//
// # Starting a server
//
// New starts a server on a free loopback port and closes it when the test
// ends; Start does the same for non-test code (benchmarks, commands) that
// calls Close itself. Give URL (which ends in /v1) to any OpenAI client:
//
//	srv := llmtest.New(t)
//	cfg := openai.DefaultConfig("sk-test")
//	cfg.BaseURL = srv.URL()
//	client := openai.NewClientWithConfig(cfg)
//
// ClientConfig returns exactly that configuration.
//
// # Scripting chat replies
//
// Each POST /v1/chat/completions request is answered by the first source
// that applies:
//
//  1. Rules added with On, in the order they were added. A rule whose
//     matcher accepts the request answers it and is never consumed, so
//     side-channel calls (an Open WebUI "### Task:" title request, a
//     classification call carrying response_format) can be routed away from
//     the main script.
//  2. The FIFO queue filled by Enqueue. Each request consumes one entry,
//     except that the failing attempts of a FailTimes entry leave it at the
//     head of the queue.
//  3. The reply set with SetDefault. Without one, the server answers HTTP 500
//     with an OpenAI error envelope whose message is
//     "llmtest: no scripted reply for request N", so a test that under-scripts
//     fails loudly.
//
// A Reply is built by one of the constructors and tuned with Options:
//
//	Text(s, opts...)            assistant text; streamed one word per chunk
//	JSON(v, opts...)            structured output: the JSON encoding of v
//	ToolCalls(calls...)         one or more tool calls (WithText adds leading text)
//	Func(fn)                    computes the reply from the Request
//	Status(code, msg, opts...)  an OpenAI error envelope with that HTTP status
//	FailTimes(n, code, then)    n failures, then the reply then
//	Delay(d, reply)             reply, after d
//	Hang()                      never answers; returns when the client gives up
//	Drop()                      closes the connection without a response
//
// Options: ChunkSize, ChunkDelay, FirstByteDelay, CutAfter, StallAfter,
// MalformedChunk, Usage, FinishReason, Header, ErrorType, ErrorCode,
// Reasoning, ToolCallSilence and StreamError.
// Reply.With applies options to an existing reply, and Reply.Calls reports how
// many requests reached it.
//
// Streaming requests (stream: true) get the same frames OpenAI sends: a first
// chunk whose delta carries role "assistant", content chunks (or tool-call
// deltas: index, id, type and name first, then the arguments in pieces), a
// chunk with an empty delta and the finish_reason, a usage chunk with empty
// choices when stream_options.include_usage is set, and finally
// "data: [DONE]". Non-streaming requests get a chat.completion object. Usage
// is computed deterministically with CountTokens unless overridden with Usage.
//
// Every wait inside the server (delays, Hang, StallAfter) ends as soon as the
// client's request context is cancelled or the server is closed, so handler
// goroutines never leak and Close never hangs.
//
// # Observing requests
//
// Requests returns every chat request received, in order, with its method,
// path, headers, raw body and decoded openai.ChatCompletionRequest.
// WaitRequests blocks until a number of requests has arrived and WaitIdle until
// no request is being served, so tests synchronise on events rather than
// sleeps. Pending reports how many queued replies are left. Matchers such as
// LastUserContains, AnyMessageContains, HasResponseFormat and HasTools help
// writing rules.
//
// # Windows
//
// By default the scripted model reads prompts of any length. SetWindow
// gives it a window in tokens and one of two behaviours read from the
// real servers' source: BehaviourOllama drops the oldest non-system
// messages silently until the rest fits and answers as usual
// (Ollama's chatPrompt), BehaviourOpenAI answers 400
// context_length_exceeded, counting max_tokens / max_completion_tokens
// as part of the request. Prompts are counted by PromptTokens: Llama
// 3.1's chat template as Ollama renders it, tokenized with cl100k_base
// (Llama 3's vocabulary holds cl100k's). Every recorded Request carries
// its PromptTokens, whether the model Cut it, and how many messages it
// Dropped; CutRequests lists the cut ones, so a test asserts that
// Longhaul never sent a request the model had to cut. With a window, the
// usage of an answer counts the prompt the model read, and the native
// endpoints below report the window.
//
// # Other endpoints
//
// POST /v1/embeddings returns
// deterministic unit vectors (see Embed; dimension 64 unless changed with
// SetEmbeddingDimensions or the request's dimensions field; SetEmbedding
// fixes a text's vector) for string,
// []string and token-array inputs, in float or base64 encoding; these
// requests are recorded separately and returned by EmbeddingRequests.
//
// SetFlavour adds the native endpoints a client asks for a model's window:
// FlavourOllama serves GET /api/ps (the models a chat request has named,
// with the window as context_length) and POST /api/show (the window as a
// Modelfile num_ctx, model_info's llama.context_length 131072,
// capabilities completion and tools), shaped as Ollama's; SetOllamaModel
// says otherwise for one model, and OllamaModel.Thinking adds "thinking"
// to its capabilities. FlavourVLLM makes
// GET /v1/models list vLLM's model cards with max_model_len.
//
// # Dialects
//
// SetFlavour also picks the dialect chat completions are answered in,
// each behaviour read from the server's source and cited where it is
// built (dialect.go):
//
//   - FlavourOpenAI, the default, is the wire format described above;
//     Reasoning streams as delta.reasoning_content.
//   - FlavourOllama speaks Ollama v0.32.15's OpenAI route: chunks with
//     system_fingerprint "fp_ollama", the role in the first content
//     chunk, Reasoning as delta.reasoning chunks of their own (content
//     ""), message.reasoning when whole; each tool call whole in one
//     chunk with an id "call_" + 8 characters; Ollama's error envelope
//     (type "invalid_request_error", "not_found_error" or "api_error",
//     code null). ToolCallSilence holds the stream silent before each
//     call, OllamaModel.LoadDelay holds the first request for a model
//     before any header, SetPulled limits the models (GET /api/tags
//     lists them; others get the 404 "model 'x' not found"), and
//     StreamError fails the stream the way Ollama does (an empty chunk,
//     then the end, its message lost). A request whose history holds a
//     tool call with arguments that are not a JSON object gets the 400
//     "invalid tool call arguments". max_tokens limits the answer,
//     thinking included (finish_reason "length");
//     max_completion_tokens, tool_choice and parallel_tool_calls are
//     ignored. Request.Reasoning records the reasoning sent back with
//     assistant messages.
//   - FlavourVLLM: Reasoning as delta.reasoning / message.reasoning and
//     usage.completion_tokens_details.reasoning_tokens; errors with a
//     numeric code and types such as "BadRequestError"; with
//     SetWindow(…, BehaviourOpenAI) vLLM's own context 400;
//     SetAutoToolChoice(false) refuses tool_choice "auto" as vLLM does
//     without --enable-auto-tool-choice; max_completion_tokens (else
//     max_tokens) limits the answer.
//   - FlavourThinkTags, a server with no reasoning parser: Reasoning
//     arrives as "<think>\n…\n</think>\n\n" at the start of the content.
//
// Requests with invalid JSON get a 400 envelope, unknown paths a 404 and
// wrong methods a 405. After RequireKey, requests without the matching
// "Authorization: Bearer" header get a 401 and are not recorded.
//
// Only one choice is ever produced (the request's n is ignored).
package llmtest
