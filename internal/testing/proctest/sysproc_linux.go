//go:build linux

package proctest

import "syscall"

// sysProcAttr puts a child in its own process group, so the test kills it
// with everything it started, and has the kernel kill it should the test
// process die before its cleanups run (a go test timeout, a SIGKILL).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
