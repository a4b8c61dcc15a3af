// Long because: one crash-test scenario, its harness and its report read top to bottom in one place.

//go:build unix

package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// scale is how hard the test shakes the stack.
type scale struct {
	runs        int
	workerKills int
	// serverKill restarts the Temporal server with SIGKILL instead of
	// SIGTERM.
	serverKill bool
}

// full is the test's size, in make test as in make chaos: it takes about
// 35 s on two cores (about a minute and a half with -race), most of it
// fixed costs (the build, the server restart and a killed tool call's 10 s
// heartbeat timeout).
var full = scale{runs: 50, workerKills: 4}

const (
	workers  = 2
	apis     = 2
	user     = "chaos"
	queue    = "chaos"
	runPause = 150 * time.Millisecond // between two runs' starts
	// killWait is how long a kill waits for a tool call in flight, so that
	// it lands mid-call.
	killWait = 5 * time.Second
	// natsWait is how long the NATS kill waits for an answer to begin
	// streaming (a delta ending by byte earlyAnswer of its answer).
	natsWait    = 30 * time.Second
	earlyAnswer = 80
	// moveWait bounds how long the clients of a killed API may take to
	// resume on the other one.
	moveWait = 2 * time.Minute
)

// scaleFromEnv is the full size, adjusted by LONGHAUL_CHAOS_RUNS (number of
// runs), LONGHAUL_CHAOS_KILLS (worker kills) and
// LONGHAUL_CHAOS_SERVER_SIGNAL (TERM, the default, or KILL). Two more
// variables help when it fails: LONGHAUL_CHAOS_BIN runs a given binary,
// LONGHAUL_CHAOS_LOGS keeps the processes' logs in a directory.
func scaleFromEnv(t *testing.T) scale {
	sc := full
	if v := os.Getenv("LONGHAUL_CHAOS_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 {
			t.Fatalf("LONGHAUL_CHAOS_RUNS=%q: want a number of runs, 2 or more", v)
		}
		sc.runs = n
	}
	if v := os.Getenv("LONGHAUL_CHAOS_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			t.Fatalf("LONGHAUL_CHAOS_KILLS=%q: want a number of worker kills", v)
		}
		sc.workerKills = n
	}
	switch v := os.Getenv("LONGHAUL_CHAOS_SERVER_SIGNAL"); v {
	case "", "TERM":
	case "KILL":
		sc.serverKill = true
	default:
		t.Fatalf("LONGHAUL_CHAOS_SERVER_SIGNAL=%q: want TERM or KILL", v)
	}
	return sc
}

// chaosRun is one run of the test and the client following it.
type chaosRun struct {
	item    string
	id      string
	api     int // the API the run was started through and its client began on
	started time.Time
	f       *follower
	ended   time.Time
}

