package workflows

import (
	"strconv"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
)

// defaultPageLimit bounds an events query answer when the caller sets none.
const defaultPageLimit = 1000

// eventLog is a run's ordered event log with global offsets: the durable
// stream subscribers read through QueryEvents. Activities append to it through
// batched signals, deduplicated per publisher by sequence number; the workflow
// appends its own events directly.
type eventLog struct {
	events []longhaul.Event
	last   int64
	seen   map[string]int64
	// attempts is the latest attempt that published, per activity, so a
	// late batch from an attempt that was already retried is dropped.
	attempts map[string]int
	// streamed is the text published per model call since its last reset, so
	// the workflow can reconcile it with the authoritative final message.
	streamed map[string]*strings.Builder
	done     bool
	// archives hold the events up to base, which earlier executions of the
	// run (or this one, before it continues as new) stored outside history.
	archives []activities.EventArchive
	base     int64
}

func newEventLog() *eventLog {
	return &eventLog{seen: map[string]int64{}, attempts: map[string]int{}, streamed: map[string]*strings.Builder{}}
}

func (l *eventLog) append(e longhaul.Event) longhaul.Event {
	l.last++
	e.Offset = l.last
	l.events = append(l.events, e)
	switch e.Type {
	case longhaul.EventDone:
		l.done = true
	case longhaul.EventContent:
		var d longhaul.ContentData
		if e.Decode(&d) == nil {
			b := l.streamed[d.Call]
			if b == nil {
				b = &strings.Builder{}
				l.streamed[d.Call] = b
			}
			b.WriteString(d.Text)
		}
	case longhaul.EventContentReset:
		var d longhaul.ContentResetData
		if e.Decode(&d) == nil {
			delete(l.streamed, d.Call)
		}
	}
	return e
}

// emit appends an event the workflow itself produces.
func (l *eventLog) emit(at time.Time, t longhaul.EventType, payload any) {
	l.append(longhaul.NewEvent(t, at, payload))
}

// applyBatch appends a published batch unless it was applied before or comes
// from an attempt of its activity that a later attempt superseded.
// Publishers are named "<activity id>#<attempt>".
func (l *eventLog) applyBatch(b longhaul.EventBatch) {
	if b.Seq <= l.seen[b.Publisher] {
		return
	}
	if act, n, ok := strings.Cut(b.Publisher, "#"); ok {
		if attempt, err := strconv.Atoi(n); err == nil {
			if attempt < l.attempts[act] {
				return
			}
			l.attempts[act] = attempt
		}
	}
	l.seen[b.Publisher] = b.Seq
	for _, e := range b.Events {
		l.append(e)
	}
}

// reconcile makes the text streamed for call equal final: it appends what is
// missing, or resets the call's text and publishes final whole when what was
// streamed is not a prefix of it (a lost or partial batch).
func (l *eventLog) reconcile(at time.Time, call, final string) {
	got := l.streamedText(call)
	switch {
	case got == final:
		return
	case strings.HasPrefix(final, got):
		l.emit(at, longhaul.EventContent, longhaul.ContentData{Text: final[len(got):], Call: call})
	default:
		l.emit(at, longhaul.EventContentReset, longhaul.ContentResetData{Call: call, Reason: "replacing partial text with the final answer"})
		if final != "" {
			l.emit(at, longhaul.EventContent, longhaul.ContentData{Text: final, Call: call})
		}
	}
}

// restore starts the log of a continued run after offset, whose events up
// to it are in archives.
func (l *eventLog) restore(offset int64, archives []activities.EventArchive) {
	l.last, l.base = offset, offset
	l.archives = append([]activities.EventArchive(nil), archives...)
}

// unarchived is the held events not archived yet, in chunks for archiving.
func (l *eventLog) unarchived() [][]longhaul.Event {
	i := 0
	for i < len(l.events) && l.events[i].Offset <= l.base {
		i++
	}
	return chunkEvents(l.events[i:])
}

// archived records a stored stretch of the log.
func (l *eventLog) archived(ar activities.EventArchive) {
	l.archives = append(l.archives, ar)
	l.base = max(l.base, ar.To)
}

// streamedText is the text published for call since its last reset.
func (l *eventLog) streamedText(call string) string {
	if b := l.streamed[call]; b != nil {
		return b.String()
	}
	return ""
}

// page answers QueryEvents. Events an earlier execution archived are not
// held: for an offset before them the page names the archives to read
// instead, and the reader asks again after the last of them.
func (l *eventLog) page(req EventsRequest) EventsPage {
	limit := req.Limit
	if limit <= 0 || limit > defaultPageLimit {
		limit = defaultPageLimit
	}
	p := EventsPage{Last: l.last, Done: l.done, Events: []longhaul.Event{}}
	if held := l.firstHeld(); req.After < held-1 && len(l.archives) > 0 {
		for _, ar := range l.archives {
			if ar.To > req.After && ar.From < held {
				p.Archives = append(p.Archives, ar)
			}
		}
		p.Done = false
		return p
	}
	// Offsets are dense from 1 within one workflow execution, so the start
	// index follows from the offset of the first event held.
	if len(l.events) == 0 {
		return p
	}
	first := l.events[0].Offset
	start := max(req.After-first+1, 0)
	if start >= int64(len(l.events)) {
		return p
	}
	end := min(start+int64(limit), int64(len(l.events)))
	p.Events = l.events[start:end]
	if end < int64(len(l.events)) {
		p.Done = false
	}
	return p
}

// firstHeld is the offset of the first event the log holds in memory, or
// the next offset when it holds none.
func (l *eventLog) firstHeld() int64 {
	if len(l.events) > 0 {
		return l.events[0].Offset
	}
	return l.last + 1
}
