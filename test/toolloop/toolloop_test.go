// Package toolloop runs the chat tool loop through the whole stack against
// the scripted model's Ollama dialect: a malformed tool call does not
// poison the chat, a silence Ollama explains (a tool call being written, a
// model loading) is waited through, and an answer cut by its limit, or
// spent thinking, is told to the Open WebUI user.
package toolloop

import (
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/owuitest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

var ada = owuitest.User{ID: "u1", Email: "ada@example.com", Name: "Ada", Role: "user"}

func newChat(env *testenv.Env, agent string) *owuitest.Chat {
	conn := &owuitest.Connection{BaseURL: env.URL + "/v1", ForwardUserInfo: true, Headers: owuitest.ForwardMessageID()}
	return conn.NewChat(ada, agent)
}

// TestChatSurvivesAMalformedToolCall: on Ollama's dialect, whose server
// refuses for good a history holding a call whose arguments are not a JSON
// object (400 "invalid tool call arguments"), a model's malformed call is
// not run, the model reads what it sent, and the turn answers; so does the
// next turn, whose history carries the call again.
func TestChatSurvivesAMalformedToolCall(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	env.Model.SetFlavour(llmtest.FlavourOllama)
	env.Model.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{Name: "current_time", Arguments: `{"timezone": "Europe/Ber`}))
	env.Model.Enqueue(llmtest.Text("Sorry, I could not read the time."))
	env.Model.Enqueue(llmtest.Text("It is spring."))

	ch := newChat(env, "assistant")
	first := owuitest.OK(t, ch.Ask("What time is it in Berlin?"))
	if !strings.Contains(first.Content, "could not read the time") {
		t.Fatalf("first answer %q", first.Content)
	}
	reqs := env.Model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the model got %d requests, want 2", len(reqs))
	}
	var result string
	for _, m := range reqs[1].Chat.Messages {
		for _, tc := range m.ToolCalls {
			if tc.Function.Arguments != "{}" {
				t.Errorf("the malformed call went back with arguments %q, want {}", tc.Function.Arguments)
			}
		}
		if m.Role == "tool" {
			result = m.Content
		}
	}
	if !strings.Contains(result, "did not run") || !strings.Contains(result, "Europe/Ber") {
		t.Errorf("the tool result %q does not tell the model what it sent and that nothing ran", result)
	}

	ch.Answer(first.Content)
	if second := owuitest.OK(t, ch.Ask("And what season is it?")); second.Content != "It is spring." {
		t.Fatalf("second answer %q", second.Content)
	}
}

// TestSilencesOllamaExplains: a tool call Ollama writes in silence, and a
// model it loads before any header, each silent for several idle timeouts
// (scaled down), are waited through while the server answers, and the turn
// answers on the first attempt.
func TestSilencesOllamaExplains(t *testing.T) {
	const idle = 200 * time.Millisecond
	env := testenv.Start(t, testenv.Options{ModelIdleTimeout: idle, ModelSilenceMax: time.Minute})
	env.Model.SetFlavour(llmtest.FlavourOllama)
	env.Model.SetOllamaModel(llmtest.OllamaModel{Name: "llmtest", LoadDelay: 4 * idle})
	env.Model.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{Name: "current_time", Arguments: `{"timezone":"UTC"}`}).With(llmtest.ToolCallSilence(5 * idle)))
	env.Model.Enqueue(llmtest.Text("It is noon."))

	got := owuitest.OK(t, newChat(env, "assistant").Ask("What time is it?"))
	if !strings.HasSuffix(got.Content, "It is noon.") || !strings.Contains(got.Content, `name="current_time"`) {
		t.Fatalf("answer %q", got.Content)
	}
	if n := len(env.Model.Requests()); n != 2 {
		t.Errorf("the model got %d requests, want 2 (no attempt retried)", n)
	}
}

// TestCutAnswersAreTold: an answer cut by the model's limit, and a think
// that used the whole limit, end with a status line Open WebUI shows.
func TestCutAnswersAreTold(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	env.Model.SetFlavour(llmtest.FlavourOllama)
	env.Model.Enqueue(llmtest.Text("The first half of", llmtest.FinishReason("length")))
	env.Model.Enqueue(llmtest.Text("", llmtest.Reasoning("Let me weigh every option at length"), llmtest.FinishReason("length")))

	ch := newChat(env, "naked")
	cut := owuitest.OK(t, ch.Ask("Tell me a long story."))
	if cut.FinishReason != "length" || !lastSays(cut.Statuses, "cut off at the model's output limit") {
		t.Errorf("cut answer: finish %q, statuses %q", cut.FinishReason, cut.Statuses)
	}
	ch.Answer(cut.Content)
	thought := owuitest.OK(t, ch.Ask("Think hard."))
	if thought.FinishReason != "length" || thought.Content != "" || !lastSays(thought.Statuses, "spent its whole output limit (max_tokens) thinking") {
		t.Errorf("all-thinking answer: finish %q, content %q, statuses %q", thought.FinishReason, thought.Content, thought.Statuses)
	}
}

func lastSays(statuses []string, s string) bool {
	return len(statuses) > 0 && strings.Contains(statuses[len(statuses)-1], s)
}
