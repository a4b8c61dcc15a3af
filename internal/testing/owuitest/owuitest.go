// Package owuitest is a test double of Open WebUI as the client of an
// OpenAI connection: it builds each chat completion request exactly as the
// pinned Open WebUI sends it to a connection (header names and values, the
// signed user token, message and chat ids, the body after Open WebUI's
// payload conversion, a past answer's reasoning left out), so Longhaul's
// tests meet Open WebUI as it really is instead of headers they made up.
//
// It follows Open WebUI v0.11.0 (the docker-compose.yml pin), read at its
// tag, commit f9590b801 (CHANGELOG "## [0.11.0] - 2026-07-27"); every
// file:line below is of that commit, under backend/open_webui unless it
// says otherwise.
//
// What a connection receives (routers/openai.py:156-219,
// get_headers_and_cookies, called by generate_chat_completion at :1282):
//
//   - Content-Type: application/json, and Authorization: Bearer <key>
//     when the connection has a key.
//   - With ENABLE_FORWARD_USER_INFO_HEADERS (env.py:927, default off): the
//     user (utils/headers.py:37-62), as one HS256 token in
//     X-OpenWebUI-User-Jwt when FORWARD_USER_INFO_HEADER_JWT_SECRET is set
//     (claims sub, email, name, role, iss "open-webui", iat, exp = iat +
//     FORWARD_USER_INFO_HEADER_JWT_EXPIRES_SECONDS, default 300;
//     utils/headers.py:23-34, env.py:936-945), else as the four
//     X-OpenWebUI-User-Id/-Email/-Name/-Role headers (the name
//     percent-encoded, spaces kept); and X-OpenWebUI-Chat-Id when the
//     request has a chat (openai.py:177-180).
//   - Never X-OpenWebUI-Message-Id by itself: Open WebUI sends
//     FORWARD_SESSION_INFO_HEADER_MESSAGE_ID to tool servers only. A
//     connection gets it only from its own custom headers
//     (OPENAI_API_CONFIGS[i].headers, read from the environment,
//     config.py:339-349), templated per request and applied last
//     (openai.py:215-217, utils/headers.py:87-141): {{MESSAGE_ID}} is the
//     assistant message being written, empty for background tasks. New in
//     v0.11.0: {{USER_GROUPS}} and {{USER_GROUP_IDS}}, the user's group
//     names (each trimmed) and ids joined with "," (utils/headers.py:
//     128-129), so a connection header can carry the groups.
//
// The body (Open WebUI pops its own fields before the call:
// utils/middleware.py:2248-2385, metadata at openai.py:1207): model,
// messages, stream, stream_options {include_usage: true} only for a
// streamed request to a model whose "usage" capability is ticked
// (src/lib/components/chat/Chat.svelte:3185-3191; openai.py:1328-1330
// drops it from any request that is not streamed), and, in Native
// function calling, tools: Open WebUI's own built-in tools and the chat's
// selected tools (utils/middleware.py:2643-2648, 2862-2913), which it runs
// itself when the model calls them, then asks again with the results.
// Images arrive as image_url parts with data URLs
// (utils/middleware.py:2320-2342); an attached document arrives as text:
// the RAG template prepended to the question (utils/middleware.py:
// 807-870, config.py:1052-1078). Open WebUI v0.11.0 sets no cache_control
// on an OpenAI connection's messages.
//
// The history of a saved chat is read from Open WebUI's database, not from
// the browser (utils/middleware.py:2295-2342): an assistant message is
// rebuilt from its stored output items (utils/middleware.py:2076-2105,
// utils/misc.py:257-472): the text it showed, the calls of Open WebUI's
// tools with their results, and its reasoning only for a model whose
// provider Open WebUI knows to read it back — "ollama" as <think> tags in
// the content, "llama.cpp" as reasoning_content (utils/middleware.py:
// 2059-2073, utils/misc.py:417-444). Longhaul's models name no provider
// (its /v1/models entries have none; routers/openai.py:684), so a past
// answer's reasoning never goes back to Longhaul.
//
// How Open WebUI reads an answer (utils/middleware.py): a streamed
// delta's reasoning_content, reasoning or thinking is the answer's
// reasoning, shown as a collapsible "Thought for N seconds" block above the
// text (4550-4554, 4571-4620; a whole answer's message.reasoning_content or
// reasoning at 3639); a chunk with an "event" is passed to the page as is
// (4270-4271: {"type": "status", "data": {"description", "done"}} is a
// status line); content is markdown, where a <details type="tool_calls">
// block is a tool card (src/lib/components/chat/Messages/Markdown/
// MarkdownTokens.svelte:58, 449).
//
// Background tasks (title, tags, follow-ups; routers/tasks.py:110-330,
// started from utils/middleware.py:3200-3260 after the answer) are one
// non-streamed user message holding a "### Task:" prompt and the chat's
// last messages, their <details> blocks and images stripped, with
// max_tokens 1000 (tasks.py:157-170, renamed from max_completion_tokens
// for a non-OpenAI URL at openai.py:1263-1273).
package owuitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