// TestChaos runs the scaled-out topology as processes: `longhaul server`,
// two `longhaul worker`s, two `longhaul api`s and an external NATS
// (Debian's nats-server, which carries the answers' live deltas from the
// workers to the APIs). It starts runs whose agent places an order through
// a declared HTTP tool, through API 1 and API 2 in turn, each run's client
// following its events on the API that started it. While they go on it
// kills a worker with SIGKILL several times (each kill waits for a tool
// call to be in flight at the shop and picks, at random, a worker with one,
// so it lands mid-call) and starts it again, kills NATS with SIGKILL once
// while answers stream (it waits for a client to receive a delta early in
// an answer) and starts it again, restarts the Temporal server once,
// between two halves of the runs, and kills API 1 with SIGKILL once while
// an answer streams through it: its clients, unable to reach it, resume on
// API 2 with Last-Event-ID, and once each has, API 1 starts again. The
// workers and the APIs reconnect by themselves. Then every run must have
// completed with the answer built from its order, every order must have
// been placed exactly once (repeated Idempotency-Keys are retries, not
// duplicates), and every client, reconnecting after each break with
// Last-Event-ID set to the last id it saw (inside an answer, an
// offset:bytes one), must have seen offsets 1..N once each, in order,
// ending in done, and the answer's text exactly once: the content_delta
// frames across its stream's parts (after content_reset) make up the
// answer's durable content, no byte skipped or sent twice.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary as processes and crashes them")
	}
	sc := scaleFromEnv(t)
	began := time.Now()
	limit := 12 * time.Minute
	if d, ok := t.Deadline(); ok {
		// Fail with the stack's logs, and time for the cleanups, before
		// go test's timeout panics without them.
		limit = time.Until(d) - 30*time.Second
	}
	if limit < 2*time.Minute {
		t.Fatalf("go test -timeout leaves the test %v; it needs a few minutes (make chaos gives it 20)", limit.Round(time.Second))
	}
	// The runs get all but the last minute; the checks get that.
	checkCtx, cancelChecks := context.WithTimeout(context.Background(), limit)
	defer cancelChecks()
	ctx, cancel := context.WithTimeout(checkCtx, limit-time.Minute)
	defer cancel()

	model := llmtest.New(t)
	script(model)
	sh := newShop(workers)
	shopSrv := httptest.NewServer(sh)
	t.Cleanup(shopSrv.Close)
	st := newStack(t, stackConfig{
		workers: workers, apis: apis, model: model,
		files: map[string]string{"clerk.md": clerkAgent, "orders.md": ordersSkill},
		// Every run here is the one anonymous principal's, up to sc.runs
		// at once: the per-principal limits (20 by default) are not what
		// this test is about.
		env: []string{"LONGHAUL_MAX_RUNS=0", "LONGHAUL_MAX_STREAMS=0"},
	})
	workerEnv := func(i int) []string { return []string{fmt.Sprintf("CHAOS_SHOP_URL=%s/w%d", shopSrv.URL, i)} }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.startAll(ctx, workerEnv))
	tc := st.dial(ctx)
	setup := time.Since(began)

	// The script: half the runs, the server restart, the other half;
	// worker kills spread over both halves.
	half := sc.runs / 2
	killAt := map[int]bool{}
	for k := range sc.workerKills {
		// Kill k comes after run killAt of its half has started.
		var at int
		if k < (sc.workerKills+1)/2 {
			n := (sc.workerKills + 1) / 2
			at = (k + 1) * half / (n + 1)
		} else {
			n := sc.workerKills / 2
			at = half + (k-(sc.workerKills+1)/2+1)*(sc.runs-half)/(n+1)
		}
		killAt[at] = true
	}
	if len(killAt) != sc.workerKills {
		t.Fatalf("too few runs (%d) for %d worker kills", sc.runs, sc.workerKills)
	}

	// API 1 is killed once in the second half, so its clients must resume
	// their streams on API 2 with Last-Event-ID.
	apiAt := half + (sc.runs-half)/2
	// NATS restarts once in the first half, between its worker kills.
	natsAt := half / 2
	// answering gets a note, the API's, when a client receives a delta
	// early in an answer (so that most of it is still to come): NATS and
	// API 1 are killed then.
	answering := make(chan int, 8)
	onDelta := func(api, end int) {
		if end <= earlyAnswer {
			select {
			case answering <- api:
			default:
			}
		}
	}
	// waitAnswer waits up to natsWait for a client to receive a delta early
	// in an answer through API api (any API when api < 0) and reports
	// whether one did.
	waitAnswer := func(api int) bool {
		for len(answering) > 0 {
			<-answering
		}
		timeout := time.After(natsWait)
		for {
			select {
			case a := <-answering:
				if api < 0 || a == api {
					return true
				}
			case <-timeout:
				return false
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			}
		}
	}

	runs := make([]*chaosRun, sc.runs)
	var wg sync.WaitGroup
	var kills, midCall int
	var restart struct {
		stop, down, ready time.Duration
		how               string
	}
	var natsRestart struct {
		waited, down, reconnected time.Duration
		streaming                 int // clients receiving an answer when NATS died
		done                      bool
	}
	var apiKill struct {
		waited, resumed, ready time.Duration
		clients, streaming     int // API 1's clients when it died, and of them those receiving an answer
		moved                  int // of them, those that resumed on API 2 (the others had their done)
		done                   bool
	}
	for i := range sc.runs {
		if i == half {
			// Restart the Temporal server while the first half runs. No
			// run is started meanwhile: a POST that fails there leaves
			// the client unsure whether it started a run.
			t0 := time.Now()
			if sc.serverKill {
				restart.how = "SIGKILL"
				st.server.Kill()
			} else {
				restart.how = "SIGTERM"
				if _, err := st.server.Stop(time.Minute); err != nil {
					t.Error(err)
				}
			}
			restart.stop = time.Since(t0)
			must(st.startServer(ctx))
			restart.down = time.Since(t0)
			// The APIs and the workers were started against the old
			// server; they must find the new one by themselves.
			for a := range apis {
				must(st.api(a).WaitFor(ctx, "the API to be ready again", func() bool { return ready(st.apiURL(a) + "/readyz") }))
			}
			must(waitPollers(ctx, tc, st))
			restart.ready = time.Since(t0)
			t.Logf("server restarted (%s): stopped in %v, serving after %v, both APIs ready and both workers polling after %v",
				restart.how, restart.stop.Round(time.Millisecond), restart.down.Round(time.Millisecond), restart.ready.Round(time.Millisecond))
		}
		// The runs and their clients go to API 1 and API 2 in turn.
		r := &chaosRun{item: fmt.Sprintf("item-%02d", i+1), api: i % apis}
		r.id = createRun(t, st.apiURL(r.api), r.item)
		r.started = time.Now()
		r.f = newFollower(st.apiURLs(), r.api, r.id, map[string]string{"X-OpenWebUI-User-Id": user}, onDelta)
		runs[i] = r
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.f.follow(ctx)
			r.ended = time.Now()
		}()
		if killAt[i] {
			t0 := time.Now()
			w, mid := sh.waitInflight(killWait)
			st.worker(w).Kill()
			kills++
			if mid {
				midCall++
			}
			must(st.startWorker(ctx, w, workerEnv(w)))
			t.Logf("killed worker-%d (mid tool call: %v, waited %v for one) and started it again",
				w, mid, time.Since(t0).Round(time.Millisecond))
		}
		if i == natsAt {
			// Wait for an answer to be streaming, then kill NATS under it
			// and start it again on the same address.
			t0 := time.Now()
			if !waitAnswer(-1) {
				t.Logf("no answer began streaming within %v; killing NATS anyway", natsWait)
			}
			natsRestart.waited = time.Since(t0)
			for _, r := range runs[:i+1] {
				if r.f.isStreaming() {
					natsRestart.streaming++
				}
			}
			t0 = time.Now()
			st.nats.Kill()
			must(st.startNATS(ctx))
			natsRestart.down = time.Since(t0)
			// The APIs and the workers must come back by themselves, the
			// APIs with their subscriptions.
			must(st.nats.WaitFor(ctx, "the APIs and the workers to reconnect", st.natsClients))
			natsRestart.reconnected = time.Since(t0)
			natsRestart.done = true
			t.Logf("killed NATS with %d answers streaming (waited %v for one to begin) and started it again: serving after %v, both APIs and both workers reconnected after %v",
				natsRestart.streaming, natsRestart.waited.Round(time.Millisecond), natsRestart.down.Round(time.Millisecond), natsRestart.reconnected.Round(time.Millisecond))
		}
		if i == apiAt {
			// Wait for an answer to be streaming through API 1, kill API 1
			// under it, wait until each of its clients has resumed on API
			// 2 (or had its done already), then start API 1 again. Its
			// clients stay on API 2; the runs after go to both again.
			t0 := time.Now()
			if !waitAnswer(0) {
				t.Logf("no answer began streaming through %s within %v; killing it anyway", apiName(0), natsWait)
			}
			apiKill.waited = time.Since(t0)
			type client struct {
				f      *follower
				before int // its connections to API 2 before the kill
			}
			var clients []client
			for _, r := range runs[:i+1] {
				if at, done, accepted := r.f.where(); at == 0 && !done {
					clients = append(clients, client{r.f, accepted[1]})
					if r.f.isStreaming() {
						apiKill.streaming++
					}
				}
			}
			apiKill.clients = len(clients)
			t0 = time.Now()
			st.api(0).Kill()
			moveCtx, cancelMove := context.WithTimeout(ctx, moveWait)
			err := st.api(1).WaitFor(moveCtx, "the clients of API 1 to resume on API 2", func() bool {
				moved := 0
				for _, c := range clients {
					_, done, accepted := c.f.where()
					switch {
					case accepted[1] > c.before:
						moved++
					case !done:
						return false
					}
				}
				apiKill.moved = moved
				return true
			})
			cancelMove()
			must(err)
			apiKill.resumed = time.Since(t0)
			must(st.startAPI(ctx, 0))
			apiKill.ready = time.Since(t0)
			apiKill.done = true
			t.Logf("killed %s with %d clients following runs through it, %d of them receiving an answer (waited %v for one to begin): %d resumed on %s after %v (%d had their done already); %s started again, ready after %v",
				apiName(0), apiKill.clients, apiKill.streaming, apiKill.waited.Round(time.Millisecond), apiKill.moved, apiName(1),
				apiKill.resumed.Round(time.Millisecond), apiKill.clients-apiKill.moved, apiName(0), apiKill.ready.Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(runPause):
		}
	}
	chaosDone := time.Since(began)
	wg.Wait()
	if ctx.Err() != nil {
		n := 0
		for _, r := range runs {
			if !r.f.done {
				n++
			}
		}
		t.Errorf("%d of %d runs did not finish within %v", n, sc.runs, (limit - time.Minute).Round(time.Second))
	}
	if err := st.checkAlive(); err != nil {
		t.Error(err)
	}
	ctx = checkCtx

	// Check every run.
	rep := sh.report()
	for _, b := range rep.bad {
		t.Errorf("the shop got a bad request: %s", b)
	}
	var completed, duplicates, missing, lost, repeated, connects, breaks, streamErrs int
	var resumes, midResumes, crossResumes, crossMid, deltas, resets, statuses, textLost, textRepeated, liveCalls, wholeCalls, liveAfterNATS int
	// Per API: the runs started through it, the runs after the NATS
	// restart whose client got deltas through it, and the runs started
	// through API 1 after its restart whose client got deltas through it.
	started, afterNATS, liveAfterNATSOn := make([]int, apis), make([]int, apis), make([]int, apis)
	var afterKill, liveAfterKill int
	var slowest time.Duration
	for i, r := range runs {
		started[r.api]++
		got, err := getRun(ctx, st.apiURL(r.api), r.id)
		if err != nil {
			t.Errorf("run %s: %v", r.id, err)
		}
		if got.Status == "completed" {
			completed++
		} else {
			t.Errorf("run %s (%s): status %q, error %q", r.id, r.item, got.Status, got.Error)
		}
		keys := rep.keys[r.item]
		switch {
		case len(keys) == 0:
			missing++
			t.Errorf("run %s: no order placed for %s", r.id, r.item)
			continue
		case len(keys) > 1:
			duplicates += len(keys) - 1
			t.Errorf("run %s: %d orders placed for %s, keys %v", r.id, len(keys), r.item, keys)
		}
		// The order is the run's first tool call.
		if want := r.id + "/call-1"; keys[0] != want {
			t.Errorf("run %s: Idempotency-Key %q, want %q", r.id, keys[0], want)
		}
		want := finalAnswer(rep.answers[keys[0]])
		if got.Result != want {
			t.Errorf("run %s: result %q, want %q", r.id, got.Result, want)
		}

		f := r.f
		l, rp := f.lostOrRepeated()
		lost, repeated = lost+l, repeated+rp
		connects, breaks, streamErrs = connects+f.connects, breaks+f.breaks, streamErrs+f.streamErrs
		resumes, midResumes = resumes+f.resumes, midResumes+f.midResumes
		crossResumes, crossMid = crossResumes+f.crossResumes, crossMid+f.crossMid
		deltas, resets, statuses = deltas+f.deltas, resets+f.resets, statuses+f.statuses
		textLost, textRepeated = textLost+f.textLost, textRepeated+f.textRepeated
		live, unstreamed := f.streamedCalls()
		if unstreamed > 0 && wholeCalls < 3 {
			t.Logf("run %s: its answer came whole in its durable content, no delta of it streamed; what its client did:\n%s", r.id, f.traceText())
		}
		liveCalls, wholeCalls = liveCalls+live, wholeCalls+unstreamed
		if i > natsAt {
			liveAfterNATS += live
			afterNATS[r.api]++
			for a, n := range f.deltasOn {
				if n > 0 {
					liveAfterNATSOn[a]++
				}
			}
		}
		if apiKill.done && i > apiAt && r.api == 0 {
			afterKill++
			if f.deltasOn[0] > 0 {
				liveAfterKill++
			}
		}
		if !f.done || f.status != "completed" {
			t.Errorf("run %s: the client did not see done/completed (done %v, status %q, %d events)", r.id, f.done, f.status, len(f.offsets))
		}
		for _, p := range f.problems {
			t.Errorf("run %s: client: %s", r.id, p)
		}
		if f.moreProblems > 0 {
			t.Errorf("run %s: client: %d more problems", r.id, f.moreProblems)
		}
		if l+rp > 0 {
			t.Errorf("run %s: %d events lost, %d repeated or out of order: %v", r.id, l, rp, f.offsets)
		}
		if c := f.content(); c != want {
			t.Errorf("run %s: the client read the answer %q in its durable content, want %q", r.id, c, want)
		}
		if c := f.streamed(); c != want {
			t.Errorf("run %s: the client streamed the answer %q, want %q", r.id, c, want)
		}
		// What the client pieced together is the run's whole log, as the
		// other API reads it.
		whole := newFollower(st.apiURLs(), (r.api+1)%apis, r.id, f.headers, nil)
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		whole.follow(wctx)
		wcancel()
		if !whole.done || !slices.Equal(whole.offsets, f.offsets) {
			t.Errorf("run %s: the client saw offsets %v, the whole log has %v", r.id, f.offsets, whole.offsets)
		}
		if c := whole.content(); c != f.content() {
			t.Errorf("run %s: the client read the answer %q, the whole log has %q", r.id, f.content(), c)
		}
		for _, p := range whole.problems {
			t.Errorf("run %s: reading the whole log: %s", r.id, p)
		}
		if f.textLost+f.textRepeated > 0 || len(f.problems) > 0 || !f.done || f.streamed() != want {
			t.Logf("run %s: what its client did:\n%s", r.id, f.traceText())
		}
		slowest = max(slowest, r.ended.Sub(r.started))
	}
	for item, keys := range rep.keys {
		if !slices.ContainsFunc(runs, func(r *chaosRun) bool { return r.item == item }) {
			t.Errorf("an order for %s, which no run asked for (keys %v)", item, keys)
		}
	}
	if natsRestart.done && natsAt < sc.runs-1 && liveAfterNATS == 0 {
		t.Errorf("no answer of the %d runs started after the NATS restart streamed live: the APIs or the workers did not come back to NATS", sc.runs-1-natsAt)
	}
	for a := range apis {
		if natsRestart.done && afterNATS[a] > 0 && liveAfterNATSOn[a] == 0 {
			t.Errorf("no client got an answer's deltas through %s after the NATS restart (%d runs started through it since): it did not come back to NATS", apiName(a), afterNATS[a])
		}
	}
	if apiKill.done && apiKill.moved == 0 {
		t.Errorf("none of the %d clients of %s resumed on %s when it was killed: nothing proved about resuming across APIs", apiKill.clients, apiName(0), apiName(1))
	}
	if afterKill > 0 && liveAfterKill == 0 {
		t.Errorf("no client of the %d runs started through %s after its restart got an answer's deltas through it", afterKill, apiName(0))
	}
	took := time.Since(began).Round(time.Second)
	t.Logf("setup %v, chaos over after %v, slowest run %v; %d shop requests, %d model requests; %d connections (%d resumed with Last-Event-ID, %d of them mid-answer), %d stream breaks, %d stream_error frames",
		setup.Round(100*time.Millisecond), chaosDone.Round(100*time.Millisecond), slowest.Round(100*time.Millisecond),
		rep.requests, len(model.Requests()), connects, resumes, midResumes, breaks, streamErrs)
	t.Logf("streams: %d content_delta, %d content_reset, %d tool_status frames; %d answers streamed live (%d of the %d runs after the NATS restart), %d came whole in their durable content only",
		deltas, resets, statuses, liveCalls, liveAfterNATS, sc.runs-1-natsAt, wholeCalls)
	t.Logf("topology: %d APIs (runs: %s), %d workers; %s killed with %d clients on it (%d receiving an answer): %d resumed on %s, %d streams resumed across APIs with Last-Event-ID (%d mid-answer; the others had no event yet and began again); after its restart %d of the %d runs started through %s streamed live through it; events lost %d, repeated %d",
		apis, perAPI(started), workers, apiName(0), apiKill.clients, apiKill.streaming, apiKill.moved, apiName(1),
		crossResumes, crossMid, liveAfterKill, afterKill, apiName(0), lost, repeated)
	t.Logf("chaos: %d/%d complete, %d duplicate effects (%d retried requests), %d lost or repeated events (%d lost, %d repeated), text: %d bytes lost, %d repeated; %d worker kills (%d mid tool call), 1 NATS restart (SIGKILL, %d answers streaming, down %v), 1 server restart (%s), 1 API kill (SIGKILL, %d streams resumed on the other API), took %v",
		completed, sc.runs, duplicates, rep.retried, lost+repeated, lost, repeated, textLost, textRepeated, kills, midCall,
		natsRestart.streaming, natsRestart.down.Round(time.Millisecond), restart.how, apiKill.moved, took)
	if missing > 0 {
		t.Errorf("%d runs placed no order", missing)
	}
}

