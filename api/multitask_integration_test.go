package api_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/owuitest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// A message while a run is going: for each multitask strategy, a chat's
// first message starts a run the scripted model holds mid-answer; the API
// that took it stops, and the second message goes to another API process
// (a restart: nothing of the first run is in the new process's memory).
// The tests sync by waiting until the first run lists as running (GET
// /v1/runs, Temporal's visibility, which may lag a start a moment) and the
// model holds its call, never by sleeping.

// multitaskModel scripts the model: a question that starts with "hold" is
// answered once the test closes its gate; one that starts with "stall"
// streams a few words and stalls until the run is cancelled; any other
// last user message is answered "answer to <it>".
type multitaskModel struct {
	mu    sync.Mutex
	gates map[string]chan struct{}
}

func newMultitaskModel(env *testenv.Env) *multitaskModel {
	m := &multitaskModel{gates: map[string]chan struct{}{}}
	env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		q := r.LastUserMessage()
		switch {
		case strings.HasPrefix(q, "hold"):
			<-m.gate(q)
			return llmtest.Text("first answer to " + q)
		case strings.HasPrefix(q, "stall") && !strings.Contains(llmtest.MessageText(r.Chat.Messages[len(r.Chat.Messages)-1]), "answer"):
			return llmtest.Text("partial words of a long answer that never ends", llmtest.ChunkSize(2), llmtest.StallAfter(2))
		}
		return llmtest.Text("answer to " + q)
	}))
	return m
}

// gate is the gate of question q.
func (m *multitaskModel) gate(q string) chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gates[q] == nil {
		m.gates[q] = make(chan struct{})
	}
	return m.gates[q]
}

// release lets the held call of q answer.
func (m *multitaskModel) release(q string) { close(m.gate(q)) }

