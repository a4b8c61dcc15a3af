package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
)

// batchSignaler records the batches it is sent and hands each to a channel.
// With gate set, every signal waits until the gate is closed, after
// announcing itself on entered.
type batchSignaler struct {
	mu      sync.Mutex
	batches []longhaul.EventBatch
	err     error
	got     chan longhaul.EventBatch
	gate    chan struct{}
	entered chan struct{}
}

var _ signaler = (*batchSignaler)(nil)

func newBatchSignaler() *batchSignaler {
	return &batchSignaler{got: make(chan longhaul.EventBatch, 4096), entered: make(chan struct{}, 4096)}
}

func (s *batchSignaler) SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error {
	if workflowID != "wf" || runID != "run" || signalName != longhaul.PublishSignal {
		return fmt.Errorf("signal %q to %s/%s, want %q to wf/run", signalName, workflowID, runID, longhaul.PublishSignal)
	}
	b, ok := arg.(longhaul.EventBatch)
	if !ok {
		return fmt.Errorf("signal argument is a %T, want a longhaul.EventBatch", arg)
	}
	s.entered <- struct{}{}
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	s.batches = append(s.batches, b)
	err := s.err
	s.mu.Unlock()
	s.got <- b
	return err
}

func (s *batchSignaler) all() []longhaul.EventBatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]longhaul.EventBatch(nil), s.batches...)
}

func newTestPublisher(s *batchSignaler, interval time.Duration) *publisher {
	return &publisher{signals: s, workflowID: "wf", runID: "run", id: "7#1", interval: interval}
}

// ev is the n-th test event.
func ev(n int) longhaul.Event {
	return longhaul.NewEvent(longhaul.EventContent, time.Unix(int64(n), 0).UTC(), longhaul.ContentData{Text: fmt.Sprint(n), Call: "turn-1"})
}

func evs(from, to int) []longhaul.Event {
	var out []longhaul.Event
	for i := from; i <= to; i++ {
		out = append(out, ev(i))
	}
	return out
}

// next waits for the next batch.
func next(t *testing.T, s *batchSignaler) longhaul.EventBatch {
	t.Helper()
	select {
	case b := <-s.got:
		return b
	case <-time.After(10 * time.Second):
		t.Fatal("no batch sent within 10s")
		return longhaul.EventBatch{}
	}
}

func batch(seq int64, events []longhaul.Event) longhaul.EventBatch {
	return longhaul.EventBatch{Publisher: "7#1", Seq: seq, Events: events}
}

func diffBatches(t *testing.T, want, got []longhaul.EventBatch) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("batches mismatch (-want +got):\n%s", d)
	}
}

func TestPublisherSendsTheFirstEventAtOnce(t *testing.T) {
	s := newBatchSignaler()
	p := newTestPublisher(s, time.Hour)
	ctx := context.Background()
	p.Publish(ctx, ev(1))
	// The interval is an hour: only sending at once gets the event here.
	diffBatches(t, []longhaul.EventBatch{batch(1, evs(1, 1))}, []longhaul.EventBatch{next(t, s)})
	if err := p.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	diffBatches(t, []longhaul.EventBatch{batch(1, evs(1, 1))}, s.all())
}

func TestPublisherBatchesLaterEventsUntilClose(t *testing.T) {
	s := newBatchSignaler()
	p := newTestPublisher(s, time.Hour)
	ctx := context.Background()
	p.Publish(ctx, ev(1))
	next(t, s)
	for i := 2; i <= 5; i++ {
		p.Publish(ctx, ev(i))
	}
	if err := p.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	diffBatches(t, []longhaul.EventBatch{batch(1, evs(1, 1)), batch(2, evs(2, 5))}, s.all())

	p.Publish(ctx, ev(6))
	if err := p.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if n := len(s.all()); n != 2 {
		t.Errorf("after Close, %d batches were sent, want the 2 sent before", n)
	}
}

