package runs_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
)

// startChatRun starts, through the gate, a runs API run of ann's chat.
func startChatRun(t *testing.T, g *runs.Gate, id, chat string, follows *contract.Follow) {
	t.Helper()
	in := contract.AgentInput{
		Agent: "a", User: longhaul.User{Principal: "ann"}, Metadata: map[string]string{"chat_id": chat},
		Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "hi"}}, Follows: follows,
	}
	if _, err := g.StartOrAttach(context.Background(), runs.StartRequest{ID: id, Input: in}); err != nil {
		t.Fatal(err)
	}
}

func chatOf(chat string) string {
	return runs.ChatOf(contract.AgentInput{User: longhaul.User{Principal: "ann"}, Metadata: map[string]string{"chat_id": chat}})
}

// TestMultitaskStrategies: each strategy against a chat with one running
// run, on the fake.
func TestMultitaskStrategies(t *testing.T) {
	for _, tc := range []struct {
		strategy string
		check    func(t *testing.T, fake *runsfake.Service, out runs.MultitaskOutcome, err error)
	}{
		{contract.MultitaskReject, func(t *testing.T, fake *runsfake.Service, out runs.MultitaskOutcome, err error) {
			if r := refusal(t, err, runs.ErrRunInProgress); !strings.Contains(r.Message, "run-1") {
				t.Errorf("refusal %q does not name the run", r.Message)
			}
		}},
		{contract.MultitaskEnqueue, func(t *testing.T, fake *runsfake.Service, out runs.MultitaskOutcome, err error) {
			st, _ := fake.State(context.Background(), "run-1")
			if err != nil || out.Follows == nil || out.Follows.Run != "run-1" || !out.Follows.Prepend || st.Status != contract.StatusRunning {
				t.Errorf("%+v %v, the run is %s", out, err, st.Status)
			}
		}},
		{contract.MultitaskInterrupt, func(t *testing.T, fake *runsfake.Service, out runs.MultitaskOutcome, err error) {
			st, _ := fake.State(context.Background(), "run-1")
			if err != nil || out.Follows == nil || out.Follows.Run != "run-1" || st.Status != contract.StatusCancelled {
				t.Errorf("%+v %v, the run is %s", out, err, st.Status)
			}
		}},
		{contract.MultitaskSteer, func(t *testing.T, fake *runsfake.Service, out runs.MultitaskOutcome, err error) {
			if err != nil || !out.Steered || out.Follows != nil || !slices.Equal(fake.Run("run-1").Steers(), []string{"and this"}) {
				t.Errorf("%+v %v", out, err)
			}
		}},
		{contract.MultitaskRollback, func(t *testing.T, fake *runsfake.Service, out runs.MultitaskOutcome, err error) {
			if err != nil || out.Follows == nil || out.Follows.Run != "run-0" || !slices.Equal(out.Follows.Forget, []string{"run-1"}) || fake.Run("run-1") != nil {
				t.Errorf("%+v %v", out, err)
			}
		}},
	} {
		t.Run(tc.strategy, func(t *testing.T) {
			fake := runsfake.New()
			g := runs.NewGate(fake, runs.GateConfig{})
			// run-1 followed run-0, which ended.
			startChatRun(t, g, "run-1", "c1", &contract.Follow{Run: "run-0", Prepend: true})
			// Another chat's run and another principal's run of the same
			// chat id are not the chat's.
			startChatRun(t, g, "run-other", "c2", nil)
			fake.Add("run-bob", "bob", contract.AgentInput{Agent: "a"})
			out, err := g.Multitask(context.Background(), runs.Multitask{
				Strategy: tc.strategy, Chat: chatOf("c1"), Owner: "ann", Text: "and this", Prepend: true,
			})
			if err == nil && out.Run != "run-1" {
				t.Fatalf("acted on %q", out.Run)
			}
			tc.check(t, fake, out, err)
		})
	}
}

// TestMultitaskNothingRunning: no run of the chat runs, or only one of the
// same turn (a retry, a Regenerate) or a background request's: the message
// starts its run as any other.
func TestMultitaskNothingRunning(t *testing.T) {
	fake := runsfake.New()
	g := runs.NewGate(fake, runs.GateConfig{})
	startChatRun(t, g, "run-done", "c1", nil)
	fake.Run("run-done").Finish(contract.AgentResult{Content: "ok"})
	chat := "ann/c3"
	turn := contract.AgentInput{Agent: "a", User: longhaul.User{Principal: "ann"}, ChatID: chat, Turn: 2,
		Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "hi"}}}
	if _, err := g.StartOrAttach(context.Background(), runs.StartRequest{ID: "chat-turn-2", Input: turn}); err != nil {
		t.Fatal(err)
	}
	startChatRun(t, g, "run-running", "running", nil)
	bg := turn
	bg.Background, bg.Turn = true, 1
	if _, err := g.StartOrAttach(context.Background(), runs.StartRequest{ID: "run-title", Input: bg}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []runs.Multitask{
		{Strategy: contract.MultitaskReject, Chat: chatOf("c1"), Owner: "ann"},
		{Strategy: contract.MultitaskReject, Chat: chat, Owner: "ann", Turn: 2},
		{Strategy: contract.MultitaskReject, Chat: chatOf("c1"), Owner: "bob"},
		// A chat route's first message looks for no earlier run, not
		// even a runs API run of the same chat.
		{Strategy: contract.MultitaskReject, Chat: chatOf("running"), Owner: "ann", Turn: 1},
	} {
		out, err := g.Multitask(context.Background(), m)
		if err != nil || out.Strategy != "" || out.Follows != nil {
			t.Errorf("%+v: %+v %v", m, out, err)
		}
	}
	out, err := g.Multitask(context.Background(), runs.Multitask{Strategy: contract.MultitaskReject, Chat: chat, Owner: "ann", Turn: 3})
	if r := refusal(t, err, runs.ErrRunInProgress); !strings.Contains(r.Message, "chat-turn-2") {
		t.Errorf("turn 3 against turn 2's run: %+v %v", out, err)
	}
}

// TestMultitaskSteerFallsBack: a run that takes no message now (it waits
// for a person, runs a plan) gets the message queued after it instead.
func TestMultitaskSteerFallsBack(t *testing.T) {
	fake := runsfake.New()
	g := runs.NewGate(fake, runs.GateConfig{})
	startChatRun(t, g, "run-1", "c1", nil)
	fake.Run("run-1").RefuseSteer()
	out, err := g.Multitask(context.Background(), runs.Multitask{Strategy: contract.MultitaskSteer, Chat: chatOf("c1"), Owner: "ann", Text: "x", Prepend: true})
	if err != nil || out.Steered || out.Strategy != contract.MultitaskEnqueue || out.Follows == nil || out.Follows.Run != "run-1" {
		t.Fatalf("%+v %v", out, err)
	}
	if _, err := g.Multitask(context.Background(), runs.Multitask{Strategy: "later", Chat: chatOf("c1"), Owner: "ann"}); err == nil {
		t.Fatal("an unknown strategy was taken")
	}
}
