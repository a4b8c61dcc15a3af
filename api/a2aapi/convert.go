package a2aapi

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
)

// The pure converters from a run's state and events to A2A's objects.

// MetaContext is the run metadata key that carries an A2A task's
// contextId: the runs API's chat_id, so a context's tasks are one chat's
// runs and the chat's multitask strategy applies to them
// (runs.Request.ChatKey).
const MetaContext = "chat_id"

// metaPushURL keeps, in a run's metadata, where its push notifications
// go (the run's own webhook's URL), for Get/ListTaskPushNotificationConfig.
const metaPushURL = "a2a_push_url"

// StateOf is the A2A state of a run status (contract.Status*): a run
// waiting for a person's approval or input is INPUT_REQUIRED (spec
// §4.1.3; StatusOf, which sees what it waits for, makes a run waiting
// for an account connection AUTH_REQUIRED); a run that recorded no
// status yet is WORKING.
func StateOf(status string) string {
	switch status {
	case contract.StatusWaiting:
		return StateInputRequired
	case contract.StatusCompleted:
		return StateCompleted
	case contract.StatusFailed:
		return StateFailed
	case contract.StatusCancelled:
		return StateCanceled
	}
	return StateWorking
}

// terminal reports whether an A2A state is final (spec §3.1.6).
func terminal(state string) bool {
	switch state {
	case StateCompleted, StateFailed, StateCanceled, StateRejected:
		return true
	}
	return false
}

// textPart is a text Part.
func textPart(s string) Part { return Part{Text: &s} }

// agentMessage is the agent's message of text in a task.
func agentMessage(id, taskID, contextID, text string) *Message {
	return &Message{MessageID: id, TaskID: taskID, ContextID: contextID, Role: RoleAgent, Parts: []Part{textPart(text)}}
}

// StatusOf is the status of run taskID in state st at time at: its A2A
// state and the message that goes with it — the question of a run
// waiting for approval, the answer of a completed run, the error of a
// failed one.
func StatusOf(taskID, contextID string, st contract.RunState, at time.Time) TaskStatus {
	s := TaskStatus{State: StateOf(st.Status), Timestamp: &at}
	if w := st.Waiting; s.State == StateInputRequired && w != nil && w.Kind == contract.WaitAuth {
		s.State = StateAuthRequired
	}
	switch s.State {
	case StateAuthRequired:
		s.Message = agentMessage(taskID+"-waiting", taskID, contextID, AuthText(st.Waiting.Server, st.Waiting.URL))
	case StateInputRequired:
		s.Message = agentMessage(taskID+"-waiting", taskID, contextID, WaitingText(st.Waiting))
	case StateCompleted:
		s.Message = agentMessage(taskID+"-answer", taskID, contextID, st.Result)
	case StateFailed:
		s.Message = agentMessage(taskID+"-error", taskID, contextID, st.Error)
	}
	return s
}

// WaitingText is what a run waiting for w asks of the person: an
// approval is answered by a message with taskId set whose text says yes
// or no (contract/approval.go reads it), or with a data part
// {"approve": true|false}.
func WaitingText(w *contract.Waiting) string {
	if w == nil || w.Kind != contract.WaitApproval {
		return "The run waits for input: answer with a message for this task."
	}
	tool := w.Tool
	if w.Agent != "" {
		tool += " (by the agent " + w.Agent + ", which this one asked)"
	}
	return fmt.Sprintf("Approve the call of tool %s with arguments %s? Answer yes or no (or a data part {\"approve\": true|false}) in a message for this task.", tool, w.Arguments)
}

// AuthText is what a run waiting for its user to connect their account of
// server asks (AUTH_REQUIRED): to open the connect link in a browser. The
// task goes on by itself once the account is connected; a message does
// not answer it.
func AuthText(server, url string) string {
	return fmt.Sprintf("Connect your %s account: open %s in a browser and confirm. The task goes on by itself once it is connected.", server, url)
}

// artifactOf is the artifact of a durable content event: the whole text
// of one model call, named by the event's offset.
func artifactOf(e longhaul.Event) (Artifact, bool) {
	var d longhaul.ContentData
	if e.Type != longhaul.EventContent || e.Decode(&d) != nil || d.Text == "" || d.Cancelled {
		return Artifact{}, false
	}
	return Artifact{ArtifactID: "text-" + strconv.FormatInt(e.Offset, 10), Name: "text", Parts: []Part{textPart(d.Text)}}, true
}

// TaskOf is run taskID as an A2A task: its status from st, its artifacts
// from the content events of its log, its history the user's message
// (user, when known) and the agent's texts, the last historyLength of
// them (nil: all, 0: none; spec §3.2.4).
func TaskOf(taskID, contextID string, st contract.RunState, log []longhaul.Event, user *Message, historyLength *int32, at time.Time) Task {
	t := Task{ID: taskID, ContextID: contextID, Status: StatusOf(taskID, contextID, st, at)}
	var history []Message
	if user != nil {
		history = append(history, *user)
	}
	for _, e := range log {
		if a, ok := artifactOf(e); ok {
			t.Artifacts = append(t.Artifacts, a)
			history = append(history, *agentMessage(a.ArtifactID, taskID, contextID, *a.Parts[0].Text))
		}
	}
	if historyLength != nil {
		n := max(int(*historyLength), 0)
		history = history[max(len(history)-n, 0):]
	}
	if len(history) > 0 {
		t.History = history
	}
	return t
}

