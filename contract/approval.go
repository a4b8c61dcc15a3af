package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/longhaul-dev/longhaul"
)

// Approval decisions, as in InputResult.Decision.
const (
	DecisionApproved = "approved"
	DecisionDenied   = "denied"
	DecisionReplied  = "replied"
	// DecisionConnected: the OAuth callback said the user connected the
	// account the run waited for (InputRequest.Connected).
	DecisionConnected = "connected"
	// DecisionToolResults: a client sent the results of its tool calls.
	DecisionToolResults = "tool_results"
)

// Words a person may answer an approval with in a chat, where there is no
// button: anything else is a reply, which denies the call and is passed on
// to the model.
var (
	approveWords = []string{"approve", "approved", "yes", "y", "ok", "okay", "go", "go ahead", "allow", "confirm"}
	denyWords    = []string{"deny", "denied", "no", "n", "reject", "cancel", "stop", "don't", "do not"}
)

// Decide reads a person's input as an approval decision.
func Decide(in InputRequest) string {
	if len(in.ToolResults) > 0 {
		return DecisionToolResults
	}
	if in.Unprompted {
		// Nobody was shown what "ok" would approve.
		return DecisionReplied
	}
	if in.Approve != nil {
		if *in.Approve {
			return DecisionApproved
		}
		return DecisionDenied
	}
	t := strings.ToLower(strings.Trim(strings.TrimSpace(in.Text), ".!"))
	switch {
	case slices.Contains(approveWords, t):
		return DecisionApproved
	case slices.Contains(denyWords, t):
		return DecisionDenied
	}
	return DecisionReplied
}

// ApprovalGrant is what the input update records when a person approves a
// waiting tool call: which call (its sequence number), of which tool, with
// which arguments (their SHA-256). CallTool reads it back from Temporal.
type ApprovalGrant struct {
	Seq       int64  `json:"seq"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments_sha256"`
	// Run is the child run whose call it approves when a person answered
	// it through an ancestor run (see ChildWait); empty when the run that
	// makes the call was answered itself.
	Run string `json:"run,omitempty"`
}

// GrantFor is the grant that approves call, numbered seq.
func GrantFor(seq int64, call longhaul.ToolCall) ApprovalGrant {
	sum := sha256.Sum256([]byte(call.Arguments))
	return ApprovalGrant{Seq: seq, Tool: call.Name, Arguments: hex.EncodeToString(sum[:])}
}
