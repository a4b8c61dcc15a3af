package workflows

import (
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
)

// defaultPageLimit bounds an events query answer when the caller sets none.
const defaultPageLimit = 1000

// eventLog is a run's ordered log of durable events with global offsets:
// what subscribers read through QueryEvents. Only the workflow appends to it;
// the text of a running model call streams outside history and enters the
// log whole, as one content event, when the call returns.
type eventLog struct {
	events []longhaul.Event
	last   int64
	done   bool
	// archives hold the events up to base, which earlier executions of the
	// run (or this one, before it continues as new) stored outside history.
	archives []contract.EventArchive
	base     int64
}

func newEventLog() *eventLog {
	return &eventLog{}
}

func (l *eventLog) append(e longhaul.Event) longhaul.Event {
	l.last++
	e.Offset = l.last
	l.events = append(l.events, e)
	if e.Type == longhaul.EventDone {
		l.done = true
	}
	return e
}

// emit appends an event the workflow itself produces.
func (l *eventLog) emit(at time.Time, t longhaul.EventType, payload any) {
	l.append(longhaul.NewEvent(t, at, payload))
}

// restore starts the log of a continued run after offset, whose events up
// to it are in archives.
func (l *eventLog) restore(offset int64, archives []contract.EventArchive) {
	l.last, l.base = offset, offset
	l.archives = append([]contract.EventArchive(nil), archives...)
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
func (l *eventLog) archived(ar contract.EventArchive) {
	l.archives = append(l.archives, ar)
	l.base = max(l.base, ar.To)
}

// page answers QueryEvents. Events an earlier execution archived are not
// held: for an offset before them the page names the archives to read
// instead, and the reader asks again after the last of them.
func (l *eventLog) page(req contract.EventsRequest) contract.EventsPage {
	limit := req.Limit
	if limit <= 0 || limit > defaultPageLimit {
		limit = defaultPageLimit
	}
	p := contract.EventsPage{Last: l.last, Done: l.done, Events: []longhaul.Event{}}
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
