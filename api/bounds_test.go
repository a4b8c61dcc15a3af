package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"github.com/longhaul-dev/longhaul/skills"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
)

// runStatus waits until run id has closed and returns how.
func runStatus(t *testing.T, env *testenv.Env, id string) enums.WorkflowExecutionStatus {
	t.Helper()
	ctx := within(t, time.Minute)
	// Get returns once the run has closed, whichever way.
	_ = env.Client.GetWorkflow(ctx, id, "").Get(ctx, nil)
	d, err := env.Client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		t.Fatalf("describe %s: %v", id, err)
	}
	return d.GetWorkflowExecutionInfo().GetStatus()
}

func TestModelOutputCapEndsTheRun(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	// Ten megabytes of answer, far past the default cap of one.
	huge := llmtest.Text(strings.Repeat("x", 10<<20), llmtest.ChunkSize(64<<10))
	env.Model.SetDefault(huge)

	t.Run("stream", func(t *testing.T) {
		resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "naked", "stream": true, "messages": userMsg("say x forever")}, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status = %d", resp.StatusCode)
		}
		frames := sseData(t, resp.Body)
		var failure *wire.ErrorDetail
		for _, f := range frames {
			var e wire.ErrorBody
			if f != "[DONE]" && json.Unmarshal([]byte(f), &e) == nil && e.Error.Message != "" {
				failure = &e.Error
			}
		}
		if failure == nil || !strings.Contains(failure.Message, "LONGHAUL_MAX_MODEL_OUTPUT_BYTES") {
			t.Fatalf("the stream ended without an error naming the cap: %+v", failure)
		}
		if got := len(chunkText(t, frames)); got > 1<<20 {
			t.Errorf("the stream carried %d bytes of text, more than the cap", got)
		}
		if st := runStatus(t, env, resp.Header.Get(api.HeaderRunID)); st != enums.WORKFLOW_EXECUTION_STATUS_FAILED {
			t.Errorf("run status = %v, want failed (ended by the workflow, not terminated)", st)
		}
		checkCapFinal(t, env, resp.Header.Get(api.HeaderRunID))
	})
	t.Run("no stream", func(t *testing.T) {
		resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "naked", "messages": userMsg("say x forever")}, nil)
		if resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("status = %d, want 502", resp.StatusCode)
		}
		e := decode[wire.ErrorBody](t, resp)
		if e.Error.Code != "model_output_too_large" || !strings.Contains(e.Error.Message, "LONGHAUL_MAX_MODEL_OUTPUT_BYTES") {
			t.Errorf("error = %+v", e.Error)
		}
		checkCapFinal(t, env, resp.Header.Get(api.HeaderRunID))
	})
}

// checkCapFinal asserts that run's model call ended on the output cap as a
// non-retryable failure: the attempt that went past it was the last. (An
// earlier attempt may have timed out on a loaded machine and been retried;
// that is no retry of the cap.)
func checkCapFinal(t *testing.T, env *testenv.Env, run string) {
	t.Helper()
	ctx := within(t, time.Minute)
	it := env.Client.GetWorkflowHistory(ctx, run, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	capped := 0
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		f := ev.GetActivityTaskFailedEventAttributes().GetFailure()
		for ; f != nil; f = f.GetCause() {
			if info := f.GetApplicationFailureInfo(); info.GetType() == "ModelOutputTooLarge" {
				if !info.GetNonRetryable() {
					t.Errorf("run %s: the output cap's failure is retryable", run)
				}
				capped++
				break
			}
		}
	}
	if capped != 1 {
		t.Errorf("run %s: %d model calls failed on the output cap, want 1", run, capped)
	}
}

// TestRequestJustUnderTheRunPayloadLimit: a conversation just under what
// a run takes at once starts a run on the whole stack, and its first
// model call, which carries the conversation in a payload of its own,
// goes through too. Over the limit is a 413 (the handler packages' tables).
func TestRequestJustUnderTheRunPayloadLimit(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	env.Model.SetDefault(llmtest.Text("ok"))
	big := strings.Repeat("lorem ipsum ", 1400<<10/12+1)[:1400<<10]
	resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "naked", "messages": userMsg(big)}, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a 1.4 MiB conversation: status = %d", resp.StatusCode)
	}
	if c := decode[wire.ChatCompletion](t, resp); len(c.Choices) != 1 || c.Choices[0].Message.Content != "ok" {
		t.Errorf("answer = %+v", c)
	}
}

