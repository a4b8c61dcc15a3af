//go:build unix

package extract

import (
	"os"
	"syscall"
)

// signaled is the error of a child a signal killed, or nil.
func (c *Child) signaled(state *os.ProcessState) error {
	if state == nil {
		return nil
	}
	ws, ok := state.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return nil
	}
	switch ws.Signal() {
	case syscall.SIGKILL:
		// The kernel's OOM killer (the child asks to be its first
		// choice) or someone else's kill.
		return invalid("the extraction process was killed (SIGKILL), most likely for its memory (the limit is %d MiB)", c.memory()>>20)
	case syscall.SIGXCPU:
		return invalid("extracting the file's text used more than %s of CPU time, the limit; the process was stopped", c.timeout())
	}
	return invalid("the extraction process was killed by %s", ws.Signal())
}
