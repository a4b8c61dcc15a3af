package extract

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// The child reads untrusted files, and must not read its parent's
// environment (its keys and database URLs) through /proc/<ppid>/environ,
// which the kernel lets a process read when it may ptrace the other
// (ptrace_may_access, PTRACE_MODE_READ_FSCREDS). Two things close it:
//
//   - The parent is made non-dumpable (prctl PR_SET_DUMPABLE 0) before its
//     first child: a process of the same user without CAP_SYS_PTRACE may
//     then read none of its /proc/<pid> files but the world-readable ones
//     (stat, cmdline). One system call, once; the cost is the parent's:
//     no core dumps, and a debugger of the same user cannot attach to it.
//   - Run as root, the child would hold CAP_SYS_PTRACE and read it anyway:
//     it runs as nobody (uid and gid 65534, no supplementary groups)
//     instead, its temporary directory given to that user. Three more
//     system calls in the fork.
//
// no_new_privs alone does not close it (it stops gaining privileges, not
// reading a same-user process), and a seccomp filter cannot judge a path
// (it sees the pointer, not the string).

// nobody is the uid and gid a root parent's child runs as.
const nobody = 65534

var (
	hardenOnce sync.Once
	hardenErr  error
)

// hardenParent makes this process non-dumpable, once.
func hardenParent() error {
	hardenOnce.Do(func() {
		if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
			hardenErr = fmt.Errorf("make the process non-dumpable (PR_SET_DUMPABLE): %w", errno)
		}
	})
	return hardenErr
}

// isolate sets cmd, a child about to start in dir, apart from its parent
// (see above).
func isolate(cmd *exec.Cmd, dir string) error {
	if err := hardenParent(); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return nil
	}
	if err := os.Chown(dir, nobody, nobody); err != nil {
		return fmt.Errorf("give the extraction directory to nobody: %w", err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	return nil
}

// selfPath is the executable a child runs when Child.Path names none: the
// parent's own, through /proc/self/exe, which the child opens after it
// took nobody's credentials, past directories closed to that user (a test
// binary's).
func selfPath() (string, error) { return "/proc/self/exe", nil }
