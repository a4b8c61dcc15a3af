package activities

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A model stream's silence is not always a dead connection. Ollama sends
// nothing, not even its headers, while it loads the model: ChatHandler
// waits in scheduleRunner before it writes anything (ollama v0.32.15
// server/routes.go:2634); and nothing while the model writes a tool call,
// which its tool parser holds back until the call is whole
// (server/routes.go:2862-2884: content the parser buffers is not sent, only
// the finished calls are). A long tool call, or a large model loading from
// a cold disk, is silent for minutes.
//
// So a silence of LONGHAUL_MODEL_IDLE_TIMEOUT does not end the attempt by
// itself: the worker asks the endpoint whether it still answers (GET
// <base>/models, which every OpenAI-compatible server serves, Ollama
// included, server/routes.go:1919), on a connection of its own. While it
// answers, the call waits on, asking again every idle timeout, up to
// LONGHAUL_MODEL_SILENCE_MAX of silence; an endpoint that does not answer
// within the probe's time (a server gone, a host that vanished, one hung
// for good) ends the attempt, which Temporal retries. The call's own time
// limit (LONGHAUL_LLM_TIMEOUT) bounds it all.

// DefaultSilenceMax is the longest silence a model call waits through
// while its endpoint answers (LONGHAUL_MODEL_SILENCE_MAX's default).
const DefaultSilenceMax = 10 * time.Minute

// maxProbeWait bounds how long the endpoint may take to answer a probe.
const maxProbeWait = 10 * time.Second

// watchdog calls its function once no reset came for its timeout and, when
// it has a probe, the endpoint does not answer the probe or the silence
// reached the ceiling; a zero timeout never fires.
type watchdog struct {
	timeout time.Duration
	fire    func()
	// probe asks the endpoint whether it still answers; nil: the timeout
	// alone decides.
	probe func(context.Context) error
	// ceiling is the longest silence waited through while probes answer.
	ceiling time.Duration
	// probes is the base of the probes' contexts.
	probes context.Context

	timer *time.Timer
	done  atomic.Bool

	mu sync.Mutex
	// last is when the last chunk came (or the stream started); chunks
	// counts them, so a probe's outcome is dropped when one came meanwhile.
	last   time.Time
	chunks int64
	why    string
	// waited counts the probes the endpoint answered.
	waited int
}

// startWatchdog arms w.
func startWatchdog(w *watchdog) *watchdog {
	w.last = time.Now()
	if w.timeout > 0 {
		w.timer = time.AfterFunc(w.timeout, w.check)
	}
	return w
}

// streamWatch is the watchdog of a stream from ep: silent for the idle
// timeout, the endpoint is asked whether it answers (see above).
func (a *Activities) streamWatch(ctx context.Context, ep endpoint, fire func()) *watchdog {
	w := &watchdog{timeout: a.IdleTimeout, fire: fire, probes: ctx}
	if ceiling := a.silenceMax(); ceiling > a.IdleTimeout {
		w.ceiling = ceiling
		w.probe = func(ctx context.Context) error { return a.probeEndpoint(ctx, ep) }
	}
	return startWatchdog(w)
}

// silenceMax is the ceiling of a silence the endpoint explains.
func (a *Activities) silenceMax() time.Duration {
	switch {
	case a.SilenceMax < 0:
		return 0
	case a.SilenceMax == 0:
		return DefaultSilenceMax
	}
	return a.SilenceMax
}

// check runs when the timer ran out: the stream was silent for the
// timeout since the last chunk or the last answered probe.
func (w *watchdog) check() {
	w.mu.Lock()
	chunks, silent := w.chunks, time.Since(w.last)
	w.mu.Unlock()
	if w.probe == nil {
		w.stopWith(chunks, fmt.Sprintf("the model stream sent nothing for %s (LONGHAUL_MODEL_IDLE_TIMEOUT)", w.timeout))
		return
	}
	if silent >= w.ceiling {
		w.stopWith(chunks, fmt.Sprintf("the model stream sent nothing for %s, the longest silence waited through while the endpoint answers (LONGHAUL_MODEL_SILENCE_MAX)", w.ceiling.Round(time.Second)))
		return
	}
	ctx, cancel := context.WithTimeout(w.probes, min(maxProbeWait, w.timeout))
	err := w.probe(ctx)
	cancel()
	if err != nil {
		w.stopWith(chunks, fmt.Sprintf("the model stream sent nothing for %s (LONGHAUL_MODEL_IDLE_TIMEOUT) and the endpoint did not answer: %v", silent.Round(time.Millisecond), err))
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.chunks != chunks || w.done.Load() {
		return // a chunk came meanwhile and armed the timer again
	}
	// Alive, and busy: loading the model or writing a tool call.
	w.waited++
	w.timer.Reset(min(w.timeout, w.ceiling-time.Since(w.last)))
}

// stopWith fires, unless a chunk came since the check began.
func (w *watchdog) stopWith(chunks int64, why string) {
	w.mu.Lock()
	if w.chunks != chunks || w.done.Load() {
		w.mu.Unlock()
		return
	}
	w.why = why
	w.done.Store(true)
	w.mu.Unlock()
	w.fire()
}

// reset starts the timeout over: a chunk came.
func (w *watchdog) reset() {
	if w.timer == nil || w.done.Load() {
		return
	}
	w.mu.Lock()
	w.last = time.Now()
	w.chunks++
	w.mu.Unlock()
	w.timer.Reset(w.timeout)
}

// fired reports whether the watchdog gave up on the stream.
func (w *watchdog) fired() bool { return w.done.Load() }

// reason says why the watchdog gave up.
func (w *watchdog) reason() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.why
}

// answered is how many probes the endpoint answered during silences.
func (w *watchdog) answered() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.waited
}

func (w *watchdog) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

// probeEndpoint asks ep whether it answers: GET <base>/models with the
// endpoint's key. Any answer but a server error is life; a 5xx, a refused
// or reset connection, or no answer in time is not.
func (a *Activities) probeEndpoint(ctx context.Context, ep endpoint) error {
	url := strings.TrimSuffix(ep.BaseURL, "/") + "/models"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if ep.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+ep.APIKey)
	}
	c := a.ProbeClient
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("GET %s: no answer within %s", url, min(maxProbeWait, a.IdleTimeout))
		}
		return fmt.Errorf("GET %s: %w", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