// Version is the Open WebUI release the double follows.
const Version = "v0.11.0"

// Open WebUI's default header names (env.py:929-939).
const (
	HeaderUserName  = "X-OpenWebUI-User-Name"
	HeaderUserID    = "X-OpenWebUI-User-Id"
	HeaderUserEmail = "X-OpenWebUI-User-Email"
	HeaderUserRole  = "X-OpenWebUI-User-Role"
	HeaderUserJWT   = "X-OpenWebUI-User-Jwt"
	HeaderChatID    = "X-OpenWebUI-Chat-Id"
	HeaderMessageID = "X-OpenWebUI-Message-Id"
)

// DefaultJWTExpiry is FORWARD_USER_INFO_HEADER_JWT_EXPIRES_SECONDS's
// default (env.py:940-945).
const DefaultJWTExpiry = 300 * time.Second

// ForwardMessageID is the connection's custom header that hands Longhaul
// the message id: OPENAI_API_CONFIGS {"0": {"headers": …}} in the compose
// file.
func ForwardMessageID() map[string]string {
	return map[string]string{HeaderMessageID: "{{MESSAGE_ID}}"}
}

// User is an Open WebUI user, as its user model has it, with the groups
// it is a member of.
type User struct {
	ID, Email, Name, Role string
	Groups                []Group
}

// Group is an Open WebUI user group.
type Group struct {
	ID, Name string
}

// Tool is a function tool Open WebUI offers the model in Native mode.
type Tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters"`
}

// BuiltinTime is one of the built-in tools Open WebUI v0.11.0 offers every
// UI chat by default (utils/tools.py:520-578 get_builtin_tools: the "time"
// category, get_current_timestamp and calculate_timestamp of
// tools/builtin.py:149, 185).
var BuiltinTime = []Tool{
	{Name: "get_current_timestamp", Description: "Get the current Unix timestamp in seconds.", Parameters: map[string]any{"type": "object", "properties": map[string]any{}}},
	{Name: "calculate_timestamp", Description: "Get the current Unix timestamp, optionally adjusted by days, weeks, months, or years.",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"days_ago": map[string]any{"type": "integer"}}}},
}

// Connection is Open WebUI's side of one OpenAI connection: the
// connection's settings and the environment that shapes its requests.
type Connection struct {
	// BaseURL is the connection's URL, ending in /v1.
	BaseURL string
	// Key is the connection's API key; empty sends no Authorization.
	Key string
	// ForwardUserInfo is ENABLE_FORWARD_USER_INFO_HEADERS.
	ForwardUserInfo bool
	// JWTSecret is FORWARD_USER_INFO_HEADER_JWT_SECRET: set, the user goes
	// as one signed token.
	JWTSecret string
	// JWTExpiry is FORWARD_USER_INFO_HEADER_JWT_EXPIRES_SECONDS; zero is
	// DefaultJWTExpiry.
	JWTExpiry time.Duration
	// Headers are the connection's custom headers, with Open WebUI's
	// {{…}} placeholders (see ForwardMessageID).
	Headers map[string]string
	// Usage is the model's "usage" capability: streamed requests ask for
	// stream_options.include_usage.
	Usage bool
	// Provider is the "provider" the connection's model list names for the
	// model; it decides how a past answer's reasoning goes back
	// (utils/middleware.py:2059-2073): "" (Longhaul's models: none) leaves
	// it out, ProviderOllama puts it in the content as <think> tags,
	// ProviderLlamaCpp sends it as reasoning_content.
	Provider string
	// Tools are what Native mode offers the model (BuiltinTime, the
	// chat's tools); none means a model whose built-in tools are off.
	Tools []Tool
	// Now is the clock tokens are minted with; nil is time.Now.
	Now func() time.Time
	// HTTP sends the requests; nil is http.DefaultClient.
	HTTP *http.Client
}

