// Package natsbus carries a run's ephemeral deltas — the text of a running
// model call, a tool call's progress — from the activity that produces them
// to the API processes that stream them, over NATS. Nothing here is durable:
// the workflow keeps each finished call's whole text, so a delta that is
// lost (NATS restarted, a subscriber joined late) costs liveness, never text.
//
// Core NATS, not JetStream: a call that is running keeps its own text and
// answers a snapshot request for it, so a subscriber that joins late or
// notices a gap (each delta names its byte position) asks the call instead
// of a stream store. Subjects, per run:
//
//	<prefix>.run.<run>.call.<call>.<attempt>   a model call's text deltas
//	<prefix>.run.<run>.tool                    tool progress
//	<prefix>.snap.<run>                        snapshot requests to running calls
//	<prefix>.cancel.<run>                      "the run was cancelled", to its running model calls
//
// where <prefix> is the configured prefix and the Temporal namespace, so
// deployments may share a NATS cluster.
package natsbus

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/nats-io/nats.go"
)

// DefaultPrefix is the subject prefix when none is configured.
const DefaultPrefix = "longhaul"

// Subjects names the subjects of one deployment (prefix and namespace).
type Subjects struct{ prefix string }

// NewSubjects returns the subjects under prefix for a Temporal namespace.
func NewSubjects(prefix, namespace string) Subjects {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return Subjects{prefix: prefix + "." + token(namespace)}
}

// Run is the wildcard subject of every delta of run.
func (s Subjects) Run(run string) string { return s.prefix + ".run." + token(run) + ".>" }

// Call is the subject of one attempt of a model call's text deltas.
func (s Subjects) Call(run, call string, attempt int) string {
	return s.prefix + ".run." + token(run) + ".call." + token(call) + "." + strconv.Itoa(attempt)
}

// Tool is the subject of a run's tool progress.
func (s Subjects) Tool(run string) string { return s.prefix + ".run." + token(run) + ".tool" }

// Snapshot is the subject a run's running calls answer snapshot requests on.
func (s Subjects) Snapshot(run string) string { return s.prefix + ".snap." + token(run) }

// Cancel is the subject an API tells a run's running model calls on that
// Temporal has taken the run's cancellation.
func (s Subjects) Cancel(run string) string { return s.prefix + ".cancel." + token(run) }

var plainToken = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// token makes s one subject token: as it is when it is short and plain,
// else "=" and a hash (workflow ids may hold dots, which separate tokens).
func token(s string) string {
	if plainToken.MatchString(s) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "=" + hex.EncodeToString(sum[:16])
}

// Bus publishes and follows deltas on one NATS connection. A nil *Bus is a
// bus without NATS: calls keep their text and nothing is published, so a
// worker or test without NATS streams nothing but loses nothing.
type Bus struct {
	nc   *nats.Conn
	subj Subjects
	log  *slog.Logger
}

// New returns a bus on nc.
func New(nc *nats.Conn, subj Subjects, log *slog.Logger) *Bus {
	if log == nil {
		log = slog.Default()
	}
	return &Bus{nc: nc, subj: subj, log: log}
}

// Conn is the bus's connection (nil for a nil bus).
func (b *Bus) Conn() *nats.Conn {
	if b == nil {
		return nil
	}
	return b.nc
}

// CallStream publishes one attempt of a model call's text (and its
// reasoning, a separate text) as it arrives and answers snapshot requests
// with both so far until it is closed.
type CallStream struct {
	bus     *Bus
	subject string
	snap    *nats.Subscription

	mu        sync.Mutex
	head      longhaul.CallText
	text      []byte
	reasoning []byte
}

// OpenCall starts publishing the text of a call of run, which started after
// the durable offset after.
func (b *Bus) OpenCall(run, call string, attempt int, after int64) *CallStream {
	cs := &CallStream{bus: b, head: longhaul.CallText{Call: call, Attempt: attempt, After: after}}
	if b == nil {
		return cs
	}
	cs.subject = b.subj.Call(run, call, attempt)
	// The snapshot responder is subscribed before the first delta goes out
	// on the same connection, so the server knows it before anyone can see
	// a delta and ask.
	sub, err := b.nc.Subscribe(b.subj.Snapshot(run), func(m *nats.Msg) {
		if m.Reply == "" {
			return
		}
		data, err := json.Marshal([]longhaul.CallText{cs.Snapshot()})
		if err == nil {
			_ = m.Respond(data)
		}
	})
	if err != nil {
		b.log.Debug("nats: no snapshot responder", "run", run, "call", call, "error", err)
	}
	cs.snap = sub
	return cs
}

// Write appends text to the call's text and publishes it. It never blocks on
// the network: while NATS is away the connection buffers a little and then
// drops, and subscribers catch up from a snapshot or the durable text.
func (cs *CallStream) Write(text string) {
	cs.write(longhaul.DeltaContent, &cs.text, text)
}

