package activities

import (
	"sync/atomic"
	"time"
)

// watchdog calls its function once no reset came for its timeout; a zero
// timeout never fires.
type watchdog struct {
	timeout time.Duration
	timer   *time.Timer
	done    atomic.Bool
}

func newWatchdog(timeout time.Duration, fire func()) *watchdog {
	w := &watchdog{timeout: timeout}
	if timeout > 0 {
		w.timer = time.AfterFunc(timeout, func() {
			w.done.Store(true)
			fire()
		})
	}
	return w
}

// reset starts the timeout over: a chunk came.
func (w *watchdog) reset() {
	if w.timer != nil && !w.done.Load() {
		w.timer.Reset(w.timeout)
	}
}

// fired reports whether the timeout ran out.
func (w *watchdog) fired() bool { return w.done.Load() }

func (w *watchdog) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}
