package runs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/textcut"
)

// The one author of a run. Every start — a chat turn, a new run of the
// runs API, a Responses request, a fork, a schedule's runs — reaches the
// Gate as a Request, in the words of the API that asks; the Gate alone
// mints run ids, resolves the agent (one not-found error, NoAgent),
// builds the workflow's input with the operator's Settings, and passes it
// through admission, the run limit, the budgets and the image claims
// (StartOrAttach). No HTTP handler builds the workflow's input itself.

// Settings are the operator's settings that every run's input carries.
type Settings struct {
	// ModelTimeout bounds each model call's attempt (zero: the workflow's
	// default).
	ModelTimeout time.Duration
	// HistoryLimit is the most events a run keeps in its history before
	// it continues as new (zero: the workflow's default).
	HistoryLimit int
	// ApprovalTimeout bounds a wait for a person's approval (zero: the
	// workflow's default).
	ApprovalTimeout time.Duration
}

// Agents resolves the agent a request names, for the user who asks: its
// id, and false when there is none the user may use.
type Agents interface {
	AgentID(name string, user longhaul.User) (string, bool)
}

// NoAgent is the one refusal of a request that names an agent that does
// not exist or that its user may not use (ErrNoAgent).
func NoAgent(name string) error {
	return refuse(ErrNoAgent, fmt.Sprintf("the agent %q does not exist; GET /v1/models lists the agents", name))
}

// NewRunID mints the id of a run that is not a chat turn's
// (contract.ChatRunID names those).
func NewRunID() string { return "run-" + uuid.NewString() }

// NewScheduleID mints a schedule's id.
func NewScheduleID() string { return contract.ScheduleIDPrefix + uuid.NewString() }

// Request is a run to start, in the words of the API that asks for it.
type Request struct {
	// ID is the run's id: NewRunID's, or a chat turn's (contract.ChatRunID).
	ID string
	// Agent names the agent; the Gate resolves it for User.
	Agent    string
	User     longhaul.User
	Messages []longhaul.Message
	// Question is what the run's summary says after the agent's name
	// (none: the last user message's start).
	Question string
	Metadata map[string]string
	Options  longhaul.ModelOptions
	// ClientTools are tools the client runs itself.
	ClientTools  []longhaul.ToolSpec
	VectorStores []string
	// Quiet says that no client follows the run's text as it comes (a
	// request that is not streamed): its deltas are not published. The
	// zero value streams, as a run followed through its events must.
	Quiet bool
	// Chat, when set, is the chat turn the run answers.
	Chat *ChatTurn
	// Background marks a chat's background task (a title, tags): it never
	// takes a chat turn's run.
	Background bool
	// Response is the Responses API's state of the run, when it is one.
	Response *contract.ResponseState
	// Forget deletes the run once its answer is read (store: false).
	Forget  bool
	Webhook *contract.RunWebhook
	// Follows is the chat's run the new one waits for (multitask enqueue).
	Follows *contract.Follow
	// Fork is where the run is forked from (ForkPoint decides it).
	Fork *contract.Fork
	// Admitted, when set, is the release of the admission the caller holds
	// already (see StartRequest.Admitted).
	Admitted func()
	// Door is the protocol the run was asked through (the Door* names),
	// kept in its memo so the engine's UI and GET /v1/runs/{id} show it.
	Door string
}

// The doors a run is asked through.
const (
	DoorChat      = "chat"
	DoorRuns      = "runs"
	DoorResponses = "responses"
	DoorFork      = "fork"
	DoorSchedule  = "schedule"
	DoorA2A       = "a2a"
	DoorMCP       = "mcp"
)

// ChatTurn is the chat turn a run answers: the chat (its key), the turn's
// number and the message's id, and whether a finished run of the turn may
// be handed back (Retake: see StartRequest.Retake).
type ChatTurn struct {
	ID        string
	Turn      int
	MessageID string
	Retake    bool
}

// ChatKey is the chat r belongs to, for its multitask strategy: its chat
// turn's chat, else its metadata's chat_id under its user; none for a
// background task.
func (r Request) ChatKey() string {
	chat := ""
	if r.Chat != nil {
		chat = r.Chat.ID
	}
	return chatKey(r.Background, chat, r.Metadata, r.User)
}

// Start starts the run r asks for, or attaches to the one a previous
// identical request started (StartOrAttach), and returns its id.
func (g *Gate) Start(ctx context.Context, r Request) (string, error) {
	in, err := g.Input(r)
	if err != nil {
		return "", err
	}
	question := r.Question
	if question == "" {
		question = Summarize(r.Messages, summaryRunes)
	}
	sr := StartRequest{ID: r.ID, Input: in, Question: question, Admitted: r.Admitted, Door: r.Door}
	if r.Chat != nil {
		sr.Retake = r.Chat.Retake
	}
	return g.StartOrAttach(ctx, sr)
}

// Resolve resolves the agent r names, in place, for a caller that acts
// on r before it starts it (a multitask strategy must not touch a chat's
// run for a request that is refused). Start resolves it again: an agent
// id resolves to itself.
func (g *Gate) Resolve(r *Request) error {
	if g.agents == nil {
		return nil
	}
	id, ok := g.agents.AgentID(r.Agent, r.User)
	if !ok {
		return NoAgent(r.Agent)
	}
	r.Agent = id
	return nil
}

// Input is the workflow's input of r: its agent resolved, the operator's
// settings set. A schedule keeps it for each of its fires.
func (g *Gate) Input(r Request) (contract.AgentInput, error) {
	if err := g.Resolve(&r); err != nil {
		return contract.AgentInput{}, err
	}
	return r.input(g.settings), nil
}

// input is r's workflow input with settings s, its agent as r names it.
func (r Request) input(s Settings) contract.AgentInput {
	in := contract.AgentInput{
		Agent: r.Agent, Messages: r.Messages, User: r.User, Options: r.Options,
		ClientTools: r.ClientTools, Background: r.Background, Quiet: r.Quiet,
		ModelTimeout: s.ModelTimeout, ApprovalTimeout: s.ApprovalTimeout, HistoryLimit: s.HistoryLimit,
		Metadata: r.Metadata, Response: r.Response, Forget: r.Forget, VectorStores: r.VectorStores,
		Webhook: r.Webhook, Follows: r.Follows, Fork: r.Fork,
		// A door that shows a person the connect link lets the run wait
		// for the connection (A2A's AUTH_REQUIRED, the runs API's state).
		AuthWait: r.Door == DoorA2A || r.Door == DoorRuns,
	}
	if r.Chat != nil {
		in.ChatID, in.Turn, in.MessageID = r.Chat.ID, r.Chat.Turn, r.Chat.MessageID
	}
	return in
}

// summaryRunes is how much of the last user message a run's summary
// shows.
const summaryRunes = 60

// Summary is the one-line summary of a run of agent asked question (what
// the Temporal UI shows and run listings read back from the memo): a
// run's and a schedule's runs' alike.
func Summary(agent, question string) string { return strings.TrimSpace(agent + ": " + question) }

// Summarize gives the last user message, cut to limit runes with "…",
// for the run's summary in the Temporal UI.
func Summarize(msgs []longhaul.Message, limit int) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != longhaul.RoleUser {
			continue
		}
		return textcut.Ellipsis(strings.Join(strings.Fields(msgs[i].Content), " "), limit)
	}
	return ""
}

// Begun is how a run began: the input its first execution started with
// (the one its request made), and when.
type Begun struct {
	contract.AgentInput
	At time.Time
}