// WriteReasoning appends text to the call's reasoning and publishes it as
// a reasoning delta, as Write does the text.
func (cs *CallStream) WriteReasoning(text string) {
	cs.write(longhaul.DeltaReasoning, &cs.reasoning, text)
}

func (cs *CallStream) write(kind longhaul.DeltaKind, buf *[]byte, text string) {
	if text == "" {
		return
	}
	cs.mu.Lock()
	from := len(*buf)
	*buf = append(*buf, text...)
	cs.mu.Unlock()
	if cs.subject == "" {
		return
	}
	d := longhaul.Delta{Kind: kind, Call: cs.head.Call, Attempt: cs.head.Attempt, After: cs.head.After, From: from, Text: text}
	if data, err := json.Marshal(d); err == nil {
		_ = cs.bus.nc.Publish(cs.subject, data)
	}
}

// Text is the call's text so far.
func (cs *CallStream) Text() string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return string(cs.text)
}

// Reasoning is the call's reasoning so far.
func (cs *CallStream) Reasoning() string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return string(cs.reasoning)
}

// Snapshot is the call's text and reasoning so far with the call's names.
func (cs *CallStream) Snapshot() longhaul.CallText {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	s := cs.head
	s.Text = string(cs.text)
	s.Reasoning = string(cs.reasoning)
	return s
}

// Close stops answering snapshot requests; the call's text is durable now
// (or void, if the attempt failed).
func (cs *CallStream) Close() {
	if cs.snap != nil {
		_ = cs.snap.Unsubscribe()
	}
}

// ToolStatus publishes a tool call's progress; after is the durable offset
// of the call's tool_start event.
func (b *Bus) ToolStatus(run string, after int64, st longhaul.ToolStatusData) {
	if b == nil {
		return
	}
	d := longhaul.Delta{Kind: longhaul.DeltaToolStatus, After: after, Status: &st}
	if data, err := json.Marshal(d); err == nil {
		_ = b.nc.Publish(b.subj.Tool(run), data)
	}
}

// Follow delivers every delta of run to handle, in the order each publisher
// sent them, until stop is called. handle runs on the subscription's own
// goroutine and must not block for long.
func (b *Bus) Follow(run string, handle func(longhaul.Delta)) (stop func(), err error) {
	if b == nil {
		return func() {}, nil
	}
	sub, err := b.nc.Subscribe(b.subj.Run(run), func(m *nats.Msg) {
		var d longhaul.Delta
		if json.Unmarshal(m.Data, &d) == nil {
			handle(d)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("follow run %s on NATS: %w", run, err)
	}
	// Many deltas may wait while a handler is busy; a slow consumer drops
	// rather than stalls the connection, and gaps are filled from a snapshot.
	_ = sub.SetPendingLimits(64<<10, 64<<20)
	return func() { _ = sub.Unsubscribe() }, nil
}

// ErrNoCall reports that no call of the run answered a snapshot request:
// none is running, or NATS cannot reach it.
var ErrNoCall = errors.New("no running call answered")

// Snapshot asks the run's running model call for its text so far.
func (b *Bus) Snapshot(ctx context.Context, run string) ([]longhaul.CallText, error) {
	if b == nil {
		return nil, ErrNoCall
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
	}
	m, err := b.nc.RequestWithContext(ctx, b.subj.Snapshot(run), nil)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) {
			return nil, ErrNoCall
		}
		return nil, fmt.Errorf("snapshot of run %s: %w", run, err)
	}
	var out []longhaul.CallText
	if err := json.Unmarshal(m.Data, &out); err != nil {
		return nil, fmt.Errorf("snapshot of run %s: %w", run, err)
	}
	return out, nil
}

// Cancelled tells run's running model calls that the run was cancelled.
// Temporal tells them too, with the answer to their next heartbeat; this
// is the fast path, so that a call stops within milliseconds while its
// heartbeats stay seconds apart. Call it only once Temporal has taken the
// cancellation: a call that hears it stops as cancelled.
func (b *Bus) Cancelled(run string) {
	if b == nil {
		return
	}
	if err := b.nc.Publish(b.subj.Cancel(run), nil); err != nil {
		b.log.Debug("nats: cancel not published", "run", run, "error", err)
	}
}

// OnCancel calls stop once when run is said to be cancelled (Cancelled),
// until the returned function is called. Without NATS it never calls it.
func (b *Bus) OnCancel(run string, stop func()) (done func()) {
	if b == nil {
		return func() {}
	}
	var once sync.Once
	sub, err := b.nc.Subscribe(b.subj.Cancel(run), func(*nats.Msg) { once.Do(stop) })
	if err != nil {
		b.log.Debug("nats: no cancel subscription", "run", run, "error", err)
		return func() {}
	}
	return func() { _ = sub.Unsubscribe() }
}