// The providers whose past reasoning Open WebUI sends back.
const (
	ProviderOllama   = "ollama"
	ProviderLlamaCpp = "llama.cpp"
)

// Message is one message of a chat's current branch, as Open WebUI keeps it.
type Message struct {
	ID         string
	Role       string
	Content    string
	Images     []string // data URLs of the images the user attached
	ToolCalls  []ToolCall
	ToolCallID string
	// Reasoning is an answer's reasoning, kept as its own output item.
	Reasoning string
}

// ToolCall is a tool call of an assistant message.
type ToolCall struct {
	ID, Name, Arguments string
}

// Chat is one user's Open WebUI chat: its id and the current branch of its
// message tree.
type Chat struct {
	conn  *Connection
	ID    string
	User  User
	Model string
	// Stream is the model's stream_response setting (on by default).
	Stream bool

	mu   sync.Mutex
	msgs []Message
	// answering is the id of the assistant message being written.
	answering string
}

// NewChat starts a chat of user with model.
func (c *Connection) NewChat(user User, model string) *Chat {
	return &Chat{conn: c, ID: uuid.NewString(), User: user, Model: model, Stream: true}
}

// Request is one request exactly as Open WebUI sends it; Send it as often
// as a test likes (a network retry sends the same request again).
type Request struct {
	conn   *Connection
	Header http.Header
	Body   map[string]any
	// MessageID is the assistant message the request writes ("" for a
	// background task).
	MessageID string
}

// Messages are the wire messages of the request's body.
func (r *Request) Messages() []map[string]any {
	m, _ := r.Body["messages"].([]map[string]any)
	return m
}

// WithHeader is a copy of the request with header k set to v (a forged
// request, say).
func (r *Request) WithHeader(k, v string) *Request {
	c := *r
	c.Header = r.Header.Clone()
	c.Header.Set(k, v)
	return &c
}

// Send posts the request to the connection's /chat/completions
// (openai.py:1317).
func (r *Request) Send(ctx context.Context) (*http.Response, error) {
	b, err := json.Marshal(r.Body)
	if err != nil {
		return nil, fmt.Errorf("owuitest: encode body: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(r.conn.BaseURL, "/")+"/chat/completions", bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("owuitest: %w", err)
	}
	req.Header = r.Header.Clone()
	hc := r.conn.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("owuitest: send: %w", err)
	}
	return resp, nil
}

// AskOption adds to a user message.
type AskOption func(*ask)

type ask struct {
	images []string
	docs   []Document
}

// Document is a file the user attached, as Open WebUI's retrieval returns
// it: the chunks it found and the file's name.
type Document struct {
	Name    string
	ID      string
	Content string
}

// WithImage attaches an image by its data URL.
func WithImage(dataURL string) AskOption {
	return func(a *ask) { a.images = append(a.images, dataURL) }
}

// WithDocument attaches a document; its retrieved text reaches the model
// inside the RAG template.
func WithDocument(d Document) AskOption {
	return func(a *ask) { a.docs = append(a.docs, d) }
}

