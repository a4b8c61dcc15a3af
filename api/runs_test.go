package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// user is the Open WebUI headers of a user with this id.
func user(id string) map[string]string {
	return map[string]string{"X-OpenWebUI-User-Id": id, "X-OpenWebUI-User-Name": id}
}

// startRun starts a run and checks the 202 answer.
func startRun(t *testing.T, env *testenv.Env, body any, headers map[string]string) wire.RunCreated {
	t.Helper()
	return startRunAt(t, env.URL, body, headers)
}

func startRunAt(t *testing.T, base string, body any, headers map[string]string) wire.RunCreated {
	t.Helper()
	resp := doWant(t, base, "POST", "/v1/runs", body, headers, http.StatusAccepted)
	r := decode[wire.RunCreated](t, resp)
	if r.ID == "" || !strings.HasPrefix(r.ID, "run-") || r.Status != "running" || r.EventsURL != "/v1/runs/"+r.ID+"/events" ||
		resp.Header.Get(api.HeaderRunID) != r.ID {
		t.Fatalf("created %+v, header %q", r, resp.Header.Get(api.HeaderRunID))
	}
	return r
}

// sseEvent is one frame of a run's event stream. A durable event's id is
// its offset; an ephemeral one's (content_delta, content_reset) names a
// position in the running call's text, "<offset>:<bytes>[:<attempt>]", and
// tool progress has none.
type sseEvent struct {
	// ID is the durable offset: the event's own, or the one an ephemeral
	// event follows.
	ID    int64
	Pos   string // the raw id
	Type  string
	Event longhaul.Event
}

func (e sseEvent) durable() bool { return e.Event.Offset > 0 }

// openEvents opens a run's event stream; ctx bounds the whole read.
func openEvents(t *testing.T, ctx context.Context, env *testenv.Env, id, query string, headers map[string]string) *sseStream {
	t.Helper()
	return openStreamAt(t, ctx, env.URL+"/v1/runs/"+id+"/events"+query, "", headers)
}

// sseStream reads a run's event stream frame by frame and tolerates a cut:
// a client of an API that goes away sees its stream break mid-way.
type sseStream struct {
	body io.ReadCloser
	rd   *ssetest.Reader
}

// openStream opens the event stream of run id on the API at base, resuming
// after the event id lastID (Last-Event-ID) when it is set.
func openStream(t *testing.T, ctx context.Context, base, id, lastID string, headers map[string]string) *sseStream {
	t.Helper()
	return openStreamAt(t, ctx, base+"/v1/runs/"+id+"/events", lastID, headers)
}

