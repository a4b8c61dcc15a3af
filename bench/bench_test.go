// Package bench measures Longhaul against the scripted model called
// directly, on the same machine, so the numbers are ratios that travel:
// engine overhead per non-streaming turn, time to first token, how many
// concurrent streaming chats the machine holds, and history events per turn.
// Run it with `make bench`.
package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testenv"
	"github.com/longhaul-dev/longhaul/workflows"
)

var httpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxConnsPerHost: 0}}

func chatBody(model string, stream bool, text string) []byte {
	b, _ := json.Marshal(map[string]any{
		"model": model, "stream": stream,
		"messages": []map[string]string{{"role": "user", "content": text}},
	})
	return b
}

// chatBodyIn is chatBody for a named conversation, whose run id is known:
// workflows.ChatRunID("anonymous/"+chat, 1, "").
func chatBodyIn(chat string, stream bool, text string) []byte {
	b, _ := json.Marshal(map[string]any{
		"model": "naked", "stream": stream, "metadata": map[string]string{"chat_id": chat},
		"messages": []map[string]string{{"role": "user", "content": text}},
	})
	return b
}

// nonStream posts a non-streaming request and returns its latency.
func nonStream(url string, body []byte) (time.Duration, error) {
	start := time.Now()
	resp, err := httpClient.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	return time.Since(start), nil
}

// stream posts a streaming request and returns the time to the first content
// delta, the total time and the text.
func stream(url string, body []byte) (ttft, total time.Duration, text string, err error) {
	start := time.Now()
	resp, err := httpClient.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, 0, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, 0, "", fmt.Errorf("status %d", resp.StatusCode)
	}
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	done := false
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if d == "[DONE]" {
			done = true
			break
		}
		var c struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
			Error *struct{ Message string } `json:"error"`
		}
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			return 0, 0, "", err
		}
		if c.Error != nil {
			return 0, 0, "", fmt.Errorf("stream error: %s", c.Error.Message)
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != "" && ttft == 0 {
				ttft = time.Since(start)
			}
			b.WriteString(ch.Delta.Content)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, "", err
	}
	if !done {
		return 0, 0, "", fmt.Errorf("stream ended without [DONE]")
	}
	return ttft, time.Since(start), b.String(), nil
}

type stats []time.Duration

func (s stats) pct(p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := slices.Clone(s)
	slices.Sort(c)
	i := int(p * float64(len(c)-1))
	return c[i]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }

func historyEvents(b *testing.B, env *testenv.Env, runID string) int {
	b.Helper()
	it := env.Client.GetWorkflowHistory(context.Background(), runID, "", false, 0)
	n := 0
	for it.HasNext() {
		if _, err := it.Next(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	return n
}

// BenchmarkEngine prints Longhaul's table. Scale the sample counts with
// LONGHAUL_BENCH_SAMPLES (default 200) and the concurrency levels with
// LONGHAUL_BENCH_LEVELS (default 10,50,100,200).
func BenchmarkEngine(b *testing.B) {
	samples := 200
	if v := os.Getenv("LONGHAUL_BENCH_SAMPLES"); v != "" {
		fmt.Sscan(v, &samples)
	}
	levels := []int{10, 50, 100, 200}
	if v := os.Getenv("LONGHAUL_BENCH_LEVELS"); v != "" {
		levels = nil
		for _, f := range strings.Split(v, ",") {
			var n int
			fmt.Sscan(f, &n)
			levels = append(levels, n)
		}
	}
	env := testenv.Start(b, testenv.Options{API: api.Config{EagerStart: true, RequestTimeout: time.Minute}})
	short := llmtest.Text("The answer is forty-two, as computed.")
	env.Model.SetDefault(short)
	engineURL := env.URL + "/v1/chat/completions"
	directURL := strings.TrimSuffix(env.Model.URL(), "/") + "/chat/completions"
	out := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	defer out.Flush()

	// Warm up both paths.
	for range 20 {
		if _, err := nonStream(engineURL, chatBody("naked", false, "warm")); err != nil {
			b.Fatal(err)
		}
		if _, err := nonStream(directURL, chatBody("llmtest", false, "warm")); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()

	// Sequential latency: non-streaming turn and time to first token.
	var direct, engine, directTTFT, engineTTFT stats
	for i := range samples {
		d, err := nonStream(directURL, chatBody("llmtest", false, fmt.Sprint("q", i)))
		if err != nil {
			b.Fatal(err)
		}
		direct = append(direct, d)
		e, err := nonStream(engineURL, chatBody("naked", false, fmt.Sprint("q", i)))
		if err != nil {
			b.Fatal(err)
		}
		engine = append(engine, e)
		t1, _, _, err := stream(directURL, chatBody("llmtest", true, "s"))
		if err != nil {
			b.Fatal(err)
		}
		directTTFT = append(directTTFT, t1)
		t2, _, _, err := stream(engineURL, chatBody("naked", true, "s"))
		if err != nil {
			b.Fatal(err)
		}
		engineTTFT = append(engineTTFT, t2)
	}
	fmt.Fprintf(out, "sequential (%d samples)\tdirect p50 ms\tdirect p99 ms\tlonghaul p50 ms\tlonghaul p99 ms\toverhead p50 ms\toverhead p99 ms\t\n", samples)
	row := func(name string, d, e stats) {
		fmt.Fprintf(out, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, ms(d.pct(.5)), ms(d.pct(.99)), ms(e.pct(.5)), ms(e.pct(.99)),
			ms(e.pct(.5)-d.pct(.5)), ms(e.pct(.99)-d.pct(.99)))
	}
	row("non-streaming turn", direct, engine)
	row("time to first token", directTTFT, engineTTFT)
	b.ReportMetric(float64((engine.pct(.5)-direct.pct(.5)).Microseconds())/1000, "overhead-p50-ms")
	b.ReportMetric(float64((engineTTFT.pct(.5)-directTTFT.pct(.5)).Microseconds())/1000, "ttft-overhead-p50-ms")

	// History events per turn.
	resp, err := httpClient.Post(engineURL, "application/json", bytes.NewReader(chatBody("naked", false, "count")))
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	plainEvents := historyEvents(b, env, resp.Header.Get(api.HeaderRunID))

	// Concurrent streaming chats: the model streams ~20 tokens/s for ~10 s.
	words := strings.TrimSpace(strings.Repeat("token ", 200))
	env.Model.SetDefault(llmtest.Text(words, llmtest.ChunkDelay(50*time.Millisecond)))
	fmt.Fprintln(out, "\t\t\t\t\t\t\t")
	fmt.Fprintln(out, "concurrent streams (20 tok/s, 10 s)\tok\terrors\tTTFT p50 ms\tTTFT p99 ms\tduration p50 s\tduration p99 s\t")
	var streamEvents int
	for _, n := range levels {
		var mu sync.Mutex
		var ttfts, totals stats
		var errs []string
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ttft, total, text, err := stream(engineURL, chatBodyIn(fmt.Sprint("c", n, "-", i), true, "go"))
				if err == nil && text != words {
					err = fmt.Errorf("text mismatch: %d of %d bytes", len(text), len(words))
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err.Error())
					return
				}
				ttfts = append(ttfts, ttft)
				totals = append(totals, total)
			}()
		}
		wg.Wait()
		fmt.Fprintf(out, "%d\t%d\t%d\t%s\t%s\t%.1f\t%.1f\t\n", n, len(ttfts), len(errs), ms(ttfts.pct(.5)), ms(ttfts.pct(.99)),
			totals.pct(.5).Seconds(), totals.pct(.99).Seconds())
		if len(errs) > 0 {
			b.Logf("%d streams: first error: %s", n, errs[0])
		}
		if streamEvents == 0 {
			// One streamed turn's history, for the events-per-turn row.
			streamEvents = historyEvents(b, env, workflows.ChatRunID(fmt.Sprint("anonymous/c", n, "-0"), 1, ""))
		}
	}
	fmt.Fprintln(out, "\t\t\t\t\t\t\t")
	fmt.Fprintf(out, "history events per turn\tshort answer: %d\t10 s streamed answer: %d\t\t\t\t\t\n", plainEvents, streamEvents)
	b.ReportMetric(float64(streamEvents), "history-events-streamed-turn")
}
