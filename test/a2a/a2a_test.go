//go:build unix

package a2a

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

const apiKey = "a2a-test-key"

// restricted is an agent only the test's key may see (allow: names its
// principal), beside the built-in assistant and the clerk whose order
// tool needs approval (testenv.Clerk).
var restricted = fstest.MapFS{
	"vault.md": {Data: []byte("---\nagent: vault\ndescription: Keeps secrets\nmode: chat\nallow: {users: [a2a]}\n---\nYou keep secrets.\n")},
}

// task, event and failure are what client.mjs prints of them.
type task struct {
	ID, ContextID, State, StatusText string
	Artifacts                        []string
	History                          []struct{ Role, Text string }
	Metadata                         json.RawMessage
}

type event struct {
	Kind, ID, TaskID, ContextID, State, Text string
}

type failure struct{ Name, Message string }

// stack is what the scenarios run against: the API at url, the scripted
// model it calls, and the shop the clerk orders from; env is the
// in-process stack (testenv) when that is what serves url, nil when it is
// a real `longhaul dev` (dev_test.go).
type stack struct {
	url    string
	model  *llmtest.Server
	env    *testenv.Env
	orders atomic.Int32
}

// shop starts the clerk's shop, which counts the orders in s.orders, and
// returns its URL.
func (s *stack) shop(t *testing.T) string {
	t.Helper()
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.orders.Add(1)
		_, _ = w.Write([]byte("order placed"))
	}))
	t.Cleanup(shop.Close)
	return shop.URL
}

func start(t *testing.T) *stack {
	t.Helper()
	proctest.NeedNode(t, "test/a2a", "@a2a-js/sdk", "standardwebhooks")
	s := &stack{}
	shop := s.shop(t)
	s.env = testenv.Start(t, testenv.Options{
		Layers: []fs.FS{testenv.Clerk, restricted}, Env: map[string]string{"SHOP_URL": shop},
		WebhookPrivate: true,
		API:            api.Config{Keys: []identity.Key{{Name: "a2a", Secret: apiKey}}, RequestTimeout: 3 * time.Minute},
	})
	s.url, s.model = s.env.URL, s.env.Model
	return s
}

// node runs client.mjs's scenario against base; each line it prints goes
// to line (if any), with the script's stdin to answer on, and the last is
// decoded into out.
func node(t *testing.T, base, scenario string, args map[string]any, line func(text string, stdin io.Writer), out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a, _ := json.Marshal(args)
	cmd := exec.CommandContext(ctx, "node", "client.mjs", scenario, string(a))
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = append(os.Environ(), "A2A_BASE="+base, "A2A_KEY="+apiKey)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var last string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		last = sc.Text()
		if line != nil {
			line(last, stdin)
		}
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("node client.mjs %s: %v\nlast line: %s\nstderr:\n%s", scenario, err, last, stderr.String())
	}
	if err := json.Unmarshal([]byte(last), out); err != nil {
		t.Fatalf("node client.mjs %s printed %q: %v\nstderr:\n%s", scenario, last, err, stderr.String())
	}
}

// idle waits until the model has answered every scripted reply.
func (s *stack) idle(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.model.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if n := s.model.Pending(); n != 0 {
		t.Errorf("%d scripted replies were never asked for", n)
	}
}

// order scripts the clerk's call of place_order, then its answer.
func (s *stack) order(id string) {
	s.model.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{ID: id, Name: "place_order", Arguments: `{"item":"book"}`}))
	s.model.Enqueue(llmtest.Text("Ordered the book."))
}

func TestA2A(t *testing.T) {
	s := start(t)
	t.Run("cards", s.cards)
	t.Run("blocking send over JSON-RPC", func(t *testing.T) { s.send(t, "JSONRPC") })
	t.Run("blocking send over HTTP+JSON", func(t *testing.T) { s.send(t, "HTTP+JSON") })
	t.Run("streamed send", func(t *testing.T) { s.stream(t, "HTTP+JSON") })
	t.Run("resubscribe and approve", s.resubscribeApprove)
	t.Run("cancel", s.cancel)
	t.Run("push notification", s.push)
	t.Run("push notification configs of a running task", s.pushRunning)
	t.Run("one run, every door", s.doors)
}

