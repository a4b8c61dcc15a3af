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
// later ones every flush interval. Sequence numbers let the workflow drop a
// batch delivered twice.
type publisher struct {
	signals    signaler
	workflowID string
	runID      string
	id         string
	interval   time.Duration

	mu      sync.Mutex
	pending []longhaul.Event
	seq     int64
	sent    bool
	timer   *time.Timer
	closed  bool
	sendMu  sync.Mutex // one signal in flight at a time keeps batches in order
	lastErr error
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
	switch {
	case !p.sent || len(p.pending) >= maxBatch:
		p.sent = true
		go p.flush(context.WithoutCancel(ctx))
	case p.timer == nil:
		p.timer = time.AfterFunc(p.interval, func() { p.flush(context.WithoutCancel(ctx)) })
	}
}

// Close sends what is pending and waits for it; call it before the activity
// returns so every event is in history before the activity's result.
func (p *publisher) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	if p.timer != nil {
		p.timer.Stop()
	}
	p.mu.Unlock()
	p.flush(ctx)
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	return p.lastErr
}

func (p *publisher) flush(ctx context.Context) {
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	p.mu.Lock()
	p.timer = nil
	events := p.pending
	p.pending = nil
	if len(events) == 0 {
		p.mu.Unlock()
		return
	}
	p.seq++
	batch := longhaul.EventBatch{Publisher: p.id, Seq: p.seq, Events: events}
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.signals.SignalWorkflow(ctx, p.workflowID, p.runID, longhaul.PublishSignal, batch); err != nil {
		// Progress events are best effort: the workflow keeps the
		// authoritative result. Remember the failure for Close.
		p.lastErr = fmt.Errorf("publish events: %w", err)
	}
}