// Ask adds the user's message to the chat and returns the request that
// asks for the answer (a new assistant message).
func (ch *Chat) Ask(text string, opts ...AskOption) *Request {
	var a ask
	for _, o := range opts {
		o(&a)
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.msgs = append(ch.msgs, Message{ID: uuid.NewString(), Role: "user", Content: text, Images: a.images})
	ch.answering = uuid.NewString()
	return ch.chatRequest(a.docs)
}

// Regenerate asks for a new answer to the last user message: the same
// history, a new assistant message (a sibling of the old one).
func (ch *Chat) Regenerate() *Request {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.dropAnswer()
	ch.answering = uuid.NewString()
	return ch.chatRequest(nil)
}

// Edit edits the n-th user message (from 1) into text: a new branch that
// keeps the messages before it, and a new answer.
func (ch *Chat) Edit(n int, text string) *Request {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	seen := 0
	for i, m := range ch.msgs {
		if m.Role != "user" {
			continue
		}
		if seen++; seen == n {
			ch.msgs = append(ch.msgs[:i:i], Message{ID: uuid.NewString(), Role: "user", Content: text})
			break
		}
	}
	ch.answering = uuid.NewString()
	return ch.chatRequest(nil)
}

// Answer records the answer Open WebUI stored for the message being
// written: the content it showed (Longhaul's tool cards included).
func (ch *Chat) Answer(content string) {
	ch.Keep(Answer{Content: content})
}

// Keep records a whole answer as Open WebUI stores it for the message
// being written: its reasoning as an output item of its own before the
// text (utils/middleware.py:4586-4608), the text as it showed.
func (ch *Chat) Keep(a Answer) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.dropAnswer()
	ch.msgs = append(ch.msgs, Message{ID: ch.answering, Role: "assistant", Content: a.Content, Reasoning: a.Reasoning})
}

// ToolResults records the model's calls of Open WebUI's tools and the
// results Open WebUI got running them, and returns the request that
// continues the same answer (Open WebUI's native tool loop: the same
// metadata, so the same chat and message ids).
func (ch *Chat) ToolResults(content string, calls []ToolCall, results map[string]string) *Request {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.msgs = append(ch.msgs, Message{ID: ch.answering, Role: "assistant", Content: content, ToolCalls: calls})
	for _, c := range calls {
		ch.msgs = append(ch.msgs, Message{ID: ch.answering, Role: "tool", ToolCallID: c.ID, Content: results[c.ID]})
	}
	return ch.chatRequest(nil)
}

// dropAnswer removes the messages of the answer being written, so the
// branch ends with the user's message again.
func (ch *Chat) dropAnswer() {
	for len(ch.msgs) > 0 && ch.msgs[len(ch.msgs)-1].Role != "user" {
		ch.msgs = ch.msgs[:len(ch.msgs)-1]
	}
}

// chatRequest builds the request for the current branch. Open WebUI
// rebuilds the messages from its database (utils/middleware.py:2295-2385):
// role and content, images as parts of their user message, an answer
// that called Open WebUI's tools as the assistant message with tool_calls
// and the tool messages, and an answer's reasoning as the model's
// provider reads it back, or not at all (utils/misc.py:257-472).
func (ch *Chat) chatRequest(docs []Document) *Request {
	var wire []map[string]any
	for i, m := range ch.msgs {
		w := map[string]any{"role": m.Role, "content": m.Content}
		if m.Role == "assistant" && m.Reasoning != "" {
			switch ch.conn.Provider {
			case ProviderOllama:
				// The reasoning item's tags, then the text, joined by a
				// newline (utils/misc.py:296-303, 431-435).
				w["content"] = strings.Join(nonEmpty("<think>"+m.Reasoning+"</think>", m.Content), "\n")
			case ProviderLlamaCpp:
				w["reasoning_content"] = m.Reasoning // utils/misc.py:307-308, 436-438
			}
		}
		if len(m.Images) > 0 {
			parts := []map[string]any{{"type": "text", "text": m.Content}}
			for _, u := range m.Images {
				parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]any{"url": u}})
			}
			w["content"] = parts
		}
		if len(m.ToolCalls) > 0 {
			var calls []map[string]any
			for _, c := range m.ToolCalls {
				calls = append(calls, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
			}
			w["tool_calls"] = calls
		}
		if m.ToolCallID != "" {
			w["tool_call_id"] = m.ToolCallID
		}
		if i == len(ch.msgs)-1 && m.Role == "user" && len(docs) > 0 {
			w = withContext(w, docs)
		}
		wire = append(wire, w)
	}
	body := map[string]any{"stream": ch.Stream, "model": ch.Model, "messages": wire}
	if ch.Stream && ch.conn.Usage {
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	if len(ch.conn.Tools) > 0 {
		var tools []map[string]any
		for _, t := range ch.conn.Tools {
			tools = append(tools, map[string]any{"type": "function", "function": t})
		}
		body["tools"] = tools
	}
	return &Request{conn: ch.conn, Header: ch.conn.headers(ch.User, ch.ID, ch.answering), Body: body, MessageID: ch.answering}
}

