package api_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/endpoints"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"go.temporal.io/api/enums/v1"
)

// fallbackEnv starts a stack whose agent "fallback" names the model list
// of front (a model: line) over the named endpoints of servers, with a
// short idle timeout so that a silent model is given up on in a second.
func fallbackEnv(t *testing.T, front string, servers map[string]*llmtest.Server) *testenv.Env {
	t.Helper()
	layer := fstest.MapFS{"fallback.md": {Data: []byte("---\nagent: fallback\ndescription: Answers on the first model that can\n" + front + "\n---\nYou answer briefly.\n")}}
	var ends []endpoints.Endpoint
	for name, s := range servers {
		ends = append(ends, endpoints.Endpoint{Name: name, BaseURL: s.URL()})
	}
	return testenv.Start(t, testenv.Options{Layers: []fs.FS{layer}, Endpoints: ends, ModelIdleTimeout: time.Second})
}

// activitySummaries are the summaries the Temporal UI shows of a run's
// activities of the types named (of all of them when none is), in the
// order they were scheduled.
func activitySummaries(t *testing.T, env *testenv.Env, runID string, activityTypes ...string) []string {
	t.Helper()
	iter := env.Client.GetWorkflowHistory(context.Background(), runID, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var out []string
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		a := ev.GetActivityTaskScheduledEventAttributes()
		if a != nil && (len(activityTypes) == 0 || slices.Contains(activityTypes, a.GetActivityType().GetName())) {
			var s string
			if p := ev.GetUserMetadata().GetSummary(); p != nil {
				_ = json.Unmarshal(p.GetData(), &s)
			}
			out = append(out, s)
		}
	}
	return out
}

// fallbacksOf lists a log's model_fallback events.
func fallbacksOf(events []longhaul.Event) []longhaul.ModelFallbackData {
	var out []longhaul.ModelFallbackData
	for _, e := range events {
		var d longhaul.ModelFallbackData
		if e.Type == longhaul.EventModelFallback && e.Decode(&d) == nil {
			out = append(out, d)
		}
	}
	return out
}

// TestModelFallbacksAnswerOnTheThirdModel: an agent's model list over
// three endpoints, the first answering 503, the second never answering
// (given up on after the idle timeout), the third answering. The streamed
// chat answer is the third model's alone; the run's events say why each
// model was passed over; the usage is the third model's; the Temporal UI's
// activity summaries name each model.
func TestModelFallbacksAnswerOnTheThirdModel(t *testing.T) {
	down, slow, up := llmtest.New(t), llmtest.New(t), llmtest.New(t)
	down.SetDefault(llmtest.Status(503, "overloaded"))
	slow.SetDefault(llmtest.Hang())
	up.SetDefault(llmtest.Text("The third model answers.", llmtest.Usage(20, 5)))
	env := fallbackEnv(t, "model: [down:m1, slow:m2, up:m3]", map[string]*llmtest.Server{"down": down, "slow": slow, "up": up})

	resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "fallback", "stream": true, "messages": userMsg("Hello?")}, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := chunkText(t, sseData(t, resp.Body)); got != "The third model answers." {
		t.Errorf("streamed answer = %q, want the third model's alone", got)
	}
	// Each model was tried as often as its retry policy says: twice for
	// those with a fallback, once for the one that answered.
	if d, s, u := len(down.Requests()), len(slow.Requests()), len(up.Requests()); d != 2 || s != 2 || u != 1 {
		t.Errorf("requests: down %d, slow %d, up %d; want 2, 2, 1", d, s, u)
	}

	runID := resp.Header.Get("X-Longhaul-Run-Id")
	fb := fallbacksOf(runEvents(t, env, runID, nil))
	if len(fb) != 2 {
		t.Fatalf("fallback events = %+v, want two", fb)
	}
	if fb[0].Model != "down:m1" || fb[0].Next != "slow:m2" || fb[0].Status != 503 || !strings.Contains(fb[0].Reason, "overloaded") {
		t.Errorf("first fallback = %+v", fb[0])
	}
	if fb[1].Model != "slow:m2" || fb[1].Next != "up:m3" || !strings.Contains(fb[1].Reason, "LONGHAUL_MODEL_IDLE_TIMEOUT") {
		t.Errorf("second fallback = %+v", fb[1])
	}
	if got := fb[0].Message(); got != "model down:m1 failed (503), answering with slow:m2" {
		t.Errorf("status line = %q", got)
	}
	st := runState(t, env, runID)
	if u := contract.ModelUsage(st.Calls); len(u) != 1 || u[0].Model != "up:m3" || u[0].PromptTokens != 20 {
		t.Errorf("usage by model = %+v, want the third model's alone", u)
	}
	summaries := activitySummaries(t, env, runID, "ChatCompletion")
	want := []string{"llm down:m1", "llm slow:m2 (down:m1 failed: 503)", "llm up:m3 (slow:m2 failed: ModelUnavailable)"}
	if len(summaries) != len(want) {
		t.Fatalf("activity summaries = %q, want %d", summaries, len(want))
	}
	for i, w := range want {
		if !strings.HasSuffix(summaries[i], w) {
			t.Errorf("activity summary %d = %q, want it to end in %q", i, summaries[i], w)
		}
	}
}

