// Long because: BenchmarkEngine, its load generator and its report read top to bottom in one place.

//go:build linux

package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"
)

const (
	// tokenDelay paces the scripted model's streamed answers: 20 tokens/s.
	tokenDelay = 50 * time.Millisecond
	// streamLength is the length of a streamed answer in the concurrency
	// table.
	streamLength = 10 * time.Second
	// longLength is the length of the long streamed answer whose history
	// is counted.
	longLength = 60 * time.Second
	// requestTimeout bounds every request: a slow stream counts as slow,
	// not as an error, unless it takes longer than this.
	requestTimeout = 3 * time.Minute
	// shortAnswer is the scripted model's answer to any other prompt.
	shortAnswer = "The answer is forty-two, as computed."
	// slowPrompt is a prompt the scripted model answers only after
	// slowFirstToken, as a loaded or thinking model does: the time to a
	// stream's headers must not wait for it.
	slowPrompt     = "think before you answer"
	slowFirstToken = time.Second
	// slowSamples is how many streams the slow row times.
	slowSamples = 10
)

// streamPrompt is the prompt the scripted model answers with d of tokens.
func streamPrompt(d time.Duration) string { return fmt.Sprintf("stream for %v", d) }

// streamAnswer is the answer the scripted model streams for d at 20
// tokens/s: one word a token.
func streamAnswer(d time.Duration) string {
	return strings.TrimSpace(strings.Repeat("token ", int(d/tokenDelay)))
}

// settings are the benchmark's settings from the environment (see the
// package comment).
type settings struct {
	samples int
	levels  []int
	long    bool
	out     string
}

// loadSettings reads the settings; levels are the default levels of
// concurrent streams.
func loadSettings(b *testing.B, levels ...int) settings {
	b.Helper()
	s := settings{samples: 200, levels: levels, long: true, out: os.Getenv("LONGHAUL_BENCH_OUT")}
	if v := os.Getenv("LONGHAUL_BENCH_SAMPLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("LONGHAUL_BENCH_SAMPLES=%q: want a positive number", v)
		}
		s.samples = n
	}
	s.levels = positiveList(b, "LONGHAUL_BENCH_LEVELS", levels...)
	if v := os.Getenv("LONGHAUL_BENCH_LONG"); v != "" {
		long, err := strconv.ParseBool(v)
		if err != nil {
			b.Fatalf("LONGHAUL_BENCH_LONG=%q: want 0 or 1", v)
		}
		s.long = long
	}
	return s
}

// positiveList is the comma-separated positive numbers of the environment
// variable name, or def when it is unset.
func positiveList(b *testing.B, name string, def ...int) []int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want comma-separated positive numbers", name, v)
		}
		out = append(out, n)
	}
	return out
}

// BenchmarkEngine runs `longhaul dev` as a child process against the
// scripted model and prints Longhaul's tables (see the package comment).
func BenchmarkEngine(b *testing.B) {
	set := loadSettings(b, 100, 250, 500, 1000)
	model := llmtest.New(b)
	model.On(llmtest.LastUserContains(streamPrompt(longLength)), llmtest.Text(streamAnswer(longLength), llmtest.ChunkDelay(tokenDelay)))
	model.On(llmtest.LastUserContains(streamPrompt(streamLength)), llmtest.Text(streamAnswer(streamLength), llmtest.ChunkDelay(tokenDelay)))
	model.On(llmtest.LastUserContains(slowPrompt), llmtest.Text(shortAnswer, llmtest.FirstByteDelay(slowFirstToken)))
	model.SetDefault(llmtest.Text(shortAnswer))
	bin := binary(b)
	lh := startChild(b, bin, model.URL())
	tc := lh.temporalClient(b)
	engineURL := lh.url + "/v1/chat/completions"
	directURL := strings.TrimSuffix(model.URL(), "/") + "/chat/completions"
	startCPU, err := lh.cpu()
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()

	seq := sequential(b, set.samples, directURL, engineURL)
	lh.check(b)
	hist := histories(b, lh, tc, engineURL, set.long)
	lh.check(b)
	conc := concurrent(b, lh, engineURL, set.levels)
	b.StopTimer()
	totalCPU, err := lh.cpu()
	if err != nil {
		b.Fatal(err)
	}

	head := fmt.Sprintf("%s on %s/%s, %d CPUs, bench built with %s; longhaul dev as a child process (%s), %.1f CPU s in all\n\n",
		time.Now().Format(time.DateTime), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), bin, (totalCPU - startCPU).Seconds())
	report(b, head, set.out, seq, conc, hist)
}

