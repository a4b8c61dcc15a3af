package wire

import (
	"time"

	"github.com/longhaul-dev/longhaul/contract"
)

// The wire types of the account routes: /v1/conversations, /v1/memories,
// /v1/connections, /v1/secrets, /v1/backlog and DELETE /v1/me.

// ConversationSummary is one chat in GET /v1/conversations.
type ConversationSummary struct {
	ID        string    `json:"id"`
	Object    string    `json:"object"`
	Title     string    `json:"title"`
	Turns     int       `json:"turns"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ConversationList answers GET /v1/conversations, newest first; pass
// NextPageToken as page_token for the next page.
type ConversationList = Page[ConversationSummary]

// ConversationDetail answers GET /v1/conversations/{id}: the chat's turns,
// oldest first.
type ConversationDetail struct {
	ConversationSummary
	Timeline []ConversationTurn `json:"timeline"`
}

// ConversationTurn is one stored turn: the run that answered it and what
// it added to the conversation.
type ConversationTurn struct {
	RunID      string                `json:"run_id"`
	Turn       int                   `json:"turn"`
	Agent      string                `json:"agent"`
	Status     string                `json:"status"`
	StartedAt  time.Time             `json:"started_at"`
	FinishedAt time.Time             `json:"finished_at"`
	Usage      WireUsage             `json:"usage"`
	Messages   []ConversationMessage `json:"messages"`
}

// ConversationMessage is one message of a turn. A tool message's content
// is what the model read (an excerpt when Truncated); Ref names the whole
// output and OutputURL serves it.
type ConversationMessage struct {
	Role       string                `json:"role"`
	Content    string                `json:"content"`
	Name       string                `json:"name,omitempty"`
	ToolCalls  []WireToolCall        `json:"tool_calls,omitempty"`
	ToolCallID string                `json:"tool_call_id,omitempty"`
	Truncated  bool                  `json:"truncated,omitempty"`
	Error      bool                  `json:"error,omitempty"`
	Ref        string                `json:"ref,omitempty"`
	OutputURL  string                `json:"output_url,omitempty"`
	Status     []contract.CallStatus `json:"status,omitempty"`
}

// ConversationDeleted answers DELETE /v1/conversations/{id}.
type ConversationDeleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
	// Runs are the runs whose stored turns and outputs were removed.
	Runs []string `json:"runs"`
}

// UserDeleted answers DELETE /v1/me: what went of the caller's data.
type UserDeleted struct {
	Object        string `json:"object"`
	Deleted       bool   `json:"deleted"`
	Conversations int    `json:"conversations"`
	Memories      int    `json:"memories"`
	BacklogItems  int64  `json:"backlog_items"`
	Connections   int    `json:"connections"`
	Credentials   int64  `json:"credentials"`
	// Documents reports that the caller had files or vector stores, now
	// deleted with their chunks (false when there were none, or the
	// server keeps no documents).
	Documents bool `json:"documents"`
	// Webhooks is how many webhooks (subscriptions and runs' own) were
	// deleted with their delivery records.
	Webhooks int64 `json:"webhooks"`
	// Schedules is how many schedules of runs were deleted (they fire no
	// more; their past runs end with Temporal's retention).
	Schedules int `json:"schedules"`
}

// MemoryObject is one memory in the answers of /v1/memories.
type MemoryObject struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	Text   string `json:"text"`
	// ChatID is the chat the memory was learned in, as the client named it.
	ChatID string `json:"chat_id,omitempty"`
	// Score is the similarity to q (1 = the same meaning), in a search.
	Score     *float64  `json:"score,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// MemoryList answers GET /v1/memories.
type MemoryList = Page[MemoryObject]

// MemoryDeleted answers DELETE /v1/memories/{id}.
type MemoryDeleted = Deleted

// ConnectionList is GET /v1/connections.
type ConnectionList = List[Connection]

// Connection is an MCP server the user may connect with their own
// account, and whether they did.
type Connection struct {
	Server    string     `json:"server"`
	Connected bool       `json:"connected"`
	Scopes    []string   `json:"scopes,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
}

// AuthorizeLink is GET /v1/connections/{server}/authorize?redirect=false.
type AuthorizeLink struct {
	Server string `json:"server"`
	URL    string `json:"url"`
}

// SecretObject is one of the user's secrets: its name, never its value.
type SecretObject struct {
	Name      string `json:"name"`
	Object    string `json:"object"`
	UpdatedAt int64  `json:"updated_at"`
}

// SecretList is GET /v1/secrets.
type SecretList = List[SecretObject]

// BacklogObject is one item in GET /v1/backlog.
type BacklogObject struct {
	// ID is the item's number in the caller's backlog (#3 is 3).
	ID       int64  `json:"id"`
	Object   string `json:"object"`
	Title    string `json:"title"`
	Notes    string `json:"notes,omitempty"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
	// ChatID is the chat that added the item, as the client named it.
	ChatID    string     `json:"chat_id,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	ClosedAt  *time.Time `json:"closed_at,omitempty"`
}

// BacklogList answers GET /v1/backlog; Total counts every matching item,
// Data holds up to limit of them.
type BacklogList struct {
	Object string          `json:"object"`
	Data   []BacklogObject `json:"data"`
	Total  int             `json:"total"`
}