// nonEmpty is the strings of ss that are not empty.
func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// withContext prepends the RAG template to the user message w, as Open
// WebUI does with the default RAG_SYSTEM_CONTEXT=false
// (utils/middleware.py:857-869): the template with the sources in place of
// {{CONTEXT}} (get_source_context, utils/middleware.py:807-830), a
// newline, and the question (utils/misc.py:556-616). The template's
// guidelines are abridged here; its shape — "### Task:" first, the
// sources between <context> and </context> last — is Open WebUI's
// (config.py:1052-1078).
func withContext(w map[string]any, docs []Document) map[string]any {
	var ctx strings.Builder
	for i, d := range docs {
		fmt.Fprintf(&ctx, "<source id=\"%d\" name=\"%s\" resource-type=\"file\" resource-id=\"%s\">%s</source>\n", i+1, d.Name, d.ID, d.Content)
	}
	tmpl := "### Task:\nRespond to the user query using the provided context, incorporating inline citations in the format [id] **only when the <source> tag includes an explicit id attribute** (e.g., <source id=\"1\">).\n\n" +
		"### Guidelines:\n- If you don't know the answer, clearly state that.\n\n" +
		"### Output:\nProvide a clear and direct response to the user's query.\n\n<context>\n" + strings.TrimSpace(ctx.String()) + "\n</context>\n"
	switch c := w["content"].(type) {
	case string:
		w["content"] = tmpl + "\n" + c
	case []map[string]any:
		for _, p := range c {
			if p["type"] == "text" {
				p["text"] = tmpl + "\n" + p["text"].(string)
			}
		}
	}
	return w
}

// Title is the title task Open WebUI sends after the first answer of a
// chat (routers/tasks.py:110-192): the chat's last two messages, their
// tool cards, reasoning blocks and images stripped (utils/middleware.py:
// 3214-3235), formatted ROLE: content (utils/misc.py:159-160) into
// {{MESSAGES:END:2}} of the title template (config.py:2177-2198, v0.11.0's
// new wording without emojis; its guidelines abridged here). For a new
// chat Open WebUI sends it at once, while the first answer is still being
// written (main.py:1214-1216, 1371-1391), so a test may send it before
// Answer.
func (ch *Chat) Title() *Request {
	return ch.task("### Task:\nGenerate a concise title summarizing the chat history.\n### Guidelines:\n- Keep it short: 2-4 words is best.\n- Do not use emojis, quotation marks, or special formatting.\n### Output:\nJSON format: { \"title\": \"your concise title here\" }\n### Chat History:\n<chat_history>\n", 2)
}

// Tags is the tags task (routers/tasks.py:264-330, config.py:2202-2218:
// {{MESSAGES:END:6}}).
func (ch *Chat) Tags() *Request {
	return ch.task("### Task:\nGenerate 1-3 broad tags categorizing the main themes of the chat history, along with 1-3 more specific subtopic tags.\n\n### Guidelines:\n- Prioritize accuracy over specificity\n\n### Output:\nJSON format: { \"tags\": [\"tag1\", \"tag2\", \"tag3\"] }\n\n### Chat History:\n<chat_history>\n", 6)
}

var cardsAndImages = regexp.MustCompile(`(?is)<details\b[^>]*>.*?</details>|!\[.*?\]\(.*?\)`)