// report prints head and the tables aligned for a terminal and, unless
// path is empty, writes head and the tables as Markdown to path.
func report(b *testing.B, head, path string, tables ...table) {
	b.Helper()
	var text, md strings.Builder
	text.WriteString(head)
	md.WriteString(head)
	for _, t := range tables {
		t.text(&text)
		t.markdown(&md)
	}
	fmt.Print("\n" + text.String())
	if path != "" {
		if err := os.WriteFile(path, []byte(md.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// sequential measures one request at a time: a non-streaming turn and the
// time to the first token, through Longhaul and against the scripted model
// directly.
func sequential(b *testing.B, samples int, directURL, engineURL string) table {
	b.Helper()
	ctx := context.Background()
	for range 20 { // warm up both paths
		if _, err := nonStream(ctx, engineURL, chatBody("naked", false, "warm")); err != nil {
			b.Fatal(err)
		}
		if _, err := nonStream(ctx, directURL, chatBody("llmtest", false, "warm")); err != nil {
			b.Fatal(err)
		}
	}
	var direct, engine, directHeaders, engineHeaders, directTTFT, engineTTFT stats
	for i := range samples {
		q := fmt.Sprint("q", i)
		d, err := nonStream(ctx, directURL, chatBody("llmtest", false, q))
		if err != nil {
			b.Fatal(err)
		}
		direct = append(direct, d)
		e, err := nonStream(ctx, engineURL, chatBody("naked", false, q))
		if err != nil {
			b.Fatal(err)
		}
		engine = append(engine, e)
		t1, err := stream(ctx, directURL, chatBody("llmtest", true, q))
		if err != nil {
			b.Fatal(err)
		}
		directHeaders, directTTFT = append(directHeaders, t1.headers), append(directTTFT, t1.ttft)
		t2, err := stream(ctx, engineURL, chatBody("naked", true, q))
		if err != nil {
			b.Fatal(err)
		}
		engineHeaders, engineTTFT = append(engineHeaders, t2.headers), append(engineTTFT, t2.ttft)
	}
	var directSlow, engineSlow stats
	for i := range slowSamples {
		q := fmt.Sprint(slowPrompt, " ", i)
		for _, m := range []struct {
			url, model string
			into       *stats
		}{{directURL, "llmtest", &directSlow}, {engineURL, "naked", &engineSlow}} {
			st, err := stream(ctx, m.url, chatBody(m.model, true, q))
			if err != nil {
				b.Fatal(err)
			}
			*m.into = append(*m.into, st.headers)
		}
	}
	b.ReportMetric(msf(engine.pct(.5)-direct.pct(.5)), "overhead-p50-ms")
	b.ReportMetric(msf(engineTTFT.pct(.5)-directTTFT.pct(.5)), "ttft-overhead-p50-ms")
	b.ReportMetric(msf(engineHeaders.pct(.5)), "headers-p50-ms")
	t := table{
		title: fmt.Sprintf("sequential, %d samples", samples),
		head:  []string{"", "direct p50 ms", "direct p99 ms", "longhaul p50 ms", "longhaul p99 ms", "overhead p50 ms", "overhead p99 ms"},
	}
	for _, r := range []struct {
		name string
		d, e stats
	}{
		{"non-streaming turn", direct, engine},
		{"time to headers", directHeaders, engineHeaders},
		{"time to first token", directTTFT, engineTTFT},
		{fmt.Sprintf("time to headers, model %v to its first token (%d samples)", slowFirstToken, slowSamples), directSlow, engineSlow},
	} {
		t.rows = append(t.rows, []string{r.name, ms(r.d.pct(.5)), ms(r.d.pct(.99)), ms(r.e.pct(.5)), ms(r.e.pct(.99)),
			ms(r.e.pct(.5) - r.d.pct(.5)), ms(r.e.pct(.99) - r.d.pct(.99))})
	}
	return t
}

// histories counts the history events of a short non-streamed turn and of
// a 10 s and (when long) a 60 s streamed turn, the streamed ones run side
// by side on an otherwise idle engine.
func histories(b *testing.B, lh *child, tc client.Client, engineURL string, long bool) table {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*requestTimeout)
	defer cancel()
	t := table{title: "history events per turn", head: []string{"turn", "events", "executions"}}

	resp, err := httpClient.Post(engineURL, "application/json", bytes.NewReader(chatBody("naked", false, "count")))
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("short turn: status %d", resp.StatusCode)
	}
	events, _, execs, err := historyEvents(ctx, tc, resp.Header.Get(api.HeaderRunID))
	if err != nil {
		b.Fatal(err)
	}
	t.rows = append(t.rows, []string{"short answer, not streamed", strconv.Itoa(events), strconv.Itoa(execs)})

	lengths := []time.Duration{streamLength}
	if long {
		lengths = append(lengths, longLength)
	}
	counts, execCounts := make([]int, len(lengths)), make([]int, len(lengths))
	errs := make([]error, len(lengths))
	var wg sync.WaitGroup
	for i, d := range lengths {
		wg.Go(func() {
			chat := fmt.Sprintf("history-%v", d)
			st, err := stream(ctx, engineURL, chatBodyIn(chat, true, streamPrompt(d)))
			if err == nil {
				err = sameText(st.text, streamAnswer(d))
			}
			if err != nil {
				errs[i] = fmt.Errorf("%v streamed turn: %w", d, err)
				return
			}
			events, _, execs, err := historyEvents(ctx, tc, chatRunID(chat))
			if err != nil {
				errs[i] = fmt.Errorf("%v streamed turn: %w", d, err)
				return
			}
			counts[i] = events
			execCounts[i] = execs
		})
	}
	wg.Wait()
	for i, d := range lengths {
		if errs[i] != nil {
			lh.fatal(b, errs[i])
		}
		t.rows = append(t.rows, []string{fmt.Sprintf("%v streamed answer (20 tok/s)", d), strconv.Itoa(counts[i]), strconv.Itoa(execCounts[i])})
		b.ReportMetric(float64(counts[i]), fmt.Sprintf("history-events-%ds-turn", int(d.Seconds())))
	}
	return t
}

// historyEvents waits for a workflow to close and counts the events of its
// history and their bytes (as protobuf, as the server stores them), across
// the executions it continued as new into.
func historyEvents(ctx context.Context, tc client.Client, workflowID string) (events, size, executions int, err error) {
	if err := tc.GetWorkflow(ctx, workflowID, "").Get(ctx, nil); err != nil {
		return 0, 0, 0, fmt.Errorf("run %s: %w", workflowID, err)
	}
	runID := "" // the latest execution; each names the one before it
	for executions < 1000 {
		it := tc.GetWorkflowHistory(ctx, workflowID, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		prev := ""
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return 0, 0, 0, fmt.Errorf("history of %s: %w", workflowID, err)
			}
			size += proto.Size(ev)
			if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
				prev = a.GetContinuedExecutionRunId()
			}
			events++
		}
		executions++
		if prev == "" {
			return events, size, executions, nil
		}
		runID = prev
	}
	return 0, 0, 0, fmt.Errorf("history of %s: more than %d executions", workflowID, executions)
}