func TestPublisherFlushesEveryInterval(t *testing.T) {
	s := newBatchSignaler()
	p := newTestPublisher(s, 20*time.Millisecond)
	ctx := context.Background()
	p.Publish(ctx, ev(1))
	next(t, s)
	p.Publish(ctx, ev(2))
	p.Publish(ctx, ev(3))
	// Without Close, only the interval's timer sends these.
	var got []longhaul.Event
	for len(got) < 2 {
		b := next(t, s)
		got = append(got, b.Events...)
	}
	if d := cmp.Diff(evs(2, 3), got); d != "" {
		t.Errorf("events sent by the timer mismatch (-want +got):\n%s", d)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i, b := range s.all() {
		if b.Seq != int64(i+1) {
			t.Errorf("batch %d has seq %d, want %d", i, b.Seq, i+1)
		}
	}
}

func TestPublisherCloseWithNothingToSend(t *testing.T) {
	s := newBatchSignaler()
	p := newTestPublisher(s, time.Hour)
	if err := p.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := len(s.all()); n != 0 {
		t.Errorf("sent %d batches, want none", n)
	}
}

func TestPublisherCloseReportsSignalFailure(t *testing.T) {
	s := newBatchSignaler()
	boom := errors.New("workflow not found")
	s.err = boom
	p := newTestPublisher(s, time.Hour)
	ctx := context.Background()
	p.Publish(ctx, ev(1))
	p.Publish(ctx, ev(2))
	err := p.Close(ctx)
	if !errors.Is(err, boom) {
		t.Errorf("Close = %v, want an error wrapping %v", err, boom)
	}
	// Best effort: the failure stops nothing, every event was attempted.
	var got []longhaul.Event
	for _, b := range s.all() {
		got = append(got, b.Events...)
	}
	if d := cmp.Diff(evs(1, 2), got); d != "" {
		t.Errorf("events attempted mismatch (-want +got):\n%s", d)
	}
}

func TestPublisherSendsAFullBatchAtOnce(t *testing.T) {
	s := newBatchSignaler()
	p := newTestPublisher(s, time.Hour)
	ctx := context.Background()
	p.Publish(ctx, ev(1))
	next(t, s)
	for i := 2; i <= maxBatch+1; i++ {
		p.Publish(ctx, ev(i))
	}
	// The interval is an hour: only reaching maxBatch sends these.
	diffBatches(t, []longhaul.EventBatch{batch(2, evs(2, maxBatch+1))}, []longhaul.EventBatch{next(t, s)})
	if err := p.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := len(s.all()); n != 2 {
		t.Errorf("sent %d batches, want 2", n)
	}
}

// TestPublisherBatchesStayWithinMaxBatch publishes many events while a signal
// is in flight, as a fast model does while the workflow is slow to take a
// signal: every event must arrive, in order, in batches of at most maxBatch.
func TestPublisherBatchesStayWithinMaxBatch(t *testing.T) {
	s := newBatchSignaler()
	s.gate = make(chan struct{})
	p := newTestPublisher(s, time.Hour)
	ctx := context.Background()
	p.Publish(ctx, ev(1))
	<-s.entered // the first signal is in flight and held at the gate
	const n = 3*maxBatch + 10
	for i := 2; i <= n; i++ {
		p.Publish(ctx, ev(i))
	}
	close(s.gate)
	if err := p.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	var got []longhaul.Event
	for i, b := range s.all() {
		if b.Seq != int64(i+1) {
			t.Errorf("batch %d has seq %d, want %d", i, b.Seq, i+1)
		}
		if len(b.Events) > maxBatch {
			t.Errorf("batch %d has %d events, want at most %d", b.Seq, len(b.Events), maxBatch)
		}
		got = append(got, b.Events...)
	}
	if d := cmp.Diff(evs(1, n), got); d != "" {
		t.Errorf("events delivered mismatch (-want +got):\n%s", d)
	}
}
