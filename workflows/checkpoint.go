package workflows

import (
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
)

// Input is AgentWorkflow's input: the API's AgentInput and, once the run
// continued as new, what the earlier execution handed over. The checkpoint
// is the workflow's own state, which no other package reads, so it is not
// part of the contract; AgentInput is embedded, so the input stays one flat
// JSON object, the shape the API sends and recorded histories hold.
type Input struct {
	contract.AgentInput
	// Resume is set when the run continued as new.
	Resume *Checkpoint `json:"resume,omitempty"`
}

// Checkpoint is what an execution hands the next when the run continues as
// new.
type Checkpoint struct {
	State   contract.RunState `json:"state"`
	Usage   longhaul.Usage    `json:"usage"`
	Model   string            `json:"model,omitempty"`
	StepSeq int               `json:"step_seq,omitempty"`
	// ToolSeq is the last tool call's sequence number.
	ToolSeq int64 `json:"tool_seq,omitempty"`
	// Recorded is how many of a chat turn's messages are already in the
	// conversation store.
	Recorded int `json:"recorded,omitempty"`
	// Offset is the offset of the run's last event so far; Archives hold
	// every event up to it.
	Offset   int64                   `json:"offset"`
	Archives []contract.EventArchive `json:"archives"`
	// Loop is the tool loop to go on with; nil for a plan, whose state is
	// all in State.Plans.
	Loop *LoopState `json:"loop,omitempty"`
	// Pinned is a pinned replay's use of its recorded tool calls.
	Pinned *PinnedState `json:"pinned,omitempty"`
}

// LoopState is one tool loop — a chat turn, a skill's own loop or a slash
// command — as it runs and as it goes on after continue-as-new.
type LoopState struct {
	// Call prefixes the names of the loop's model calls ("turn-1", or
	// "step-3-turn-1" in a plan step).
	Call string `json:"call,omitempty"`
	// Label prefixes the loop's activity summaries ("step 3/5 skill x").
	Label string `json:"label,omitempty"`
	// Scope is the tools offered to the model and allowed to run.
	Scope []string `json:"scope,omitempty"`
	// ClientTools offers the request's client tools
	// (contract.AgentInput.ClientTools) too: the run's own chat loop does,
	// a skill's or a plan step's not.
	ClientTools  bool   `json:"client_tools,omitempty"`
	MaxTurns     int    `json:"max_turns"`
	Skill        string `json:"skill,omitempty"`
	Instructions string `json:"instructions,omitempty"`
	Model        string `json:"model,omitempty"`
	Publish      bool   `json:"publish,omitempty"`
	// StepID, when set, makes the loop report to skill_activity events. A
	// plan step's loop never continues as new (the plan does, between
	// steps), so it is never carried.
	StepID string `json:"-"`
	// Turn is the turn to run next (after continue-as-new; 0 is the first).
	Turn int `json:"turn"`
	// ConvRef is the stored start of the conversation; Messages follow it
	// (or are the whole conversation when nothing is stored).
	ConvRef  string             `json:"conv_ref,omitempty"`
	Messages []longhaul.Message `json:"messages,omitempty"`
	// Summary stands for the conversation's first messages once they no
	// longer fit the model's window (activities.Compact).
	Summary *longhaul.Summary `json:"summary,omitempty"`
}