// perAPI renders a count per API: "25 through API 1, 25 through API 2".
func perAPI(n []int) string {
	parts := make([]string, len(n))
	for i, v := range n {
		parts[i] = fmt.Sprintf("%d through %s", v, apiName(i))
	}
	return strings.Join(parts, ", ")
}

// createRun starts a run ordering item and returns its id.
func createRun(t *testing.T, api, item string) string {
	t.Helper()
	return createRunOf(t, api, "clerk", inputPrefix+item)
}

// createRunOf starts a run of agent with input and returns its id.
func createRunOf(t *testing.T, api, agent, input string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"agent": agent, "input": input})
	req, _ := http.NewRequest("POST", api+"/v1/runs", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-OpenWebUI-User-Id", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /v1/runs: %v", err)
	}
	defer resp.Body.Close()
	var created struct {
		ID string `json:"id"`
	}
	if resp.StatusCode != http.StatusAccepted || json.NewDecoder(resp.Body).Decode(&created) != nil || created.ID == "" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /v1/runs = %d %s", resp.StatusCode, b)
	}
	return created.ID
}

// runInfo is the part of GET /v1/runs/{id} the test checks.
type runInfo struct {
	Status string `json:"status"`
	Result string `json:"result"`
	Error  string `json:"error"`
}

