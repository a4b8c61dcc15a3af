package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"github.com/longhaul-dev/longhaul/skills"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// gatedTemporal is a Temporal client whose ExecuteWorkflow says which
// question it starts (on started) and returns only when the test lets it
// (a value on release): the starts of the admission tests are held as long
// as the test wants, and their order is seen. Any other call panics (a nil
// client.Client underneath).
type gatedTemporal struct {
	client.Client
	started chan string
	release chan struct{}
	// answers holds each started run's answer, by run id.
	answers *sync.Map
}

func (gatedTemporal) WorkflowService() workflowservice.WorkflowServiceClient { return nil }

func (g gatedTemporal) ExecuteWorkflow(ctx context.Context, opts client.StartWorkflowOptions, _ any, args ...any) (client.WorkflowRun, error) {
	q := args[0].(contract.AgentInput).Messages[0].Content
	g.started <- q
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	g.answers.Store(opts.ID, "answer to "+q)
	return answeredRun{id: opts.ID, answer: "answer to " + q}, nil
}

// GetWorkflow is the run ExecuteWorkflow started under id, answered.
func (g gatedTemporal) GetWorkflow(_ context.Context, id, _ string) client.WorkflowRun {
	answer, _ := g.answers.Load(id)
	return answeredRun{id: id, answer: answer.(string)}
}

// answeredRun is a run that has answered.
type answeredRun struct {
	client.WorkflowRun
	id, answer string
}

func (r answeredRun) GetID() string { return r.id }

func (r answeredRun) Get(_ context.Context, v any) error {
	*v.(*contract.AgentResult) = contract.AgentResult{Content: r.answer}
	return nil
}

// admissionServer is an API on a gatedTemporal with adm, and the channel
// its admission queue's length goes to as it changes.
func admissionServer(t *testing.T, adm runs.Admission) (*Server, gatedTemporal, <-chan int) {
	t.Helper()
	catalog, err := skills.Load(skills.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	g := gatedTemporal{started: make(chan string), release: make(chan struct{}), answers: &sync.Map{}}
	s := New(Config{TaskQueue: "q", Admission: adm}, runs.NewTemporal(g, runs.Config{TaskQueue: "q"}), catalog, slog.New(slog.DiscardHandler))
	depth := make(chan int, 100)
	s.gate.Observe(nil, func(n int) { depth <- n })
	return s, g, depth
}

// answer is what one chat request got.
type answer struct {
	status     int
	retryAfter string
	body       []byte
	err        error
}

// ask posts a non-streaming chat request asking q and sends what it got to
// the returned channel.
func ask(s *Server, q string) <-chan answer {
	out := make(chan answer, 1)
	body, _ := json.Marshal(map[string]any{"model": "naked", "messages": []map[string]string{{"role": "user", "content": q}}})
	go func() {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := s.App().Test(req, -1)
		if err != nil {
			out <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		out <- answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: b, err: err}
	}()
	return out
}

func wantDepth(t *testing.T, depth <-chan int, want int) {
	t.Helper()
	if got := <-depth; got != want {
		t.Fatalf("admission queue length %d, want %d", got, want)
	}
}

func wantAnswer(t *testing.T, got answer, q string) {
	t.Helper()
	var cc wire.ChatCompletion
	if got.err != nil || got.status != http.StatusOK || json.Unmarshal(got.body, &cc) != nil || len(cc.Choices) != 1 {
		t.Fatalf("%s: %d %s (%v), want 200 with the answer", q, got.status, got.body, got.err)
	}
	if c := cc.Choices[0].Message.Content; c != "answer to "+q {
		t.Errorf("%s answered %q, want %q", q, c, "answer to "+q)
	}
}

func wantTooMany(t *testing.T, got answer, what string) {
	t.Helper()
	var eb wire.ErrorBody
	if got.err != nil || json.Unmarshal(got.body, &eb) != nil {
		t.Fatalf("%s: %d %s (%v)", what, got.status, got.body, got.err)
	}
	if got.status != http.StatusTooManyRequests || got.retryAfter != fmt.Sprint(runs.RetryAdmission) ||
		eb.Error.Type != "rate_limit_error" || eb.Error.Code != "rate_limit_exceeded" || eb.Error.Message == "" {
		t.Errorf("%s: %d Retry-After %q %s; want 429, Retry-After %d, a rate_limit_exceeded error", what, got.status, got.retryAfter, got.body, runs.RetryAdmission)
	}
}

// The admission queue is internal/runs's (runs.Gate); these tests check
// what a client of the API sees of it: the order of the starts, and the
// 429 with Retry-After of a refusal.

// TestAdmissionQueuesStartsInOrder: with one start at a time and a queue
// of two, the starts past the first wait and go in the order they came as
// each start before them ends, every request answered; a request past the
// queue's depth gets 429 with Retry-After at once, while the others wait.
func TestAdmissionQueuesStartsInOrder(t *testing.T) {
	s, g, depth := admissionServer(t, runs.Admission{Concurrency: 1, Queue: 2})
	first := ask(s, "q0")
	if got := <-g.started; got != "q0" {
		t.Fatalf("started %q, want q0", got)
	}
	queued := []<-chan answer{ask(s, "q1")}
	wantDepth(t, depth, 1)
	queued = append(queued, ask(s, "q2"))
	wantDepth(t, depth, 2)

	wantTooMany(t, <-ask(s, "q3"), "a request past the queue")

	g.release <- struct{}{}
	wantAnswer(t, <-first, "q0")
	for i, q := range []string{"q1", "q2"} {
		if got := <-g.started; got != q {
			t.Fatalf("started %q, want %s: the queue goes in the order it was joined", got, q)
		}
		wantDepth(t, depth, 1-i)
		g.release <- struct{}{}
		wantAnswer(t, <-queued[i], q)
	}
	// That no start holds a slot after it is internal/runs's to test
	// (TestAdmissionLeftQueue).
}

// TestAdmissionWaitBound: a start that waits in the queue longer than
// MaxWait gets 429 with Retry-After and leaves the queue; the start that
// held it up still answers.
func TestAdmissionWaitBound(t *testing.T) {
	s, g, depth := admissionServer(t, runs.Admission{Concurrency: 1, Queue: 5, MaxWait: 20 * time.Millisecond})
	first := ask(s, "q0")
	<-g.started
	wantTooMany(t, <-ask(s, "q1"), "a request past the wait bound")
	wantDepth(t, depth, 1)
	wantDepth(t, depth, 0)
	g.release <- struct{}{}
	wantAnswer(t, <-first, "q0")
}