// waitHeld waits until the run lists as running and the model got the
// question q.
func waitHeld(t *testing.T, ctx context.Context, env *testenv.Env, base, run, q string, headers map[string]string) {
	t.Helper()
	for {
		listed := false
		for _, r := range listRunsAt(t, base, url.Values{"status": {"running"}}, headers) {
			listed = listed || r.ID == run
		}
		asked := false
		for _, r := range env.Model.Requests() {
			asked = asked || r.LastUserMessage() == q
		}
		if listed && asked {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run %s never listed as running with its model call (listed %v, asked %v)", run, listed, asked)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// postRun posts a run to base and decodes the 202 answer.
func postRun(t *testing.T, base string, body map[string]any, headers map[string]string) wire.RunStarted {
	t.Helper()
	return decode[wire.RunStarted](t, doWant(t, base, "POST", "/v1/runs", body, headers, http.StatusAccepted))
}

// firstRun starts a chat's first run on a fresh API, waits until it is
// held, and stops that API; it returns the API the second message goes to.
func firstRun(t *testing.T, ctx context.Context, env *testenv.Env, chat, q string, headers map[string]string) (string, *testenv.APIServer) {
	t.Helper()
	api1 := env.StartAPI()
	r := startRunAt(t, api1.URL, map[string]any{"agent": "naked", "input": q, "metadata": map[string]string{"chat_id": chat}}, headers)
	waitHeld(t, ctx, env, api1.URL, r.ID, q, headers)
	api1.Stop()
	return r.ID, env.StartAPI()
}

// TestMultitaskRunsAPI: each strategy of POST /v1/runs' multitask_strategy
// with a second message sent through another API process.
func TestMultitaskRunsAPI(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	m := newMultitaskModel(env)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ann := user("ann")
	second := func(chat, strategy, q string) map[string]any {
		body := map[string]any{"agent": "naked", "input": q, "metadata": map[string]string{"chat_id": chat}}
		if strategy != "" {
			body["multitask_strategy"] = strategy
		}
		return body
	}
	// replaces holds the first run of the chat named for want on question
	// q1, sends the chat's second message q2 with strategy (empty: the
	// default) through another API process, and checks that it started a
	// new run naming want and the first run; it returns the two runs.
	replaces := func(t *testing.T, strategy, want, q1, q2 string) (first, next string) {
		t.Helper()
		chat := "c-" + want
		first, api2 := firstRun(t, ctx, env, chat, q1, ann)
		t.Cleanup(api2.Stop)
		got := postRun(t, api2.URL, second(chat, strategy, q2), ann)
		if got.Multitask == nil || got.Multitask.Strategy != want || got.Multitask.Run != first || got.ID == first {
			t.Fatalf("%s answered %+v %+v", want, got.RunCreated, got.Multitask)
		}
		return first, got.ID
	}

	t.Run("reject", func(t *testing.T) {
		first, api2 := firstRun(t, ctx, env, "c-reject", "hold reject", ann)
		defer api2.Stop()
		resp := doAt(t, api2.URL, "POST", "/v1/runs", second("c-reject", "reject", "again"), ann)
		e := decode[wire.ErrorBody](t, resp)
		if resp.StatusCode != http.StatusConflict || e.Error.Code != "run_in_progress" || !strings.Contains(e.Error.Message, first) {
			t.Fatalf("reject = %d %+v", resp.StatusCode, e.Error)
		}
		m.release("hold reject")
		followToDone(t, ctx, env, first, ann)
	})

	t.Run("enqueue", func(t *testing.T) {
		// No strategy named: enqueue is the runs API's default.
		first, next := replaces(t, "", contract.MultitaskEnqueue, "hold enqueue", "and then?")
		m.release("hold enqueue")
		followToDone(t, ctx, env, next, ann)
		if r := getRun(t, env, next, ann); r.Result != "answer to and then?" {
			t.Fatalf("the queued run answered %q", r.Result)
		}
		if r := getRun(t, env, first, ann); r.Status != contract.StatusCompleted {
			t.Fatalf("the first run is %s", r.Status)
		}
		// The queued run read the first run's answer before its question.
		if last := lastCall(t, env); !strings.Contains(requestText(last), "first answer to hold enqueue") {
			t.Fatalf("the queued run's model call lacks the first answer: %s", requestText(last))
		}
	})

	t.Run("interrupt", func(t *testing.T) {
		first, next := replaces(t, "interrupt", contract.MultitaskInterrupt, "stall interrupt", "stop, answer this")
		followToDone(t, ctx, env, next, ann)
		if r := getRun(t, env, first, ann); r.Status != contract.StatusCancelled || r.Result == "" {
			t.Fatalf("the interrupted run is %s with %q", r.Status, r.Result)
		}
		// The new run read the interrupted run's partial answer.
		partial := getRun(t, env, first, ann).Result
		if last := lastCall(t, env); !strings.Contains(requestText(last), partial) || last.LastUserMessage() != "stop, answer this" {
			t.Fatalf("the new run's model call lacks the partial answer %q: %s", partial, requestText(last))
		}
	})

	t.Run("steer", func(t *testing.T) {
		first, api2 := firstRun(t, ctx, env, "c-steer", "hold steer", ann)
		defer api2.Stop()
		got := postRun(t, api2.URL, second("c-steer", "steer", "in French, please"), ann)
		if got.ID != first || got.Multitask == nil || !got.Multitask.Steered || got.Status != contract.StatusRunning {
			t.Fatalf("steer answered %+v %+v", got.RunCreated, got.Multitask)
		}
		m.release("hold steer")
		followToDone(t, ctx, env, first, ann)
		if r := getRun(t, env, first, ann); r.Result != "answer to in French, please" {
			t.Fatalf("the steered run answered %q", r.Result)
		}
		if last := lastCall(t, env); last.LastUserMessage() != "in French, please" || !strings.Contains(requestText(last), "first answer to hold steer") {
			t.Fatalf("the model's next call: %s", requestText(last))
		}
	})

	t.Run("rollback", func(t *testing.T) {
		first, next := replaces(t, "rollback", contract.MultitaskRollback, "stall rollback", "forget that")
		followToDone(t, ctx, env, next, ann)
		if resp := do(t, env, "GET", "/v1/runs/"+first, nil, ann); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("GET the rolled back run = %d", resp.StatusCode)
		}
		if last := lastCall(t, env); strings.Contains(requestText(last), "partial words") {
			t.Fatalf("the new run read the rolled back run's work: %s", requestText(last))
		}
	})
}

// TestMultitaskOpenWebUI: a chat's new message in Open WebUI's request
// shape while the run of its previous message goes on (the user pressed
// Stop, which closes the stream, and typed again), sent through another
// API process with each LONGHAUL_CHAT_MULTITASK.
func TestMultitaskOpenWebUI(t *testing.T) {
	env := owuiEnv(t)
	m := newMultitaskModel(env)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, strategy := range contract.MultitaskStrategies {
		t.Run(strategy, func(t *testing.T) {
			api1 := env.StartAPI()
			conn := owuiConn(env)
			conn.BaseURL, conn.Tools = api1.URL+"/v1", nil
			chat := conn.NewChat(ann, "naked")
			q := "hold " + strategy
			if strategy == contract.MultitaskInterrupt || strategy == contract.MultitaskRollback {
				q = "stall " + strategy
			}
			resp, err := chat.Ask(q).Send(ctx)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("first message: %v %v", resp, err)
			}
			first := resp.Header.Get(api.HeaderRunID)
			waitHeld(t, ctx, env, api1.URL, first, q, owuiUser(t, conn))
			resp.Body.Close() // Stop
			chat.Answer("partial")
			api1.Stop()
			api2 := env.StartAPI(func(c *api.Config) { c.ChatMultitask = strategy })
			defer api2.Stop()
			conn.BaseURL = api2.URL + "/v1"
			// Streamed: the answer's headers come as soon as the API took
			// the message, before the held first run is let go.
			resp, err = chat.Ask("now this").Send(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			checkOWUIMultitask(t, ctx, env, m, strategy, q, first, resp)
		})
	}
}

// checkOWUIMultitask checks the answer to the second message of strategy.
func checkOWUIMultitask(t *testing.T, ctx context.Context, env *testenv.Env, m *multitaskModel, strategy, q, first string, resp *http.Response) {
	t.Helper()
	switch strategy {
	case contract.MultitaskReject:
		e := decode[wire.ErrorBody](t, resp)
		if resp.StatusCode != http.StatusConflict || e.Error.Code != "run_in_progress" {
			t.Fatalf("reject = %d %+v", resp.StatusCode, e.Error)
		}
		m.release(q)
		return
	case contract.MultitaskEnqueue, contract.MultitaskSteer:
		m.release(q)
	}
	got, run := readStream(t, resp).text, resp.Header.Get(api.HeaderRunID)
	if !strings.Contains(got, "answer to now this") {
		t.Fatalf("%s: the answer is %q", strategy, got)
	}
	if (strategy == contract.MultitaskSteer) != (run == first) {
		t.Fatalf("%s: answered by run %s, the first was %s", strategy, run, first)
	}
	if strategy == contract.MultitaskRollback {
		if r := doAt(t, env.URL, "GET", "/v1/runs/"+first, nil, owuiUser(t, owuiConn(env))); r.StatusCode != http.StatusNotFound {
			t.Fatalf("GET the rolled back run = %d", r.StatusCode)
		}
	}
}

// owuiUser is the headers that read runs as Ann through conn.
func owuiUser(t *testing.T, conn *owuitest.Connection) map[string]string {
	t.Helper()
	return map[string]string{"Authorization": "Bearer " + owuiKey, owuitest.HeaderUserJWT: conn.Token(ann)}
}
