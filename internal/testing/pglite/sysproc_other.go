//go:build !linux

package pglite

import "syscall"

// sysProcAttr puts the server in its own process group (Close signals the
// group).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
