// Package contract is every type that crosses a Temporal boundary, in one
// place, so that both sides of each boundary name the same type and a
// recorded payload keeps one JSON shape:
//
//   - API ↔ workflow: workflow, query, update and search attribute names,
//     run ids, the workflows' inputs and results (AgentInput, IngestInput,
//     RetentionInput), the run's state as QueryState answers it, run modes
//     and statuses, approval decisions and grants, client tool call ids,
//     the event pages and the event archives a page may name (the API
//     reads them from the blob store, so EventArchive is here and not with
//     the checkpoint), the stored timeline of a chat turn, the blob kinds
//     both sides read.
//   - workflow ↔ activity, a file per area: the agent's spec (agent.go),
//     model calls (model.go), tool calls (tool.go), the agentic pipeline's
//     plan, reviews and dispatch (plan.go), compaction (compact.go), a
//     chat's stored turns (conversation.go), long-term memory (memory.go),
//     translation (translate.go), file ingestion (ingest.go), event
//     archiving (archive.go), retention (retention.go) and webhook
//     deliveries (webhook.go).
//
// State only the workflow reads and writes (the continue-as-new checkpoint,
// a tool loop's state) is not here: it lives in package workflows. The
// package imports nothing of Longhaul's but the domain types (package
// longhaul), so a reader of runs (the API) needs neither the workflows nor
// the activities, and the activities need no workflow code.
package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"time"

	"github.com/longhaul-dev/longhaul"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
)

// DefaultTaskQueue is the task queue used when none is configured.
const DefaultTaskQueue = "longhaul"

// AgentWorkflowName is the registered name of AgentWorkflow.
const AgentWorkflowName = "AgentWorkflow"

// Query, signal and update names of AgentWorkflow.
const (
	// QueryEvents returns an EventsPage: the events after an offset.
	QueryEvents = "events"
	// QueryState returns the run's RunState.
	QueryState = "state"
	// UpdateInput delivers a person's InputRequest to a run that waits for
	// one; it is rejected (ErrNotWaiting) when the run waits for nothing.
	UpdateInput = "input"
)

// ErrNotWaiting is the message of the rejection of an UpdateInput sent to a
// run that is not waiting for input.
const ErrNotWaiting = "the run is not waiting for input"

// InputRequest is a person's answer to a waiting run: an approval decision
// for a pending tool call, or a text reply.
type InputRequest struct {
	Approve *bool  `json:"approve,omitempty"`
	Text    string `json:"text,omitempty"`
	// Unprompted marks Text as the words of a person who was shown no
	// approval prompt (a chat message that replies to none): a reply,
	// never a decision, whatever it says; Approve is ignored with it.
	Unprompted bool `json:"unprompted,omitempty"`
	// ToolResults answer the client tool calls a run waits for (Waiting
	// kind "client_tools"): one per call.
	ToolResults []ToolResult `json:"tool_results,omitempty"`
	// Connected tells a run that waits for its user to connect an account
	// (Waiting kind "auth") that they connected it: the server's name.
	// Only the OAuth callback sends it, for the run the connect link was
	// made for.
	Connected string `json:"connected,omitempty"`
}

// ToolResult is a client's result of one of its tool calls.
type ToolResult struct {
	ToolCallID string `json:"tool_call_id"`
	Content    string `json:"content"`
}

// InputResult is what UpdateInput returns once the run took the input.
type InputResult struct {
	// Decision is "approved", "denied" or "replied".
	Decision string `json:"decision"`
	// Approved is what an approval granted: the call it lets run. The tool
	// activity reads it back from the update's recorded outcome, so that
	// only a call a person approved through this update runs.
	Approved *ApprovalGrant `json:"approved,omitempty"`
}

