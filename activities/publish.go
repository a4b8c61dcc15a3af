package activities

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/longhaul-dev/longhaul"
	"go.temporal.io/sdk/activity"
)

// maxBatch bounds the events of one signal so history grows in bounded steps.
const maxBatch = 256

// publisher batches an activity's events into PublishBatch signals to its
// workflow: the first event goes at once (time to first token matters most),
// later ones every flush interval, or every two signal round trips when
// Temporal is slower than that. Sequence numbers let the workflow drop a
// batch delivered twice.
type publisher struct {
	signals    signaler
	workflowID string
	runID      string
	id         string
	interval   time.Duration

	mu       sync.Mutex
	pending  []longhaul.Event
	seq      int64
	sent     bool
	rtt      time.Duration // how long the last signal took
	flushing bool          // a flush goroutine is running or about to
	timer    *time.Timer
	closed   bool
	sendMu   sync.Mutex // one signal in flight at a time keeps batches in order
	lastErr  error
}

func (a *Activities) newPublisher(ctx context.Context) *publisher {
	info := activity.GetInfo(ctx)
	return &publisher{
		signals:    a.signals,
		workflowID: info.WorkflowExecution.ID,
		runID:      info.WorkflowExecution.RunID,
		id:         fmt.Sprintf("%s#%d", info.ActivityID, info.Attempt),
		interval:   a.FlushInterval,
	}
}

// Publish queues an event; it never blocks on the network.
func (p *publisher) Publish(ctx context.Context, e longhaul.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.pending = append(p.pending, e)
	if p.flushing {
		return // the running flush loops until nothing is pending
	}
	if !p.sent || len(p.pending) >= maxBatch {
		// The first event goes at once (time to first token), and so does
		// a full batch.
		if p.timer != nil {
			p.timer.Stop()
			p.timer = nil
		}
		p.sent = true
		p.flushing = true
		go p.flush(context.WithoutCancel(ctx))
		return
	}
	if p.timer != nil {
		return
	}
	p.timer = time.AfterFunc(max(p.interval, 2*p.rtt), func() {
		p.mu.Lock()
		p.timer = nil
		p.flushing = true
		p.mu.Unlock()
		p.flush(context.WithoutCancel(ctx))
	})
}

// Close sends what is pending and waits for it; call it before the activity
// returns so every event is in history before the activity's result.
func (p *publisher) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	if p.timer != nil && p.timer.Stop() {
		p.timer = nil
	}
	p.mu.Unlock()
	p.flush(ctx)
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	return p.lastErr
}

// flush sends the pending events in batches of at most maxBatch, one signal
// at a time, until none are left. Events published while a signal is in
// flight go out with the next batch.
func (p *publisher) flush(ctx context.Context) {
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	for {
		p.mu.Lock()
		n := min(len(p.pending), maxBatch)
		if n == 0 {
			p.flushing = false
			p.mu.Unlock()
			return
		}
		events := p.pending[:n:n]
		p.pending = p.pending[n:]
		p.seq++
		batch := longhaul.EventBatch{Publisher: p.id, Seq: p.seq, Events: events}
		p.mu.Unlock()
		start := time.Now()
		err := p.send(ctx, batch)
		p.mu.Lock()
		// Back off while Temporal is slow to take signals: under load the
		// batches grow instead of the signals queueing up.
		p.rtt = min(time.Since(start), time.Second)
		p.mu.Unlock()
		if err != nil {
			// Progress events are best effort: the workflow keeps the
			// authoritative result. Remember the failure for Close.
			p.lastErr = fmt.Errorf("publish events: %w", err)
		}
	}
}

func (p *publisher) send(ctx context.Context, batch longhaul.EventBatch) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return p.signals.SignalWorkflow(ctx, p.workflowID, p.runID, longhaul.PublishSignal, batch)
}