// TestLongIDsAreBounded serves users and chats whose ids are too long (or
// too odd) for Temporal's search attributes and visibility queries as
// their bounded forms: everything works, the same principal is the same
// everywhere (start, attach, get, list, the run limit), and two ids alike
// in their first 999 characters stay two principals.
func TestLongIDsAreBounded(t *testing.T) {
	env := testenv.Start(t, testenv.Options{API: api.Config{Keys: []identity.Key{{Name: "owui", Secret: "sk-owui", Proxy: true}}}})
	limited := env.StartAPI(func(c *api.Config) { c.Limits.Runs = 1 })
	ctx := within(t, 2*time.Minute)
	env.Model.On(llmtest.LastUserContains("hang"), llmtest.Hang())
	env.Model.SetDefault(llmtest.Text("ok"))
	as := func(id string, more ...string) map[string]string {
		h := map[string]string{"Authorization": "Bearer sk-owui", "X-OpenWebUI-User-Id": id}
		for i := 0; i+1 < len(more); i += 2 {
			h[more[i]] = more[i+1]
		}
		return h
	}
	long := strings.Repeat("u", 1000)
	ann, bob, odd := as(long), as(long[:999]+"v"), as(`back\slash "quoted"`)
	chat := strings.Repeat("c", 5000)

	// The run limit counts her runs under her bounded name.
	hanging := startRunAt(t, limited.URL, map[string]any{"agent": "naked", "input": "hang on"}, ann)
	eventually(t, ctx, func() string {
		if resp := doAt(t, limited.URL, "POST", "/v1/runs", map[string]any{"agent": "naked", "input": "another"}, ann); resp.StatusCode != http.StatusTooManyRequests {
			return "her second run was not refused: " + resp.Status
		}
		return ""
	})
	startRunAt(t, limited.URL, map[string]any{"agent": "naked", "input": "his"}, bob)

	// A chat with a 5000-character id, from the headers and from metadata;
	// the same request (the same message id) again attaches to its run.
	var runIDs []string
	for _, h := range []map[string]string{as(long, "X-OpenWebUI-Chat-Id", chat, "X-OpenWebUI-Message-Id", "m1"), ann} {
		body := chatBody{"model": "naked", "messages": userMsg("hello")}
		if h["X-OpenWebUI-Chat-Id"] == "" {
			body["metadata"] = map[string]string{"chat_id": chat, "message_id": "m1"}
		}
		for range 2 {
			resp := do(t, env, "POST", "/v1/chat/completions", body, h)
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("chat = %d %s", resp.StatusCode, b)
			}
			if c := decode[wire.ChatCompletion](t, resp); c.Choices[0].Message.Content != "ok" {
				t.Errorf("answer %+v", c)
			}
			runIDs = append(runIDs, resp.Header.Get(api.HeaderRunID))
		}
	}
	if runIDs[0] == "" || runIDs[1] != runIDs[0] || runIDs[2] != runIDs[0] || runIDs[3] != runIDs[0] {
		t.Errorf("run ids %q: want one run for the chat, however named and however often asked", runIDs)
	}
	chatRun := runIDs[0]
	if len(chatRun) > 200 {
		t.Errorf("run id of %d bytes", len(chatRun))
	}
	// His chat of the same id is his own run.
	resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "naked", "messages": userMsg("hello"), "metadata": map[string]string{"chat_id": chat}}, bob)
	if resp.StatusCode != http.StatusOK || resp.Header.Get(api.HeaderRunID) == chatRun {
		t.Errorf("his chat = %d, run %q (hers is %q)", resp.StatusCode, resp.Header.Get(api.HeaderRunID), chatRun)
	}

	if resp := do(t, env, "GET", "/v1/runs/"+chatRun, nil, ann); resp.StatusCode != http.StatusOK {
		t.Errorf("her run, to her = %d", resp.StatusCode)
	}
	if resp := do(t, env, "GET", "/v1/runs/"+chatRun, nil, bob); resp.StatusCode != http.StatusNotFound {
		t.Errorf("her run, to him = %d, want 404", resp.StatusCode)
	}
	eventually(t, ctx, func() string {
		got := ids(listRuns(t, env, url.Values{}, ann))
		if !slices.Contains(got, chatRun) || !slices.Contains(got, hanging.ID) {
			return fmt.Sprintf("her runs %q lack %s or %s", got, chatRun, hanging.ID)
		}
		return ""
	})
	for _, id := range ids(listRuns(t, env, url.Values{}, bob)) {
		if id == chatRun || id == hanging.ID {
			t.Errorf("his listing shows her run %s", id)
		}
	}

	// A user id with a backslash and double quotes lists its runs too.
	mine := startRun(t, env, map[string]any{"agent": "naked", "input": "odd"}, odd)
	eventually(t, ctx, func() string {
		if got := ids(listRuns(t, env, url.Values{}, odd)); !slices.Equal(got, []string{mine.ID}) {
			return fmt.Sprintf("the odd user's runs = %q, want %q", got, mine.ID)
		}
		return ""
	})
}