// Waiting says what a waiting run waits for.
type Waiting struct {
	// Kind is WaitApproval, WaitClientTools or WaitAuth.
	Kind       string `json:"kind"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	Tool       string `json:"tool,omitempty"`
	Arguments  string `json:"arguments,omitempty"`
	// Calls are the client tool calls waited for (WaitClientTools).
	Calls []longhaul.ToolCall `json:"calls,omitempty"`
	// Server and URL are the OAuth server whose account the user must
	// connect, and the connect link to open (WaitAuth).
	Server string    `json:"server,omitempty"`
	URL    string    `json:"url,omitempty"`
	Since  time.Time `json:"since"`
	// Run and Agent name the child run (an ask_ call's, at any depth)
	// whose approval this run shows as its own: the call to approve is
	// that run's, and an answer given to this run reaches it. Empty when
	// the run waits itself.
	Run   string `json:"run,omitempty"`
	Agent string `json:"agent,omitempty"`
}

// What a waiting run waits for.
const (
	// WaitApproval: a person's decision on a tool call.
	WaitApproval = "approval"
	// WaitClientTools: the client's results of tool calls it runs itself.
	WaitClientTools = "client_tools"
	// WaitAuth: the user's connection of the account a tool call needs
	// (an MCP server with auth: oauth), through the connect link.
	WaitAuth = "auth"
)

// Search attributes Longhaul sets on its runs, registered in every namespace
// of the embedded server (a real cluster needs them added once, see docs/deploy.md).
var (
	SearchAttrAgent  = temporal.NewSearchAttributeKeyKeyword("LonghaulAgent")
	SearchAttrUser   = temporal.NewSearchAttributeKeyKeyword("LonghaulUser")
	SearchAttrStatus = temporal.NewSearchAttributeKeyKeyword("LonghaulStatus")
	// SearchAttrChat is the chat a run answers, so the chat's next message
	// can find a run waiting for a person.
	SearchAttrChat = temporal.NewSearchAttributeKeyKeyword("LonghaulChat")
)

// MemoOwner is the memo field that holds the principal a run was started
// for (its user's key): listings and ownership checks read it. The runs
// service sets it on every run it starts (internal/runs, as its
// MemoOwner), and a workflow that starts runs of its own (an evaluation's
// replays) sets it too.
const MemoOwner = "owner"

// SearchAttributes lists the custom search attributes and their types, for
// registration.
func SearchAttributes() map[string]enums.IndexedValueType {
	return map[string]enums.IndexedValueType{
		SearchAttrAgent.GetName():  enums.INDEXED_VALUE_TYPE_KEYWORD,
		SearchAttrUser.GetName():   enums.INDEXED_VALUE_TYPE_KEYWORD,
		SearchAttrStatus.GetName(): enums.INDEXED_VALUE_TYPE_KEYWORD,
		SearchAttrChat.GetName():   enums.INDEXED_VALUE_TYPE_KEYWORD,
		// Forks (fork.go).
		SearchAttrForkedFrom.GetName(): enums.INDEXED_VALUE_TYPE_KEYWORD,
	}
}

// Run statuses, as in RunState.Status and the LonghaulStatus search attribute.
const (
	StatusRunning   = "running"
	StatusWaiting   = "waiting"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

var (
	plainMessageID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,80}$`)
	// hashLike is what chatHash makes: a message id of this form is
	// hashed too, so that no id kept as it is equals another's hash.
	hashLike = regexp.MustCompile(`^[0-9a-f]{24}$`)
	// retakeLike is the form of the suffixes of ChatRetakeID and
	// ChatSpareID, which no message id's part takes.
	retakeLike = regexp.MustCompile(`^r[0-9]`)
)

// ChatRunID is the workflow ID of turn n of a chat: the same chat and turn
// always give the same ID, so a retried request attaches to the run it
// started. messageID, when the client names the answer it is asking for
// (Open WebUI's X-OpenWebUI-Message-Id), tells a new answer to the same turn
// (Regenerate) from a retry of the same request.
//
// The id is "chat-<hash of chat>-turn-<n>", then "-<message>" when there is
// a message id: the id itself when it is at most 80 letters, digits, '.',
// '_' or '-' (an Open WebUI message id is a UUID), else its hash. A message
// id of the form of a hash, or starting with 'r' and a digit (the form of
// ChatRetakeID's and ChatSpareID's suffixes), is hashed too. So two
// different (chat, turn, message) never share an id, nor share one with a
// retake. chat is a chat key (identity.ChatKey), which always holds a '/'
// and was therefore always hashed: ids of runs started before stay the same.
func ChatRunID(chatID string, turn int, messageID string) string {
	id := fmt.Sprintf("chat-%s-turn-%d", chatHash(chatID), turn)
	if messageID != "" {
		id += "-" + messagePart(messageID)
	}
	return id
}

