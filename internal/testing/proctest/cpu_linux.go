//go:build linux

package proctest

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the unit of utime and stime in /proc/<pid>/stat: USER_HZ,
// which Linux fixes at 100 for user space (getconf CLK_TCK).
const clockTicks = 100

// CPU is the CPU time (user and system, all threads) process pid has used,
// read from /proc/<pid>/stat (proc(5)). It counts the process alone, not
// the children it waited for (cutime, cstime).
func CPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: the fields that
	// follow it start with the state (field 3); utime and stime are fields
	// 14 and 15.
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// CPU is the CPU time the process has used (CPU of its pid).
func (p *Proc) CPU() (time.Duration, error) { return CPU(p.Cmd.Process.Pid) }

// Settle waits, for at most 15 s, until cpu (the CPU time of one process or
// of several together) grows by less than a tenth of a CPU over half a
// second, so that a measurement does not carry the end of the one before.
func Settle(cpu func() (time.Duration, error)) {
	prev, err := cpu()
	for range 30 {
		time.Sleep(500 * time.Millisecond)
		now, err2 := cpu()
		if err != nil || err2 != nil || now-prev < 50*time.Millisecond {
			return
		}
		prev = now
	}
}