// userMessage is the user's message a run started with, as A2A's.
func userMessage(taskID, contextID string, msgs []longhaul.Message) *Message {
	text := longhaul.LastUserText(msgs)
	if text == "" {
		return nil
	}
	m := Message{MessageID: taskID + "-request", TaskID: taskID, ContextID: contextID, Role: RoleUser, Parts: []Part{textPart(text)}}
	return &m
}

// Converter turns one run's events into stream responses, in order.
type Converter struct {
	TaskID, ContextID string
}

// Event is what durable event e adds to the task's stream: a content
// event's text as an artifact update, a tool call's start as a WORKING
// status update naming it, an approval asked as INPUT_REQUIRED (with the
// question) and one given as WORKING again. The end (done) is the
// caller's, from the run's final state (Final). Other events add
// nothing.
func (c Converter) Event(e longhaul.Event) []StreamResponse {
	status := func(state, text string) []StreamResponse {
		s := TaskStatus{State: state, Timestamp: &e.Time}
		if text != "" {
			s.Message = agentMessage(c.TaskID+"-"+strconv.FormatInt(e.Offset, 10), c.TaskID, c.ContextID, text)
		}
		return []StreamResponse{{StatusUpdate: &StatusUpdate{TaskID: c.TaskID, ContextID: c.ContextID, Status: s}}}
	}
	switch e.Type {
	case longhaul.EventContent:
		if a, ok := artifactOf(e); ok {
			return []StreamResponse{{ArtifactUpdate: &ArtifactUpdate{TaskID: c.TaskID, ContextID: c.ContextID, Artifact: a, LastChunk: true}}}
		}
	case longhaul.EventToolStart:
		var d longhaul.ToolStartData
		if e.Decode(&d) == nil {
			return status(StateWorking, "Calling tool "+d.Name+".")
		}
	case longhaul.EventApprovalRequired:
		var d longhaul.ApprovalRequiredData
		if e.Decode(&d) == nil {
			return status(StateInputRequired, WaitingText(&contract.Waiting{Kind: contract.WaitApproval, Tool: d.Name, Arguments: d.Arguments, Agent: d.Agent}))
		}
	case longhaul.EventApproval:
		return status(StateWorking, "")
	case longhaul.EventAuthRequired:
		var d longhaul.AuthRequiredData
		if e.Decode(&d) == nil {
			return status(StateAuthRequired, AuthText(d.Server, d.URL))
		}
	case longhaul.EventAuth:
		return status(StateWorking, "")
	}
	return nil
}

// Final is the last status update of a run that ended in state st.
func (c Converter) Final(st contract.RunState, at time.Time) StreamResponse {
	return StreamResponse{StatusUpdate: &StatusUpdate{TaskID: c.TaskID, ContextID: c.ContextID, Status: StatusOf(c.TaskID, c.ContextID, st, at)}}
}

// InputOf is the answer a message gives a run that waits for a person:
// a data part {"approve": true|false} is a decision; text parts are the
// person's words, which the run reads as yes, no or a reply
// (contract/approval.go), as POST /v1/runs/{id}/input's text is.
func InputOf(m *Message) (approve *bool, text *string, err error) {
	var words []string
	for _, p := range m.Parts {
		switch {
		case p.Text != nil:
			words = append(words, *p.Text)
		case len(p.Data) > 0:
			var d struct {
				Approve *bool `json:"approve"`
			}
			if json.Unmarshal(p.Data, &d) != nil || d.Approve == nil {
				return nil, nil, errInvalidParams.with(`message.parts: a data part answers an approval as {"approve": true|false}`)
			}
			approve = d.Approve
		default:
			return nil, nil, errContentType.with("message.parts: this agent takes text and data parts only")
		}
	}
	joined := strings.TrimSpace(strings.Join(words, "\n"))
	switch {
	case approve != nil && joined != "":
		return nil, nil, errInvalidParams.with(`message.parts: send either {"approve": …} or text, not both`)
	case approve != nil:
		return approve, nil, nil
	case joined == "":
		return nil, nil, errInvalidParams.with("message.parts: no text")
	}
	return nil, &joined, nil
}

// TextOf is the text of a message that starts a task: its text parts
// joined; a file or raw part is refused (the cards say text in, text out).
func TextOf(m *Message) (string, error) {
	var words []string
	for _, p := range m.Parts {
		switch {
		case p.Text != nil:
			words = append(words, *p.Text)
		case len(p.Data) > 0:
			words = append(words, string(p.Data))
		default:
			return "", errContentType.with("message.parts: this agent takes text and data parts only")
		}
	}
	text := strings.TrimSpace(strings.Join(words, "\n"))
	if text == "" {
		return "", errInvalidParams.with("message.parts: no text")
	}
	return text, nil
}