// TestModelFallbackOnContextLength: the first model's endpoint refuses the
// request as longer than its window (400 context_length_exceeded); the
// next model of the list, with a larger window, answers.
func TestModelFallbackOnContextLength(t *testing.T) {
	small, large := llmtest.New(t), llmtest.New(t)
	small.SetDefault(llmtest.Status(400, "too long", llmtest.ErrorType("invalid_request_error"), llmtest.ErrorCode("context_length_exceeded")))
	large.SetDefault(llmtest.Text("Read it all."))
	env := fallbackEnv(t, "model: [small:m, large:m]", map[string]*llmtest.Server{"small": small, "large": large})

	resp := doWant(t, env.URL, "POST", "/v1/chat/completions", chatBody{"model": "fallback", "messages": userMsg(strings.Repeat("A long document. ", 200))}, nil, 200)
	body := decode[wire.ChatCompletion](t, resp)
	if len(body.Choices) != 1 || body.Choices[0].Message.Content != "Read it all." {
		t.Fatalf("answer = %+v, want the larger model's", body.Choices)
	}
	if n := len(small.Requests()); n != 1 {
		t.Errorf("the small model got %d requests, want 1 (a window error is not retried)", n)
	}
	fb := fallbacksOf(runEvents(t, env, resp.Header.Get("X-Longhaul-Run-Id"), nil))
	if len(fb) != 1 || fb[0].Code != longhaul.ErrTypeContextLength || fb[0].Next != "large:m" {
		t.Errorf("fallback events = %+v, want one for the window", fb)
	}
}

// TestModelFallbackMidStreamIsOneCoherentStream: the first model streams
// the start of an answer and goes silent (given up on after the idle
// timeout, twice); the second answers. A follower of the runs API saw the
// first model's text, then a content_reset before the model_fallback
// event, then the second model's text from its start: what it shows is the
// second model's answer alone, and the durable content is too.
func TestModelFallbackMidStreamIsOneCoherentStream(t *testing.T) {
	stall, up := llmtest.New(t), llmtest.New(t)
	stall.SetDefault(llmtest.Text("The first model begins to say something", llmtest.StallAfter(3)))
	up.SetDefault(llmtest.Text("The second model answers."))
	env := fallbackEnv(t, "model: [stall:m1, up:m2]", map[string]*llmtest.Server{"stall": stall, "up": up})

	run := startRun(t, env, map[string]any{"agent": "fallback", "input": "Hello?"}, nil)
	events := followToDone(t, within(t, time.Minute), env, run.ID, nil)
	if got := deltaText(t, events); got != "The second model answers." {
		t.Errorf("the follower shows %q, want the second model's answer alone", got)
	}
	var sawFirst bool
	resetBeforeFallback := false
	for i, e := range events {
		var d longhaul.Delta
		if e.Type == string(longhaul.EventContentDelta) && e.Event.Decode(&d) == nil && strings.Contains(d.Text, "first") {
			sawFirst = true
		}
		if e.Type == string(longhaul.EventModelFallback) && i > 0 && events[i-1].Type == string(longhaul.EventContentReset) {
			resetBeforeFallback = true
		}
	}
	if !sawFirst || !resetBeforeFallback {
		t.Errorf("saw the first model's text %v, a reset right before the fallback %v; events %v", sawFirst, resetBeforeFallback, types(events))
	}
	var content []string
	for _, e := range durableOnly(events) {
		var d longhaul.ContentData
		if e.Type == string(longhaul.EventContent) && e.Event.Decode(&d) == nil {
			content = append(content, d.Text)
		}
	}
	if len(content) != 1 || content[0] != "The second model answers." {
		t.Errorf("durable content = %q", content)
	}
}
