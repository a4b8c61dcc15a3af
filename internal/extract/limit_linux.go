package extract

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
)

// limitSelf sets the child's own limits before it reads anything: the
// kernel's OOM killer is to pick it first, its address space may grow by
// memory bytes at most beyond what it holds now (a hard limit: past it
// the Go runtime cannot map memory and dies with "out of memory"; counted
// from now, since a race-enabled test binary reserves terabytes at
// start), the garbage collector works harder as it nears that, and it may
// use seconds of CPU time.
func limitSelf(memory int64, seconds int) error {
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	now, err := addressSpace()
	if err != nil {
		return err
	}
	as := uint64(now + memory)
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: as}); err != nil {
		return fmt.Errorf("RLIMIT_AS: %w", err)
	}
	debug.SetMemoryLimit(memory / 2)
	if seconds > 0 {
		cpu := uint64(seconds)
		if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: cpu, Max: cpu + 5}); err != nil {
			return fmt.Errorf("RLIMIT_CPU: %w", err)
		}
	}
	return nil
}

// addressSpace is the bytes of the process's address space now (VmSize).
func addressSpace() (int64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0, errors.New("empty /proc/self/statm")
	}
	pages, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/self/statm: %w", err)
	}
	return pages * int64(os.Getpagesize()), nil
}