func openStreamAt(t *testing.T, ctx context.Context, url, lastID string, headers map[string]string) *sseStream {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("events %s: %d %q %s", url, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return &sseStream{body: resp.Body, rd: ssetest.NewReader(resp.Body)}
}

// next returns the next whole frame, checked: an id that names the event's
// offset (or, for an ephemeral event, a position), an event line that is its
// type, one line of JSON data holding the whole event. At the end of the
// stream it returns io.EOF when the server ended it cleanly and another
// error when it broke; a frame cut in half is not returned.
func (s *sseStream) next() (sseEvent, error) {
	fr, err := s.rd.Next()
	if err != nil {
		return sseEvent{}, err
	}
	cur := sseEvent{Pos: fr.ID, Type: fr.Event}
	if fr.HasID() {
		d, _, _ := strings.Cut(cur.Pos, ":")
		id, err := strconv.ParseInt(d, 10, 64)
		if err != nil {
			return cur, fmt.Errorf("bad id %q", fr.ID)
		}
		cur.ID = id
	}
	if err := json.Unmarshal([]byte(fr.Data), &cur.Event); err != nil {
		return cur, fmt.Errorf("data is not an event: %q", fr.Data)
	}
	return cur, checkFrame(fr.Fields, cur)
}

func checkFrame(fields []string, e sseEvent) error {
	want := "id,event,data"
	if e.Type == string(longhaul.EventToolStatus) {
		want = "event,data"
	}
	switch {
	case strings.Join(fields, ",") != want:
		return fmt.Errorf("frame fields %v, want %s", fields, want)
	case e.Type != string(e.Event.Type) || e.Event.Time.IsZero():
		return fmt.Errorf("frame event %q carries %+v", e.Type, e.Event)
	case e.durable() && e.Pos != strconv.FormatInt(e.Event.Offset, 10):
		return fmt.Errorf("frame id %q carries durable event %d", e.Pos, e.Event.Offset)
	case !e.durable() && e.Type != string(longhaul.EventToolStatus) && !strings.Contains(e.Pos, ":"):
		return fmt.Errorf("ephemeral %s frame has id %q, want offset:bytes", e.Type, e.Pos)
	}
	return nil
}

// readEvents reads frames until stop returns true for one (it then closes
// the stream, as a client that leaves) or the stream ends, and reports
// whether the server ended the stream.
func readEvents(t *testing.T, s *sseStream, stop func(sseEvent) bool) ([]sseEvent, bool) {
	t.Helper()
	defer s.body.Close()
	var out []sseEvent
	for {
		e, err := s.next()
		switch {
		case err == io.EOF:
			return out, true
		case err != nil:
			t.Fatalf("read events: %v (after %v)", err, types(out))
		}
		out = append(out, e)
		if stop != nil && stop(e) {
			return out, false
		}
	}
}

// followToDone reads a run's whole stream and checks it ends with done,
// closed by the server, with strictly increasing ids.
func followToDone(t *testing.T, ctx context.Context, env *testenv.Env, id string, headers map[string]string) []sseEvent {
	t.Helper()
	events, ended := readEvents(t, openEvents(t, ctx, env, id, "", headers), nil)
	if !ended || len(events) == 0 || events[len(events)-1].Type != string(longhaul.EventDone) {
		t.Fatalf("stream of %s did not end with done: %v", id, types(events))
	}
	checkIncreasing(t, events)
	return events
}

// checkIncreasing checks the durable events' offsets strictly increase.
func checkIncreasing(t *testing.T, events []sseEvent) {
	t.Helper()
	var last int64
	for i, e := range durableOnly(events) {
		if e.ID <= last {
			t.Fatalf("durable ids not strictly increasing at %d: %d after %d", i, e.ID, last)
		}
		last = e.ID
	}
}

// durableOnly are the durable events of events.
func durableOnly(events []sseEvent) []sseEvent {
	var out []sseEvent
	for _, e := range events {
		if e.durable() {
			out = append(out, e)
		}
	}
	return out
}

// deltaText is the text of the content_delta events, with content_reset
// voiding what came before of the call: what a client that renders deltas
// shows.
func deltaText(t *testing.T, events []sseEvent) string {
	t.Helper()
	var calls []string
	text := map[string]string{}
	for _, e := range events {
		switch e.Type {
		case string(longhaul.EventContentDelta):
			var d longhaul.Delta
			if err := e.Event.Decode(&d); err != nil {
				t.Fatal(err)
			}
			if _, ok := text[d.Call]; !ok {
				calls = append(calls, d.Call)
				if d.From > 0 {
					// A part that resumed mid-answer: the text from here.
					text[d.Call] = strings.Repeat("\x00", d.From)
				}
			}
			if d.From != len(text[d.Call]) {
				t.Fatalf("delta of %s from %d, but the client has %d bytes", d.Call, d.From, len(text[d.Call]))
			}
			text[d.Call] += d.Text
		case string(longhaul.EventContentReset):
			var d longhaul.ContentResetData
			if err := e.Event.Decode(&d); err != nil {
				t.Fatal(err)
			}
			text[d.Call] = ""
		}
	}
	var b strings.Builder
	for _, c := range calls {
		b.WriteString(strings.TrimLeft(text[c], "\x00"))
	}
	return b.String()
}

func types(events []sseEvent) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}