// doors: one run, every door. A run the runs API started is an A2A task
// the official client reads, answer and all; a task the A2A door started
// is a run the runs API reads (its door a2a) and forks, and the fork is
// an A2A task in turn.
func (s *stack) doors(t *testing.T) {
	s.model.Enqueue(llmtest.Text("Answered for the runs API."))
	run := s.v1(t, "POST", "/v1/runs", `{"agent":"assistant","input":"Hi from the runs API"}`)
	s.follow(t, run.ID)
	var got task
	node(t, s.url, "get", map[string]any{"agent": "assistant", "id": run.ID, "binding": "JSONRPC"}, nil, &got)
	if got.ID != run.ID || got.State != "TASK_STATE_COMPLETED" || !slices.Equal(got.Artifacts, []string{"Answered for the runs API."}) {
		t.Errorf("GetTask of a run the runs API started = %+v", got)
	}

	s.model.Enqueue(llmtest.Text("Answered for A2A."))
	var sent struct{ Sent task }
	node(t, s.url, "send", map[string]any{"agent": "assistant", "text": "Hi from A2A", "binding": "HTTP+JSON"}, nil, &sent)
	if r := s.v1(t, "GET", "/v1/runs/"+sent.Sent.ID, ""); r.Door != "a2a" || r.Status != "completed" || r.Result != "Answered for A2A." {
		t.Errorf("GET /v1/runs of an A2A task = %+v", r)
	}
	s.model.Enqueue(llmtest.Text("Answered again, forked."))
	fork := s.v1(t, "POST", "/v1/runs/"+sent.Sent.ID+"/fork", `{"at":"start"}`)
	s.follow(t, fork.ID)
	node(t, s.url, "get", map[string]any{"agent": "assistant", "id": fork.ID, "binding": "HTTP+JSON"}, nil, &got)
	if got.ID != fork.ID || got.State != "TASK_STATE_COMPLETED" || !slices.Equal(got.Artifacts, []string{"Answered again, forked."}) {
		t.Errorf("GetTask of the fork = %+v", got)
	}
	if r := s.v1(t, "GET", "/v1/runs/"+fork.ID, ""); r.Door != "fork" {
		t.Errorf("the fork's door = %q", r.Door)
	}
	s.idle(t)
}

