//go:build linux

package proctest

import (
	"bufio"
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
	t, err := statTimes(pid)
	if err != nil {
		return 0, err
	}
	return time.Duration(t[0]+t[1]) * time.Second / clockTicks, nil
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

// TreeCPU is the CPU time a server that forks a process per connection
// has used: pid's own, what its exited children used (cutime and cstime,
// counted once it has waited for them, as PostgreSQL's postmaster does for
// each backend), and what its live children use so far. A child that
// forks again is counted only when it is waited for.
func TreeCPU(pid int) (time.Duration, error) {
	self, err := statTimes(pid)
	if err != nil {
		return 0, err
	}
	total := self[0] + self[1] + self[2] + self[3]
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil || child == pid {
			continue
		}
		f, err := statFields(child)
		if err != nil || len(f) < 13 || f[1] != strconv.Itoa(pid) {
			continue // gone meanwhile, or not a child of pid
		}
		t, err := statTimes(child)
		if err != nil {
			continue
		}
		total += t[0] + t[1]
	}
	return time.Duration(total) * time.Second / clockTicks, nil
}

// statFields are the fields of /proc/<pid>/stat after the command name:
// the state (field 3) first, so field n is at index n-3.
func statFields(pid int) ([]string, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	return strings.Fields(string(raw[i+1:])), nil
}

// statTimes are utime, stime, cutime and cstime (fields 14 to 17) of pid,
// in clock ticks.
func statTimes(pid int) ([4]int64, error) {
	var out [4]int64
	f, err := statFields(pid)
	if err != nil {
		return out, err
	}
	if len(f) < 15 {
		return out, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	for i := range out {
		v, err := strconv.ParseInt(f[11+i], 10, 64)
		if err != nil {
			return out, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		out[i] = v
	}
	return out, nil
}

// ResetPeak resets process pid's peak resident set size (VmHWM) to its
// current size, so the next PeakRSS is the peak since now (proc(5),
// /proc/<pid>/clear_refs: 5).
func ResetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// PeakRSS is process pid's peak resident set size (VmHWM), in bytes.
func PeakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmHWM %q: %w", v, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmHWM", pid)
}