func contentText(t *testing.T, events []sseEvent) string {
	t.Helper()
	var b strings.Builder
	for _, e := range events {
		if e.Type == string(longhaul.EventContent) {
			var d longhaul.ContentData
			if err := e.Event.Decode(&d); err != nil {
				t.Fatal(err)
			}
			b.WriteString(d.Text)
		}
	}
	return b.String()
}

func doneData(t *testing.T, events []sseEvent) longhaul.DoneData {
	t.Helper()
	var d longhaul.DoneData
	if err := events[len(events)-1].Event.Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

func getRun(t *testing.T, env *testenv.Env, id string, headers map[string]string) wire.Run {
	t.Helper()
	return getRunAt(t, env.URL, id, headers)
}

func getRunAt(t *testing.T, base, id string, headers map[string]string) wire.Run {
	t.Helper()
	return decode[wire.Run](t, doWant(t, base, "GET", "/v1/runs/"+id, nil, headers, http.StatusOK))
}

// TestRunLifecycle starts runs with input and with messages and reads them
// to completion: the run goes on without a client, and GET shows status,
// timings, result and usage; an agentic run shows its plan and steps.
func TestRunLifecycle(t *testing.T) {
	layer := fstest.MapFS{"planner.md": {Data: []byte("---\nagent: planner\ndescription: Plans its work\nmode: agentic\nskills: [clock]\n---\nYou plan.\n")}}
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{layer}})
	ctx := within(t, time.Minute)
	ann := user("ann")

	t.Run("input", func(t *testing.T) {
		env.Model.Enqueue(llmtest.Text("Forty-two.", llmtest.Usage(10, 3)))
		r := startRun(t, env, map[string]any{"agent": "naked", "input": "What is the answer?", "metadata": map[string]string{"ticket": "T-1"}}, ann)
		// Nobody follows the run; it finishes by itself.
		var res contract.AgentResult
		if err := env.Client.GetWorkflow(ctx, r.ID, "").Get(ctx, &res); err != nil || res.Content != "Forty-two." {
			t.Fatalf("run result %+v, %v", res, err)
		}
		// The run is its user's alone: anyone else is told there is none.
		if resp := do(t, env, "GET", "/v1/runs/"+r.ID, nil, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET another's run anonymously = %d, want 404", resp.StatusCode)
		}
		got := getRun(t, env, r.ID, ann)
		if got.CreatedAt == nil || got.FinishedAt == nil || got.FinishedAt.Before(*got.CreatedAt) {
			t.Fatalf("timings %v %v", got.CreatedAt, got.FinishedAt)
		}
		want := wire.Run{
			ID: r.ID, Agent: "naked", Status: "completed", Mode: contract.ModeChat, Turns: 1,
			Plans: []contract.PlanRevision{}, Steps: []longhaul.PlanStep{}, Reviews: []longhaul.ReviewData{},
			Result: "Forty-two.", Usage: longhaul.Usage{PromptTokens: 10, CompletionTokens: 3, TotalTokens: 13},
			UsageByModel: []longhaul.ModelUsage{{Model: "llmtest", Usage: longhaul.Usage{PromptTokens: 10, CompletionTokens: 3, TotalTokens: 13}}},
			EventsURL:    r.EventsURL, CreatedAt: got.CreatedAt, FinishedAt: got.FinishedAt, Dispatch: got.Dispatch, Door: "runs",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("run (-want +got):\n%s", diff)
		}
		// The input became one user message, the metadata stayed with the run.
		reqs := env.Model.Requests()
		msgs := reqs[len(reqs)-1].Chat.Messages
		if last := msgs[len(msgs)-1]; last.Role != "user" || last.Content != "What is the answer?" {
			t.Errorf("the model saw %+v", last)
		}
		var in contract.AgentInput
		iter := env.Client.GetWorkflowHistory(ctx, r.ID, "", false, 0)
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		payloads := ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()
		if err := json.Unmarshal(payloads[0].GetData(), &in); err != nil || in.Metadata["ticket"] != "T-1" || in.User.ID != "ann" || in.Quiet {
			t.Errorf("run input %+v, %v", in, err)
		}
	})

	t.Run("messages", func(t *testing.T) {
		env.Model.Enqueue(llmtest.Text("Blue.", llmtest.ChunkSize(2)))
		msgs := []map[string]string{{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Sky colour?"}}
		r := startRun(t, env, map[string]any{"agent": "naked", "messages": msgs}, ann)
		events := followToDone(t, ctx, env, r.ID, ann)
		if got := contentText(t, events); got != "Blue." {
			t.Errorf("streamed content %q; a run must publish its deltas", got)
		}
		if got := getRun(t, env, r.ID, ann); got.Status != "completed" || got.Result != "Blue." {
			t.Errorf("run %+v", got)
		}
	})

	t.Run("agentic", func(t *testing.T) {
		scriptPlan(env, "Tell the time", []map[string]any{
			{"kind": "tool", "target": "current_time", "title": "Read the clock", "arguments": map[string]any{"timezone": "UTC"}, "success": "a time"},
			{"kind": "completion", "title": "Answer", "input": "the time", "success": "answered"},
		}, "the clock answered")
		env.Model.SetDefault(llmtest.Text("It is noon."))
		r := startRun(t, env, map[string]any{"agent": "planner", "input": "What time is it?"}, ann)
		followToDone(t, ctx, env, r.ID, ann)
		got := getRun(t, env, r.ID, ann)
		if got.Status != "completed" || got.Mode != contract.ModeAgentic || got.Result != "It is noon." {
			t.Fatalf("run %+v", got)
		}
		if len(got.Plans) != 1 || got.Plans[0].Revision != 1 || got.Plans[0].Status != contract.PlanDone {
			t.Fatalf("plans %+v", got.Plans)
		}
		var steps []string
		for _, s := range got.Steps {
			steps = append(steps, s.Title+":"+s.Status)
		}
		if diff := cmp.Diff([]string{"Read the clock:done", "Answer:done"}, steps); diff != "" {
			t.Errorf("steps (-want +got):\n%s", diff)
		}
		if len(got.Reviews) != 1 || got.Reviews[0].Decision != longhaul.ReviewOK {
			t.Errorf("reviews %+v", got.Reviews)
		}
	})
}

// listRuns reads every page of GET /v1/runs with query q.
func listRuns(t *testing.T, env *testenv.Env, q url.Values, headers map[string]string) []wire.RunSummary {
	t.Helper()
	return listRunsAt(t, env.URL, q, headers)
}

func listRunsAt(t *testing.T, base string, q url.Values, headers map[string]string) []wire.RunSummary {
	t.Helper()
	if q == nil {
		q = url.Values{}
	}
	var all []wire.RunSummary
	for range 20 {
		resp := doAt(t, base, "GET", "/v1/runs?"+q.Encode(), nil, headers)
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("list %s = %d %s", q.Encode(), resp.StatusCode, b)
		}
		page := decode[wire.RunList](t, resp)
		if page.Object != "list" || page.Data == nil {
			t.Fatalf("page %+v", page)
		}
		all = append(all, page.Data...)
		if page.NextPageToken == "" {
			return all
		}
		q.Set("page_token", page.NextPageToken)
	}
	t.Fatal("too many pages")
	return nil
}

func ids(runs []wire.RunSummary) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

// eventually retries check until it returns "" or ctx ends (visibility is
// eventually consistent); it fails with check's last complaint.
func eventually(t *testing.T, ctx context.Context, check func() string) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		problem := check()
		if problem == "" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal(problem)
		case <-tick.C:
		}
	}
}