func (ch *Chat) task(head string, last int) *Request {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	var lines []string
	var shown []Message
	for _, m := range ch.msgs {
		if m.Role == "user" || (m.Role == "assistant" && len(m.ToolCalls) == 0) {
			shown = append(shown, m)
		}
	}
	if len(shown) > last {
		shown = shown[len(shown)-last:]
	}
	for _, m := range shown {
		lines = append(lines, strings.ToUpper(m.Role)+": "+strings.TrimSpace(cardsAndImages.ReplaceAllString(m.Content, "")))
	}
	content := head + strings.Join(lines, "\n") + "\n</chat_history>"
	body := map[string]any{
		"model":      ch.Model,
		"messages":   []map[string]any{{"role": "user", "content": content}},
		"stream":     false,
		"max_tokens": 1000,
	}
	// The task's metadata has the chat but, in the UI's path, no message
	// id (main.py:1535, 1702-1720: request.state.metadata is the chat's,
	// without the per-model message id; tasks.py:170-175).
	return &Request{conn: ch.conn, Header: ch.conn.headers(ch.User, ch.ID, ""), Body: body}
}

// headers are the request headers of get_headers_and_cookies
// (routers/openai.py:156-219) for user, chat and message.
func (c *Connection) headers(u User, chatID, messageID string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	if c.ForwardUserInfo {
		for k, v := range c.userHeaders(u) {
			h.Set(k, v)
		}
		if chatID != "" {
			h.Set(HeaderChatID, chatID)
		}
	}
	if c.Key != "" {
		h.Set("Authorization", "Bearer "+c.Key)
	}
	// Custom headers last (openai.py:215-217); a placeholder without a
	// value becomes empty (utils/headers.py:115-139).
	var names, ids []string
	for _, g := range u.Groups {
		names = append(names, strings.TrimSpace(g.Name))
		ids = append(ids, g.ID)
	}
	for k, v := range c.Headers {
		v = strings.ReplaceAll(v, "{{CHAT_ID}}", chatID)
		v = strings.ReplaceAll(v, "{{MESSAGE_ID}}", messageID)
		v = strings.ReplaceAll(v, "{{USER_ID}}", u.ID)
		v = strings.ReplaceAll(v, "{{USER_NAME}}", strings.TrimSpace(u.Name))
		v = strings.ReplaceAll(v, "{{USER_EMAIL}}", strings.TrimSpace(u.Email))
		v = strings.ReplaceAll(v, "{{USER_ROLE}}", u.Role)
		v = strings.ReplaceAll(v, "{{USER_GROUPS}}", strings.Join(names, ","))
		v = strings.ReplaceAll(v, "{{USER_GROUP_IDS}}", strings.Join(ids, ","))
		h.Set(k, v)
	}
	return h
}

// userHeaders are include_user_info_headers (utils/headers.py:37-62).
func (c *Connection) userHeaders(u User) map[string]string {
	if c.JWTSecret != "" {
		return map[string]string{HeaderUserJWT: c.Token(u)}
	}
	return map[string]string{
		HeaderUserName:  pyQuote(strings.TrimSpace(u.Name)),
		HeaderUserID:    u.ID,
		HeaderUserEmail: strings.TrimSpace(u.Email),
		HeaderUserRole:  u.Role,
	}
}

// Token is the user's token as _mint_forward_user_jwt mints it
// (utils/headers.py:23-34): HS256 over sub, email, name, role, iss, iat
// and exp.
func (c *Connection) Token(u User) string {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	exp := c.JWTExpiry
	if exp == 0 {
		exp = DefaultJWTExpiry
	}
	iat := now().Unix()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": u.ID, "email": u.Email, "name": u.Name, "role": u.Role,
		"iss": "open-webui", "iat": iat, "exp": iat + int64(exp/time.Second),
	}).SignedString([]byte(c.JWTSecret))
	if err != nil {
		panic("owuitest: sign: " + err.Error())
	}
	return tok
}

// pyQuote is Python's urllib.parse.quote(s, safe=' '): every byte but
// letters, digits, "_.-~" and the space is percent-encoded.
func pyQuote(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte("_.-~ ", c) >= 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