// concurrent runs each level of concurrent streams twice, arriving
// steadily and as a burst, and measures the child's CPU time and peak
// resident memory over each.
func concurrent(b *testing.B, lh *child, engineURL string, levels []int) table {
	b.Helper()
	peakHead := "peak RSS MB"
	if err := lh.resetPeak(); err != nil {
		b.Logf("cannot reset the peak RSS (%v): reporting the process-lifetime peak", err)
		peakHead = "lifetime peak RSS MB"
	}
	// The child's CPU use at rest, for scale.
	lh.settle()
	idle0, err := lh.cpu()
	if err != nil {
		lh.fatal(b, err)
	}
	time.Sleep(5 * time.Second)
	idle1, err := lh.cpu()
	if err != nil {
		lh.fatal(b, err)
	}
	t := table{
		title: fmt.Sprintf("concurrent streaming chats, 20 tok/s for %v each; steady: one every %v/N; 100/s: one every %v; longhaul at rest: %.2f CPU s/s",
			streamLength, streamLength, arrivalRate, (idle1-idle0).Seconds()/5),
		head: []string{"streams", "arrival", "ok", "errors", "of them 429", "headers p50 ms", "headers p99 ms", "TTFT p50 ms", "TTFT p99 ms", "duration p50 s", "duration p99 s", "wall s", "CPU s", peakHead},
	}
	run := 0
	seen := map[int]int{} // a level named again (a soak) is round 2, 3, …
	for _, n := range levels {
		seen[n]++
		for _, a := range arrivals(n) {
			mode := a.name
			run++
			name := fmt.Sprintf("%d-%s", n, a.file)
			if seen[n] > 1 {
				name = fmt.Sprintf("%s-%d", name, seen[n])
			}
			var r streamResults
			var wall time.Duration
			cpu, peak := lh.measure(b, func() {
				start := time.Now()
				prof := lh.profile(b, name, streamLength+a.interval*time.Duration(n))
				r = streams([]string{engineURL}, fmt.Sprintf("r%d-%s-%d", run, a.file, n), n, a.interval)
				wall = time.Since(start)
				prof()
			})
			fmt.Fprintf(os.Stderr, "bench: %d %s streams: %d ok, %d errors in %.1f s\n", n, mode, len(r.ttft), r.errors, wall.Seconds())
			t.rows = append(t.rows, []string{strconv.Itoa(n), mode, strconv.Itoa(len(r.ttft)), strconv.Itoa(r.errors), strconv.Itoa(r.tooMany),
				ms(r.headers.pct(.5)), ms(r.headers.pct(.99)), ms(r.ttft.pct(.5)), ms(r.ttft.pct(.99)), secs(r.total.pct(.5)), secs(r.total.pct(.99)),
				secs(wall), secs(cpu), strconv.FormatInt(peak>>20, 10)})
			if r.errors > 0 {
				b.Logf("%d %s streams: %d errors: %s", n, mode, r.errors, r.summary())
			}
			if r.slowestTime > 2*streamLength {
				b.Logf("%d %s streams: the slowest took %v: run %s (LONGHAUL_BENCH_KEEP=1 keeps its history)",
					n, mode, r.slowestTime.Round(100*time.Millisecond), chatRunID(r.slowest))
			}
			key := fmt.Sprintf("%s%d-", a.file, n)
			b.ReportMetric(float64(r.errors), key+"errors")
			b.ReportMetric(msf(r.headers.pct(.99)), key+"headers-p99-ms")
			b.ReportMetric(msf(r.ttft.pct(.99)), key+"ttft-p99-ms")
			b.ReportMetric(cpu.Seconds(), key+"cpu-s")
			b.ReportMetric(float64(peak>>20), key+"peak-rss-MB")
			lh.check(b)
		}
	}
	return t
}