// TestTemporalDownIsAPrompt503 points an API at a Temporal that is not
// there (a closed port) and at one that never answers (a port that takes
// connections and says nothing): every route that needs Temporal answers
// 503 with Retry-After within its time limit, and /readyz says unavailable.
func TestTemporalDownIsAPrompt503(t *testing.T) {
	catalog, err := skills.Load(skills.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	const limit = time.Second
	for name, addr := range map[string]string{"closed port": testenv.FreeAddr(t), "silent": silentAddr(t)} {
		t.Run(name, func(t *testing.T) {
			c, err := client.NewLazyClient(client.Options{HostPort: addr, Logger: tlog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			srv := api.New(api.Config{TaskQueue: "nowhere", Limits: api.Limits{Runs: 3}}, runs.NewTemporal(c, runs.Config{TaskQueue: "nowhere", Timeout: limit}), catalog, slog.New(slog.DiscardHandler))
			base := serve(t, srv)
			checkUnavailable(t, base, limit)
		})
	}
}

// silentAddr is the address of a listener that takes connections and never
// answers, as a Temporal behind a broken network is.
func silentAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, c := range conns {
					c.Close()
				}
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

func checkUnavailable(t *testing.T, base string, limit time.Duration) {
	t.Helper()
	ann := user("ann")
	chatting := withChat(ann, "c1")
	tests := []struct {
		name, method, path string
		body               any
		headers            map[string]string
	}{
		{"chat", "POST", "/v1/chat/completions", chatBody{"model": "naked", "messages": userMsg("hi")}, ann},
		{"chat stream", "POST", "/v1/chat/completions", chatBody{"model": "naked", "stream": true, "messages": userMsg("hi")}, ann},
		{"chat, a later turn", "POST", "/v1/chat/completions", chatBody{"model": "naked", "messages": conversation("hi", "hello", "and?")}, chatting},
		{"start a run", "POST", "/v1/runs", map[string]any{"agent": "naked", "input": "hi"}, ann},
		{"list runs", "GET", "/v1/runs", nil, ann},
		{"get a run", "GET", "/v1/runs/run-1", nil, ann},
		{"run events", "GET", "/v1/runs/run-1/events", nil, ann},
		{"cancel a run", "POST", "/v1/runs/run-1/cancel", nil, ann},
		{"input to a run", "POST", "/v1/runs/run-1/input", map[string]any{"approve": true}, ann},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			resp := doAt(t, base, tt.method, tt.path, tt.body, tt.headers)
			b, _ := io.ReadAll(resp.Body)
			took := time.Since(start)
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("status = %d (Retry-After %q) %s, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), b)
			}
			var e wire.ErrorBody
			if json.Unmarshal(b, &e) != nil || e.Error.Code != "unavailable" || e.Error.Type != "server_error" {
				t.Errorf("body %s", b)
			}
			// One call to Temporal runs out of time, and the request ends.
			if took > limit+3*time.Second {
				t.Errorf("took %v, want about %v", took, limit)
			}
		})
	}
	start := time.Now()
	resp := doAt(t, base, "GET", "/readyz", nil, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || time.Since(start) > 5*time.Second {
		t.Errorf("readyz = %d after %v", resp.StatusCode, time.Since(start))
	}
}

// panicking is a Temporal client every call of which panics (a nil
// client.Client underneath), as a bug in a handler's path would.
type panicking struct{ client.Client }

func (panicking) WorkflowService() workflowservice.WorkflowServiceClient { return nil }

// logBuffer collects a logger's lines for a test.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestHandlerPanicIsA500(t *testing.T) {
	catalog, err := skills.Load(skills.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	srv := api.New(api.Config{TaskQueue: "q"}, runs.NewTemporal(panicking{}, runs.Config{TaskQueue: "q"}), catalog, slog.New(slog.NewTextHandler(&logs, nil)))
	base := serve(t, srv)
	for _, path := range []string{"/v1/runs", "/readyz"} {
		resp := doAt(t, base, "GET", path, nil, nil)
		if resp.StatusCode != http.StatusInternalServerError {
			t.Fatalf("GET %s = %d, want 500", path, resp.StatusCode)
		}
		e := decode[wire.ErrorBody](t, resp)
		if e.Error.Type != "server_error" || e.Error.Code != "internal_error" || e.Error.Message != "internal error" {
			t.Errorf("GET %s: error %+v", path, e.Error)
		}
	}
	// The process goes on serving.
	if resp := doAt(t, base, "GET", "/healthz", nil, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("healthz after the panics = %d", resp.StatusCode)
	}
	got := logs.String()
	if n := strings.Count(got, "handler panicked"); n != 2 || !strings.Contains(got, "nil pointer dereference") || !strings.Contains(got, "runtime/debug.Stack") {
		t.Errorf("want one error line with the panic and its stack per panic; the log:\n%s", got)
	}
	if strings.Contains(got, "request failed") {
		t.Errorf("a panic was logged twice:\n%s", got)
	}
}

// streamPanicking is a Temporal client that finds a run of the anonymous
// caller but panics when the run's events are read: a bug on the path a
// stream follows after its handler has returned.
type streamPanicking struct{ panicking }

func (streamPanicking) QueryWorkflow(_ context.Context, _, _, queryType string, _ ...any) (converter.EncodedValue, error) {
	if queryType != contract.QueryState {
		panic("reading events")
	}
	return stateValue{contract.RunState{User: "anonymous", Status: contract.StatusRunning}}, nil
}

// DescribeWorkflowExecution finds the run: an AgentWorkflow.
func (streamPanicking) DescribeWorkflowExecution(context.Context, string, string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
		Type: &commonpb.WorkflowType{Name: contract.AgentWorkflowName},
	}}, nil
}