// ChatRetakeID is the id of the k-th run (k ≥ 2) of a chat turn asked for
// without a message id, base being the turn's ChatRunID with none.
func ChatRetakeID(base string, k int) string {
	return fmt.Sprintf("%s-r%d", base, k)
}

// ChatSpareID is the id of a run of a chat turn asked for without a message
// id once its retakes ran out: unique must be unique (a UUID).
func ChatSpareID(base, unique string) string {
	return base + "-r0-" + unique
}

func chatHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:12])
}

func messagePart(s string) string {
	if plainMessageID.MatchString(s) && !hashLike.MatchString(s) && !retakeLike.MatchString(s) {
		return s
	}
	return chatHash(s)
}

// Invocation is the agent a run of in invokes and the chat it answers in
// (none: not a chat's run), as its trace names them.
func (in AgentInput) Invocation() (agent, chat string) { return in.Agent, in.ChatID }

// AgentInput starts an AgentWorkflow.
type AgentInput struct {
	// Agent is the agent id (the model id the client asked for).
	Agent string `json:"agent"`
	// Messages is the conversation so far, ending with the user's message.
	// System messages from the client are kept after the agent's prompt.
	Messages []longhaul.Message `json:"messages"`
	// User is who the run is for; it scopes memory and permissions.
	User longhaul.User `json:"user,omitempty"`
	// ChatID and Turn identify an Open WebUI chat turn, when there is one;
	// MessageID the answer being asked for.
	ChatID    string `json:"chat_id,omitempty"`
	Turn      int    `json:"turn,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	// Options carries the client's sampling settings.
	Options longhaul.ModelOptions `json:"options,omitempty"`
	// ClientTools are the function tools the client declared: offered to
	// the model beside the agent's, run by the client (see
	// WaitClientTools). A request with client tools runs as a chat.
	ClientTools []longhaul.ToolSpec `json:"client_tools,omitempty"`
	// ClientToolTimeout bounds the wait for a client's tool results; zero
	// means DefaultClientToolTimeout. Unanswered, the run ends with
	// finish reason "tool_calls".
	ClientToolTimeout time.Duration `json:"client_tool_timeout,omitempty"`
	// Background marks a client's housekeeping request (Open WebUI's title,
	// tags and follow-up prompts): one model call without the agent's prompt
	// and tools.
	Background bool `json:"background,omitempty"`
	// Quiet says nobody follows the run live (a non-streaming request): model
	// calls then publish no text deltas, saving a signal per batch; the log
	// still gets each answer whole. Its zero value streams: one name from
	// the request (runs.Request.Quiet) to the model call (Publish is its
	// opposite, per call).
	Quiet bool `json:"quiet,omitempty"`
	// ModelTimeout bounds one attempt of a model call; zero means
	// DefaultModelTimeout.
	ModelTimeout time.Duration `json:"model_timeout,omitempty"`
	// ApprovalTimeout bounds the wait for a person to approve a tool call;
	// zero waits as long as it takes. An unanswered call is denied. It
	// bounds the wait for an account connection (AuthWait) too.
	ApprovalTimeout time.Duration `json:"approval_timeout,omitempty"`
	// AuthWait says the run's door shows a person the connect link of a
	// tool call whose account the user has not connected (A2A's
	// AUTH_REQUIRED, the runs API's waiting state): the run then waits
	// for the connection (WaitAuth) and runs the call, instead of handing
	// the model the link. A chat's runs do not wait: the model relays the
	// link and the user asks again.
	AuthWait bool `json:"auth_wait,omitempty"`
	// Metadata is free-form caller data kept with the run.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Response is what the Responses API keeps of the request that started
	// the run, to rebuild its responses; nil for the runs of the other APIs.
	// The workflow passes it on untouched.
	Response *ResponseState `json:"response,omitempty"`
	// HistoryLimit is the number of history events after which the run
	// continues as new; zero means DefaultHistoryLimit.
	HistoryLimit int `json:"history_limit,omitempty"`
	// Translation is the run's request as the workflow translated it for
	// an agent with language: auto (set by the run itself, kept across
	// continue-as-new): the user's language and both texts.
	Translation *longhaul.Translation `json:"translation,omitempty"`
	// Forget says the run is not to be kept (a Responses request with
	// store: false): at its end it marks itself deleted (DeletedRunKind),
	// so it reads as gone even if the API that was to delete it died.
	Forget bool `json:"forget,omitempty"`
	// VectorStores are the vector stores (ids "vs_…", of the run's
	// principal) the run's document_search tool searches: the agent's
	// (frontmatter vector_stores:) together with the request's (the
	// Responses file_search tool, Chat Completions' longhaul.vector_stores,
	// a chat's attached files). Empty: the tool is not offered.
	VectorStores []string `json:"vector_stores,omitempty"`
	// Webhook is the run's own webhook, and the response id a background
	// response's events name; nil for neither. The run's principal's
	// subscriptions are looked up when an event happens.
	Webhook *RunWebhook `json:"webhook,omitempty"`
	// Follows, when set, is the run of the same chat this run waits for
	// before it starts (a multitask strategy; see Follow).
	Follows *Follow `json:"follows,omitempty"`
	// Fork, when set, makes the run a fork of an earlier run (fork.go):
	// it starts from that run's state at Fork's point.
	Fork *Fork `json:"fork,omitempty"`
	// Pinned, when set, makes the run a pinned replay of a recorded run
	// (eval.go): its tool calls are answered from the recording and never
	// run.
	Pinned *Pinned `json:"pinned,omitempty"`
	// Parent, when set, is the tool call of another run (its ask_ tool)
	// that this run answers as its child: the run's model and tool calls
	// show their progress on it (see Progress).
	Parent *ParentCall `json:"parent,omitempty"`
	// Depth is how many runs ask down to this one: 0 for a run a client
	// started, its parent's plus one for a child (see MaxAskDepth).
	Depth int `json:"depth,omitempty"`
}

// AgentResult is what an AgentWorkflow returns.
type AgentResult struct {
	// Content is the final answer.
	Content string `json:"content"`
	// Reasoning is what a reasoning model streamed as its thinking before
	// the final answer.
	Reasoning string `json:"reasoning,omitempty"`
	// FinishReason is "stop"; "length" when max_turns cut the run short;
	// "tool_calls" when the client never sent the results of its tool
	// calls (ToolCalls).
	FinishReason string `json:"finish_reason"`
	// Cut says why an answer the model's output limit cut is short
	// (longhaul.CutMaxTokens, longhaul.CutThinking); empty otherwise.
	Cut string `json:"cut,omitempty"`
	// ToolCalls are the client tool calls the run ended waiting for.
	ToolCalls []longhaul.ToolCall `json:"tool_calls,omitempty"`
	// Messages are the messages this run added to the conversation: assistant
	// messages with their tool calls, tool results, and the final answer.
	Messages []longhaul.Message `json:"messages"`
	Usage    longhaul.Usage     `json:"usage"`
	// Model is the model that produced the answer.
	Model string `json:"model,omitempty"`
	// LastOffset is the offset of the run's last event (done).
	LastOffset int64 `json:"last_offset"`
	// Replay is what a pinned replay (AgentInput.Pinned) did with its
	// tool calls; nil for other runs.
	Replay *ReplayData `json:"replay,omitempty"`
}

// EventsRequest is the argument of QueryEvents.
type EventsRequest struct {
	After int64 `json:"after"`
	Limit int   `json:"limit,omitempty"`
}

// EventsPage answers QueryEvents: events with offsets greater than After, in
// order, at most Limit of them.
type EventsPage struct {
	Events []longhaul.Event `json:"events"`
	// Last is the highest offset in the log so far.
	Last int64 `json:"last"`
	// Done reports that the log is closed: its last event is done.
	Done bool `json:"done"`
	// Archives, instead of Events, answer a request for offsets that an
	// earlier execution of the run archived: the stored stretches of the
	// log (the API reads them from the blob store) from After on, up to the
	// events held. Ask again after the last of them for the rest.
	Archives []EventArchive `json:"archives,omitempty"`
}

// RunState answers QueryState.
type RunState struct {
	Agent  string `json:"agent"`
	User   string `json:"user,omitempty"`
	Status string `json:"status"`
	// Mode is how the run went: "chat", "agentic", "skill" (a slash
	// command) or "task" (a client's background request).
	Mode string `json:"mode,omitempty"`
	// Dispatch says why the dispatcher chose Mode.
	Dispatch string `json:"dispatch,omitempty"`
	// Skill is the skill a slash command ran.
	Skill string `json:"skill,omitempty"`
	Turns int    `json:"turns"`
	// Plans are every plan revision, the current one last.
	Plans []PlanRevision `json:"plans,omitempty"`
	// Reviews are the supervisors' verdicts, in order.
	Reviews []longhaul.ReviewData `json:"reviews,omitempty"`
	// ReplansRemaining is what is left of the re-plan budget.
	ReplansRemaining int `json:"replans_remaining"`
	// Waiting is set while the run waits for a person (StatusWaiting).
	Waiting *Waiting `json:"waiting,omitempty"`
	// Calls is the usage of each model call.
	Calls  []CallUsage    `json:"calls,omitempty"`
	Usage  longhaul.Usage `json:"usage"`
	Error  string         `json:"error,omitempty"`
	Result string         `json:"result,omitempty"`
	// StartedAt is when the run began, set once it continued as new (the
	// current execution started later); Continued is how many times it did.
	StartedAt time.Time `json:"started_at,omitzero"`
	Continued int       `json:"continued,omitempty"`
}

// Plan revision statuses.
const (
	// PlanActive is the plan being carried out.
	PlanActive = "active"
	// PlanRejected is a plan the plan supervisor turned down.
	PlanRejected = "rejected"
	// PlanReplaced is a plan a later revision replaced.
	PlanReplaced = "replaced"
	// PlanDone is a plan carried out to its end.
	PlanDone = "done"
)

// PlanRevision is one plan revision as the run keeps it.
type PlanRevision struct {
	longhaul.Plan
	// Status is one of the Plan* statuses.
	Status string `json:"status"`
	// Problems are why the plan supervisor rejected it.
	Problems []string `json:"problems,omitempty"`
}

// CallUsage is the usage of one model call of a run.
type CallUsage struct {
	Call string `json:"call"`
	// Model is the model reference the call was made with
	// ("llama3.1:8b", "remote:gpt-4o").
	Model string         `json:"model,omitempty"`
	Usage longhaul.Usage `json:"usage"`
}

// ModelUsage sums the usage of calls by model: a run's usage per model,
// in the order each model was first used.
func ModelUsage(calls []CallUsage) []longhaul.ModelUsage {
	var out []longhaul.ModelUsage
	for _, c := range calls {
		i := len(out)
		for j := range out {
			if out[j].Model == c.Model {
				i = j
				break
			}
		}
		if i == len(out) {
			out = append(out, longhaul.ModelUsage{Model: c.Model})
		}
		out[i].Usage = out[i].Usage.Add(c.Usage)
	}
	return out
}

// ResponseState is what the Responses API keeps of the request that
// started a run (AgentInput.Response). Runs started before it existed keep
// the same as "longhaul.responses.*" keys of AgentInput.Metadata, which the
// API still reads.
type ResponseState struct {
	// Instructions says the run's first message is the request's
	// instructions (a system message), which do not carry over to the
	// next response.
	Instructions bool `json:"instructions,omitempty"`
	// PreviousResponseID is the response the request continued.
	PreviousResponseID string `json:"previous_response_id,omitempty"`
	// Store says the response is kept (the request's store).
	Store bool `json:"store"`
	// Background says the request ran in the background.
	Background bool `json:"background,omitempty"`
	// InputFrom is the index of the first message of the request's own
	// input in the run's messages (after its instructions and the previous
	// responses' conversation).
	InputFrom int `json:"input_from"`
	// CreatedAt is when the request came (Unix seconds): the response's
	// created_at, the same on every read.
	CreatedAt int64 `json:"created_at"`
	// SearchResults says the request's include asked for the
	// file_search_call items' results.
	SearchResults bool `json:"file_search_results,omitempty"`
}