// arrivalRate is the steady arrival rate of the targets: 100
// streams a second.
const arrivalRate = 10 * time.Millisecond

// arrival is how a level's streams arrive: one every interval, or all at
// once (a zero interval).
type arrival struct {
	name, file string
	interval   time.Duration
}

// arrivals are the arrivals each level of n streams is run with: steady
// (one every streamLength/n), a burst, and, when steady is not already
// that, one every arrivalRate (100/s).
func arrivals(n int) []arrival {
	steady := streamLength / time.Duration(n)
	as := []arrival{{"steady", "steady", steady}, {"burst", "burst", 0}}
	if steady != arrivalRate {
		as = append(as, arrival{"100/s", "100s", arrivalRate})
	}
	return as
}

// streamResults are the figures of one level of concurrent streams.
type streamResults struct {
	headers, ttft, total stats
	errors               int
	// tooMany counts the errors that were a 429 (the API's admission
	// queue was full).
	tooMany   int
	byMessage map[string]int
	// example is the chat id of one stream that failed with each message.
	example map[string]string
	// slowest is the chat id of the stream that took longest, and took
	// what it took.
	slowest     string
	slowestTime time.Duration
}

// summary lists the errors by message, the most frequent first.
func (r streamResults) summary() string {
	msgs := slices.SortedFunc(maps.Keys(r.byMessage), func(x, y string) int {
		return cmp.Or(cmp.Compare(r.byMessage[y], r.byMessage[x]), cmp.Compare(x, y))
	})
	var parts []string
	for i, m := range msgs {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more kinds", len(msgs)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%d× %s (e.g. run %s)", r.byMessage[m], m, chatRunID(r.example[m])))
	}
	return strings.Join(parts, "; ")
}

// streams runs n streaming chats of streamLength each, one every interval
// (all at once when it is zero), and checks that each streams the whole
// answer. Chat i goes to engineURLs[i % len(engineURLs)]: a client
// spreading its requests over several APIs.
func streams(engineURLs []string, prefix string, n int, interval time.Duration) streamResults {
	want := streamAnswer(streamLength)
	prompt := streamPrompt(streamLength)
	var mu sync.Mutex
	r := streamResults{byMessage: map[string]int{}, example: map[string]string{}}
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		if interval > 0 {
			time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		}
		wg.Go(func() {
			chat := fmt.Sprint(prefix, "-", i)
			st, err := stream(context.Background(), engineURLs[i%len(engineURLs)], chatBodyIn(chat, true, prompt))
			if err == nil {
				err = sameText(st.text, want)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				r.errors++
				if errors.Is(err, errTooMany) {
					r.tooMany++
				}
				r.byMessage[err.Error()]++
				r.example[err.Error()] = chat
				return
			}
			r.headers = append(r.headers, st.headers)
			r.ttft = append(r.ttft, st.ttft)
			r.total = append(r.total, st.total)
			if st.total > r.slowestTime {
				r.slowest, r.slowestTime = chat, st.total
			}
		})
	}
	wg.Wait()
	return r
}