// v1 calls the runs API with the stack's key and decodes its answer.
func (s *stack) v1(t *testing.T, method, path, body string) wire.Run {
	t.Helper()
	req, _ := http.NewRequest(method, s.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s = %d %s", method, path, resp.StatusCode, b)
	}
	var r wire.Run
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// follow reads run id's event stream until its done event.
func (s *stack) follow(t *testing.T, id string) {
	t.Helper()
	req, _ := http.NewRequest("GET", s.url+"/v1/runs/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+apiKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := ssetest.NewReader(resp.Body)
	for {
		e, err := rd.Next()
		if err != nil {
			t.Fatalf("run %s's events ended before done: %v", id, err)
		}
		if e.Event == "done" {
			return
		}
	}
}

// cards: the catalog's card lists only the open agents to an anonymous
// caller and the restricted one too to the key it allows; an agent's
// card names both bindings under /a2a/{agent}, bearer keys, streaming and
// push; the SDK builds its client from it and reads the extended card.
func (s *stack) cards(t *testing.T) {
	var got struct {
		AnonSkills, KeyedSkills []string
		RestrictedAnonStatus    int
		Card                    struct {
			Name       string
			Interfaces []struct{ URL, ProtocolBinding, ProtocolVersion string }
			Streaming  bool
			Push       bool
			Schemes    []string
			Skills     []string
			InputModes []string
		}
		Transport, Extended, Restricted string
	}
	node(t, s.url, "cards", map[string]any{"agent": "clerk", "restricted": "vault"}, nil, &got)
	if slices.Contains(got.AnonSkills, "vault") || !slices.Contains(got.AnonSkills, "clerk") || !slices.Contains(got.KeyedSkills, "vault") {
		t.Errorf("catalog skills anonymous %v, keyed %v: want vault only for the key", got.AnonSkills, got.KeyedSkills)
	}
	if got.RestrictedAnonStatus != http.StatusNotFound {
		t.Errorf("anonymous card of vault = %d, want 404", got.RestrictedAnonStatus)
	}
	c := got.Card
	want := s.url + "/a2a/clerk"
	if c.Name != "clerk" || len(c.Interfaces) != 2 || c.Interfaces[0].URL != want || c.Interfaces[0].ProtocolBinding != "JSONRPC" ||
		c.Interfaces[1].ProtocolBinding != "HTTP+JSON" || c.Interfaces[1].ProtocolVersion != "1.0" {
		t.Errorf("card %+v: want clerk's JSONRPC and HTTP+JSON at %s", c, want)
	}
	if !c.Streaming || !c.Push || !slices.Equal(c.Schemes, []string{"bearer"}) || !slices.Equal(c.Skills, []string{"orders"}) || !slices.Equal(c.InputModes, []string{"text/plain"}) {
		t.Errorf("card %+v: want streaming, push, bearer, the skill orders, text", c)
	}
	if got.Transport != "HTTP+JSON" || got.Extended != "clerk" || got.Restricted != "vault" {
		t.Errorf("transport %q, extended card %q, restricted %q", got.Transport, got.Extended, got.Restricted)
	}
}

// send: a blocking SendMessage answers the completed task, its answer as
// an artifact and the final message; GetTask and ListTasks read it; a
// task that is not there is TaskNotFound; a message to a finished task
// is UnsupportedOperation.
func (s *stack) send(t *testing.T, binding string) {
	s.model.Enqueue(llmtest.Text("Hello from Longhaul."))
	var got struct {
		Sent, Got           task
		Listed              []struct{ ID, State, ContextID string }
		Missing, AnswerDone *failure
	}
	node(t, s.url, "send", map[string]any{"agent": "assistant", "text": "Hi", "binding": binding}, nil, &got)
	s.idle(t)
	sent := got.Sent
	if sent.State != "TASK_STATE_COMPLETED" || sent.StatusText != "Hello from Longhaul." || !slices.Equal(sent.Artifacts, []string{"Hello from Longhaul."}) ||
		!strings.HasPrefix(sent.ID, "run-") || sent.ContextID == "" {
		t.Errorf("sent task %+v: want completed with the answer", sent)
	}
	if len(sent.History) != 2 || sent.History[0].Role != "user" || sent.History[0].Text != "Hi" || sent.History[1].Text != "Hello from Longhaul." {
		t.Errorf("history %+v: want the question and the answer", sent.History)
	}
	if got.Got.ID != sent.ID || got.Got.State != "TASK_STATE_COMPLETED" || len(got.Got.History) != 1 || got.Got.History[0].Role != "agent" {
		t.Errorf("GetTask with historyLength 1 = %+v", got.Got)
	}
	if len(got.Listed) != 1 || got.Listed[0].ID != sent.ID || got.Listed[0].State != "TASK_STATE_COMPLETED" || got.Listed[0].ContextID != sent.ContextID {
		t.Errorf("ListTasks of the context = %+v, want the one task", got.Listed)
	}
	if got.Missing == nil || got.Missing.Name != "TaskNotFoundError" {
		t.Errorf("GetTask of no task: %+v, want TaskNotFoundError", got.Missing)
	}
	if got.AnswerDone == nil || got.AnswerDone.Name != "UnsupportedOperationError" {
		t.Errorf("a message to a finished task: %+v, want UnsupportedOperationError", got.AnswerDone)
	}
}

// stream: SendStreamingMessage begins with the task, gives the answer as
// an artifact update and ends with COMPLETED.
func (s *stack) stream(t *testing.T, binding string) {
	s.model.Enqueue(llmtest.Text("Streamed answer."))
	var got struct {
		Events []event
		Ended  string
	}
	node(t, s.url, "stream", map[string]any{"agent": "assistant", "text": "Stream please", "binding": binding}, nil, &got)
	s.idle(t)
	ev := got.Events
	if got.Ended != "closed" || len(ev) < 3 || ev[0].Kind != "task" || ev[0].State != "TASK_STATE_SUBMITTED" {
		t.Fatalf("stream %+v ended %q: want the task first", ev, got.Ended)
	}
	last := ev[len(ev)-1]
	if last.Kind != "status" || last.State != "TASK_STATE_COMPLETED" || last.Text != "Streamed answer." || last.TaskID != ev[0].ID || last.ContextID != ev[0].ContextID {
		t.Errorf("last event %+v: want COMPLETED with the answer", last)
	}
	if !slices.ContainsFunc(ev, func(e event) bool { return e.Kind == "artifact" && e.Text == "Streamed answer." }) {
		t.Errorf("events %+v: want the answer as an artifact update", ev)
	}
}

// resubscribeApprove: the approval of a task whose stream ended with
// the second API that served it (approveAfter).
func (s *stack) resubscribeApprove(t *testing.T) {
	second := s.env.StartAPI()
	s.approveAfter(t, second.URL, second.Stop, func() {})
}

// approveAfter: a streamed send to the clerk at base reaches
// INPUT_REQUIRED (the order needs approval); stop then ends the stream
// (the API that served it stops) and, once it ended, restart brings back
// the API s.url names; SubscribeToTask there resumes the task from its
// durable events, a blocking SendMessage with the taskId answers "yes",
// the order is placed, and the subscription ends with COMPLETED.
func (s *stack) approveAfter(t *testing.T, base string, stop, restart func()) {
	s.order("call-1")
	before := s.orders.Load()
	var first event
	var streamed struct {
		Events []event
		Ended  string
	}
	node(t, base, "stream", map[string]any{"agent": "clerk", "text": "Order a book", "binding": "JSONRPC"}, func(line string, _ io.Writer) {
		var l struct{ Event *event }
		if json.Unmarshal([]byte(line), &l) == nil && l.Event != nil {
			if l.Event.Kind == "task" {
				first = *l.Event
			}
			if l.Event.State == "TASK_STATE_INPUT_REQUIRED" {
				stop()
			}
		}
	}, &streamed)
	if first.ID == "" || !slices.ContainsFunc(streamed.Events, func(e event) bool {
		return e.State == "TASK_STATE_INPUT_REQUIRED" && strings.Contains(e.Text, "place_order")
	}) {
		t.Fatalf("stream %+v: want INPUT_REQUIRED asking to approve place_order", streamed.Events)
	}
	if slices.ContainsFunc(streamed.Events, func(e event) bool { return e.State == "TASK_STATE_COMPLETED" }) || s.orders.Load() != before {
		t.Fatalf("stream %+v, %d orders: want the task waiting when the API stopped", streamed.Events, s.orders.Load())
	}
	restart()
	var got struct {
		Events   []event
		Answered task
	}
	node(t, s.url, "approve", map[string]any{"agent": "clerk", "task": first.ID, "contextId": first.ContextID, "answer": "yes", "binding": "HTTP+JSON"}, nil, &got)
	s.idle(t)
	if s.orders.Load() != before+1 {
		t.Errorf("%d orders, want the approved one", s.orders.Load()-before)
	}
	if got.Answered.State != "TASK_STATE_COMPLETED" || got.Answered.StatusText != "Ordered the book." {
		t.Errorf("answer's task %+v: want COMPLETED", got.Answered)
	}
	ev := got.Events
	if len(ev) < 2 || ev[0].Kind != "task" || ev[0].State != "TASK_STATE_INPUT_REQUIRED" || ev[len(ev)-1].State != "TASK_STATE_COMPLETED" {
		t.Errorf("subscription %+v: want the waiting task first and COMPLETED last", ev)
	}
}

// cancel: a task whose run is mid model call (WORKING), and one that
// waits for approval (INPUT_REQUIRED), are cancelled (CANCELED), each
// once the test saw its run reach the model; cancelling either again is
// TaskNotCancelable, subscribing to it UnsupportedOperation.
func (s *stack) cancel(t *testing.T) {
	for _, tc := range []struct {
		name, agent, want string
		reply             llmtest.Reply
	}{
		{"working", "assistant", "TASK_STATE_WORKING", llmtest.Hang()},
		{"waiting", "clerk", "TASK_STATE_INPUT_REQUIRED", llmtest.ToolCalls(llmtest.ToolCall{ID: "call-2", Name: "place_order", Arguments: `{"item":"pen"}`})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, asked := s.orders.Load(), len(s.model.Requests())
			s.model.Enqueue(tc.reply)
			var got struct {
				Sent, Cancelled  task
				Again, Subscribe *failure
			}
			args := map[string]any{"agent": tc.agent, "text": "Order a pen", "binding": "JSONRPC", "returnImmediately": tc.name == "working"}
			node(t, s.url, "cancel", args, func(line string, stdin io.Writer) {
				if strings.Contains(line, `"started"`) {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					if err := s.model.WaitRequests(ctx, asked+1); err != nil {
						t.Error(err)
					}
					_, _ = io.WriteString(stdin, "go\n")
				}
			}, &got)
			s.idle(t)
			if got.Sent.State != tc.want || got.Cancelled.State != "TASK_STATE_CANCELED" || got.Cancelled.ID != got.Sent.ID {
				t.Errorf("sent %+v, cancelled %+v: want %s, then CANCELED", got.Sent, got.Cancelled, tc.want)
			}
			if got.Again == nil || got.Again.Name != "TaskNotCancelableError" {
				t.Errorf("second cancel: %+v, want TaskNotCancelableError", got.Again)
			}
			if got.Subscribe == nil || got.Subscribe.Name != "UnsupportedOperationError" {
				t.Errorf("subscribe to a cancelled task: %+v, want UnsupportedOperationError", got.Subscribe)
			}
			if n := s.orders.Load(); n != before {
				t.Errorf("%d orders after cancel, want %d: none more", n, before)
			}
		})
	}
}

// push: a send with a push notification config delivers the run's end to
// a local receiver, signed so that the Standard Webhooks library verifies
// it with the secret the task's metadata carries; Get and List read the
// config; one cannot be added to a task that has finished.
func (s *stack) push(t *testing.T) {
	s.model.Enqueue(llmtest.Text("Pushed."))
	var got struct {
		Sent     task
		HookURL  string
		Verified struct {
			Type  string
			Data  struct{ ID, Status string }
			Error string
		}
		Configs []struct{ ID, TaskID, URL string }
		Got     struct{ ID, TaskID, URL string }
		Create  *failure
	}
	node(t, s.url, "push", map[string]any{"agent": "assistant", "text": "Push me", "binding": "JSONRPC"}, nil, &got)
	s.idle(t)
	v := got.Verified
	if v.Error != "" || v.Type != "run.completed" || v.Data.ID != got.Sent.ID || v.Data.Status != "completed" {
		t.Errorf("verified delivery %+v: want run.completed of %s", v, got.Sent.ID)
	}
	if len(got.Configs) != 1 || got.Configs[0].TaskID != got.Sent.ID || got.Configs[0].URL != got.HookURL || got.Got != got.Configs[0] {
		t.Errorf("configs %+v, got %+v: want the one config at %s", got.Configs, got.Got, got.HookURL)
	}
	if got.Create == nil || got.Create.Name != "UnsupportedOperationError" {
		t.Errorf("create a config on a finished task: %+v, want UnsupportedOperationError", got.Create)
	}
}

// pushRunning: push notification configs set on a running task (one that
// waits for approval) are listed, read and deleted through the official
// client; once the approval is answered, the run's end goes to the kept
// config, signed with the secret its create answered, and not to the
// deleted one.
func (s *stack) pushRunning(t *testing.T) {
	s.order("call-push")
	before := s.orders.Load()
	type cfg struct{ ID, TaskID, URL, Token string }
	var got struct {
		Sent, Answered     task
		Kept, Dropped, Got cfg
		ListedBoth, Listed []cfg
		Gone, CreateDone   *failure
		Verified           []struct {
			Type  string
			Data  struct{ ID, Status string }
			Error string
		}
		DroppedDeliveries int
		KeptURL           string
	}
	node(t, s.env.URL, "pushRunning", map[string]any{"agent": "clerk", "text": "Order a book", "answer": "yes", "binding": "JSONRPC"}, nil, &got)
	s.idle(t)
	id := got.Sent.ID
	if got.Sent.State != "TASK_STATE_INPUT_REQUIRED" || got.Answered.State != "TASK_STATE_COMPLETED" || s.orders.Load() != before+1 {
		t.Fatalf("sent %+v, answered %+v: want INPUT_REQUIRED, then COMPLETED with the order placed", got.Sent, got.Answered)
	}
	k := got.Kept
	if k.ID == "" || k.TaskID != id || k.URL != got.KeptURL || !strings.HasPrefix(k.Token, "whsec_") || got.Dropped.ID == "" || got.Dropped.ID == k.ID {
		t.Errorf("created %+v and %+v: want two configs of %s, the secret as token", k, got.Dropped, id)
	}
	k.Token = ""
	if len(got.ListedBoth) != 2 || len(got.Listed) != 1 || got.Listed[0] != k || got.Got != k {
		t.Errorf("listed %+v, then %+v, got %+v: want both, then the kept one, without secrets", got.ListedBoth, got.Listed, got.Got)
	}
	if got.Gone == nil || got.Gone.Name != "TaskNotFoundError" {
		t.Errorf("get of the deleted config: %+v, want TaskNotFoundError", got.Gone)
	}
	var completed bool
	for _, v := range got.Verified {
		if v.Error != "" {
			t.Errorf("a delivery to the kept config did not verify: %s", v.Error)
		}
		completed = completed || v.Type == "run.completed" && v.Data.ID == id && v.Data.Status == "completed"
	}
	if !completed || got.DroppedDeliveries != 0 {
		t.Errorf("kept config got %+v, deleted one %d deliveries: want run.completed on the kept one only", got.Verified, got.DroppedDeliveries)
	}
	if got.CreateDone == nil || got.CreateDone.Name != "UnsupportedOperationError" {
		t.Errorf("create on the finished task: %+v, want UnsupportedOperationError", got.CreateDone)
	}
}
