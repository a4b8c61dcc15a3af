//go:build unix && !linux

package proctest

import "syscall"

// sysProcAttr puts a child in its own process group, so the test kills it
// with everything it started.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