// sameText reports how the streamed text got differs from the answer want:
// their lengths and got around the first byte that differs.
func sameText(got, want string) error {
	if got == want {
		return nil
	}
	i := 0
	for i < min(len(got), len(want)) && got[i] == want[i] {
		i++
	}
	return fmt.Errorf("text mismatch: %d bytes, want %d; from byte %d: %q", len(got), len(want), i, got[max(i-12, 0):min(i+36, len(got))])
}

func chatBody(model string, stream bool, text string) []byte {
	b, _ := json.Marshal(map[string]any{
		"model": model, "stream": stream,
		"messages": []map[string]string{{"role": "user", "content": text}},
	})
	return b
}

// chatBodyIn is chatBody for the naked agent in a named conversation, whose
// run id is chatRunID(chat).
func chatBodyIn(chat string, stream bool, text string) []byte {
	b, _ := json.Marshal(map[string]any{
		"model": "naked", "stream": stream, "metadata": map[string]string{"chat_id": chat},
		"messages": []map[string]string{{"role": "user", "content": text}},
	})
	return b
}

// chatRunID is the id of the run of the first turn of chat, for an
// anonymous caller (no API keys).
func chatRunID(chat string) string { return contract.ChatRunID("anonymous/"+chat, 1, "") }

// post sends body to url, within requestTimeout of ctx.
func post(ctx context.Context, url string, body []byte) (*http.Response, context.CancelFunc, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return resp, cancel, nil
}

// nonStream posts a non-streaming request and returns its latency.
func nonStream(ctx context.Context, url string, body []byte) (time.Duration, error) {
	start := time.Now()
	resp, cancel, err := post(ctx, url, body)
	if err != nil {
		return 0, err
	}
	defer cancel()
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	return time.Since(start), nil
}

// streamed is what one streamed request took: the time to its response
// headers and to its first content delta, in all, and the text.
type streamed struct {
	headers, ttft, total time.Duration
	text                 string
}

// stream posts a streaming request and times it.
func stream(ctx context.Context, url string, body []byte) (streamed, error) {
	var st streamed
	start := time.Now()
	resp, cancel, err := post(ctx, url, body)
	if err != nil {
		return st, err
	}
	st.headers = time.Since(start)
	defer cancel()
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusTooManyRequests {
		return st, fmt.Errorf("%w (Retry-After %q)", errTooMany, resp.Header.Get("Retry-After"))
	}
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("status %d", resp.StatusCode)
	}
	var b strings.Builder
	rd := ssetest.NewReader(resp.Body)
	for {
		e, err := rd.Next()
		switch {
		case errors.Is(err, io.EOF):
			return st, fmt.Errorf("stream ended without [DONE]")
		case err != nil:
			return st, err
		}
		d := e.Data
		if d == ssetest.Done {
			break
		}
		var c struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
			Error *struct{ Message string } `json:"error"`
		}
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			return st, err
		}
		if c.Error != nil {
			return st, fmt.Errorf("stream error: %s", c.Error.Message)
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != "" && st.ttft == 0 {
				st.ttft = time.Since(start)
			}
			b.WriteString(ch.Delta.Content)
		}
	}
	st.total, st.text = time.Since(start), b.String()
	return st, nil
}

// errTooMany is a stream's error when the API answered 429.
var errTooMany = errors.New("status 429")

type stats []time.Duration

func (s stats) pct(p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := slices.Clone(s)
	slices.Sort(c)
	return c[int(p*float64(len(c)-1))]
}

func msf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
func ms(d time.Duration) string   { return fmt.Sprintf("%.1f", msf(d)) }
func secs(d time.Duration) string { return fmt.Sprintf("%.1f", d.Seconds()) }

// table is one table of the report, printed aligned for a terminal and as
// Markdown for LONGHAUL_BENCH_OUT.
type table struct {
	title string
	head  []string
	rows  [][]string
}

func (t table) text(w io.Writer) {
	fmt.Fprintln(w, t.title)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(t.head, "\t")+"\t")
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
	}
	tw.Flush()
	fmt.Fprintln(w)
}

func (t table) markdown(w io.Writer) {
	fmt.Fprintf(w, "%s\n\n| %s |\n|%s\n", t.title, strings.Join(t.head, " | "), strings.Repeat("---|", len(t.head)))
	for _, r := range t.rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
	fmt.Fprintln(w)
}