// getRun reads a run, retrying while the API answers 503.
func getRun(ctx context.Context, api, id string) (runInfo, error) {
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", api+"/v1/runs/"+id, nil)
		req.Header.Set("X-OpenWebUI-User-Id", user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return runInfo{}, fmt.Errorf("GET run: %w", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			var r runInfo
			if err := json.Unmarshal(b, &r); err != nil {
				return runInfo{}, fmt.Errorf("GET run: %w", err)
			}
			return r, nil
		case http.StatusServiceUnavailable:
			select {
			case <-ctx.Done():
				return runInfo{}, fmt.Errorf("GET run: %d %s", resp.StatusCode, b)
			case <-time.After(200 * time.Millisecond):
			}
		default:
			return runInfo{}, fmt.Errorf("GET run: %d %s", resp.StatusCode, b)
		}
	}
}

// awaitRun polls a run until it has ended and returns it.
func awaitRun(ctx context.Context, api, id string) (runInfo, error) {
	for {
		r, err := getRun(ctx, api, id)
		if err != nil || slices.Contains([]string{"completed", "failed", "cancelled"}, r.Status) {
			return r, err
		}
		select {
		case <-ctx.Done():
			return r, fmt.Errorf("run %s still %s: %w", id, r.Status, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitPollers waits until every worker process polls the task queue of the
// (new) server: a worker that does not reconnect by itself fails here.
func waitPollers(ctx context.Context, tc client.Client, st *stack) error {
	var want []string
	for i := range workers {
		want = append(want, strconv.Itoa(st.worker(i).Cmd.Process.Pid)+"@")
	}
	since := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		seen := map[string]bool{}
		for p := range 4 {
			name := queue
			if p > 0 {
				name = fmt.Sprintf("/_sys/%s/%d", queue, p)
			}
			for _, typ := range []enums.TaskQueueType{enums.TASK_QUEUE_TYPE_WORKFLOW, enums.TASK_QUEUE_TYPE_ACTIVITY} {
				resp, err := tc.DescribeTaskQueue(ctx, name, typ)
				if err != nil {
					continue
				}
				for _, pi := range resp.GetPollers() {
					for _, w := range want {
						if strings.HasPrefix(pi.GetIdentity(), w) {
							seen[w+typ.String()] = true
						}
					}
				}
			}
		}
		if len(seen) == 2*len(want) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("workers %v not all polling %v after the server restart (seen %v)", want, time.Since(since).Round(time.Second), seen)
		case <-tick.C:
		}
	}
}

// quiet is a Temporal SDK logger that says nothing.
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