type stateValue struct{ st contract.RunState }

func (stateValue) HasValue() bool { return true }
func (v stateValue) Get(p any) error {
	*p.(*contract.RunState) = v.st
	return nil
}

// TestStreamPanicEndsTheStream: a panic while a stream is being followed
// (after the handler returned, out of the recover middleware's reach) ends
// that stream with an error and one log line with its stack; the process
// serves on.
func TestStreamPanicEndsTheStream(t *testing.T) {
	catalog, err := skills.Load(skills.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	srv := api.New(api.Config{TaskQueue: "q"}, runs.NewTemporal(streamPanicking{}, runs.Config{TaskQueue: "q", Log: log}), catalog, log)
	base := serve(t, srv)
	resp := doAt(t, base, "GET", "/v1/runs/run-1/events", nil, nil)
	frames, err := ssetest.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || len(frames) == 0 || frames[len(frames)-1].Event != "stream_error" {
		t.Fatalf("events = %d %+v, want a stream that ends with an error event", resp.StatusCode, frames)
	}
	if got := logs.String(); strings.Count(got, "run feed panicked") != 1 || !strings.Contains(got, "reading events") || !strings.Contains(got, "runtime/debug.Stack") {
		t.Errorf("want one error line with the panic and its stack; the log:\n%s", got)
	}
	if resp := doAt(t, base, "GET", "/healthz", nil, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("healthz after the panic = %d", resp.StatusCode)
	}
}

// TestReadyzDetailNeedsAKey: /readyz tells anyone whether the API is ready
// and which part is not, and only a caller with a valid key what went
// wrong.
func TestReadyzDetailNeedsAKey(t *testing.T) {
	keys := []identity.Key{{Name: "ops", Secret: "sk-ops"}}
	ops := map[string]string{"Authorization": "Bearer sk-ops"}
	readyz := func(t *testing.T, base string, headers map[string]string) (int, map[string]any) {
		t.Helper()
		resp := doAt(t, base, "GET", "/readyz", nil, headers)
		return resp.StatusCode, decode[map[string]any](t, resp)
	}
	checkPlain := func(t *testing.T, body map[string]any) {
		t.Helper()
		raw, _ := json.Marshal(body)
		if _, ok := body["error"]; ok || strings.Contains(string(raw), "127.0.0.1") || strings.Contains(string(raw), testenv.TaskQueue) {
			t.Errorf("readyz without a key tells what went wrong: %s", raw)
		}
	}

	t.Run("temporal down", func(t *testing.T) {
		addr := testenv.FreeAddr(t)
		c, err := client.NewLazyClient(client.Options{HostPort: addr, Logger: tlog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		catalog, err := skills.Load(skills.Builtin())
		if err != nil {
			t.Fatal(err)
		}
		srv := api.New(api.Config{TaskQueue: testenv.TaskQueue, Keys: keys}, runs.NewTemporal(c, runs.Config{TaskQueue: testenv.TaskQueue}), catalog, slog.New(slog.DiscardHandler))
		base := serve(t, srv)
		for _, h := range []map[string]string{nil, {"Authorization": "Bearer sk-wrong"}} {
			status, body := readyz(t, base, h)
			if status != http.StatusServiceUnavailable || body["status"] != "unavailable" || body["temporal"] != "unavailable" {
				t.Errorf("readyz = %d %v", status, body)
			}
			checkPlain(t, body)
		}
		status, body := readyz(t, base, ops)
		if e, _ := body["error"].(string); status != http.StatusServiceUnavailable || !strings.Contains(e, "temporal") || !strings.Contains(e, addr) {
			t.Errorf("readyz with a key = %d %v, want the error naming %s", status, body, addr)
		}
	})

	t.Run("no worker, then one", func(t *testing.T) {
		env := testenv.Start(t, testenv.Options{NoWorker: true, API: api.Config{Keys: keys}})
		status, body := readyz(t, env.URL, nil)
		if status != http.StatusServiceUnavailable || body["temporal"] != "ok" || body["workers"] != float64(0) {
			t.Errorf("readyz = %d %v", status, body)
		}
		checkPlain(t, body)
		status, body = readyz(t, env.URL, ops)
		if e, _ := body["error"].(string); status != http.StatusServiceUnavailable || !strings.Contains(e, "no worker polls task queue "+testenv.TaskQueue) {
			t.Errorf("readyz with a key = %d %v", status, body)
		}

		env.StartWorker()
		ctx := within(t, time.Minute)
		eventually(t, ctx, func() string {
			if status, body := readyz(t, env.URL, nil); status != http.StatusOK || body["status"] != "ready" {
				return fmt.Sprintf("readyz = %d %v", status, body)
			}
			return ""
		})
		_, body = readyz(t, env.URL, nil)
		checkPlain(t, body)
		if _, body = readyz(t, env.URL, ops); body["task_queue"] != testenv.TaskQueue {
			t.Errorf("readyz with a key = %v, want the task queue", body)
		}
	})
}

// serve runs srv on a loopback port until the test ends and returns its
// base URL.
func serve(t *testing.T, srv *api.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.App().Listener(ln) }()
	t.Cleanup(func() {
		ctx := within(t, 5*time.Second)
		_ = srv.Shutdown(ctx)
	})
	return "http://" + ln.Addr().String()
}
