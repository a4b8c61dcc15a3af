package pglite

import "syscall"

// sysProcAttr puts the server in its own process group (Close signals the
// group) and kills it when the process that started it dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
