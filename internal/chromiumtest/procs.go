package chromiumtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Proc is a live (non-zombie) process seen in /proc.
type Proc struct {
	PID     int
	PPID    int
	PGID    int
	Cmdline string
}

// Processes returns the live processes whose command line contains needle
// (typically a test's user-data dir). Zombies are left out: they hold no
// resources and their command line is empty anyway.
func Processes(needle string) []Proc {
	return scanProcs(func(p Proc) bool { return strings.Contains(p.Cmdline, needle) })
}

// ProcessesWithEnv returns the live processes whose environment holds
// entry ("NAME=value", matched whole): a process and every descendant that
// inherited its environment, such as the Playwright driver a server starts.
func ProcessesWithEnv(entry string) []Proc {
	needle := []byte("\x00" + entry + "\x00")
	return scanProcs(func(p Proc) bool {
		env, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/environ")
		return err == nil && bytes.Contains(append(append([]byte{0}, env...), 0), needle)
	})
}

// scanProcs lists live processes in /proc that match keep. Processes that
// vanish during the scan are skipped.
func scanProcs(keep func(Proc) bool) []Proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		state, ppid, pgid, ok := readStat(pid)
		if !ok || state == 'Z' || state == 'X' {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		p := Proc{PID: pid, PPID: ppid, PGID: pgid, Cmdline: string(bytes.ReplaceAll(bytes.TrimRight(cmd, "\x00"), []byte{0}, []byte{' '}))}
		if keep(p) {
			out = append(out, p)
		}
	}
	return out
}

// readStat returns the state letter, parent and process group of pid from
// /proc/<pid>/stat ("pid (comm) S ppid pgrp …"; comm may contain spaces and
// parentheses, so fields are counted after the last ')').
func readStat(pid int) (state byte, ppid, pgid int, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, 0, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return 0, 0, 0, false
	}
	return f[0][0], ppid, pgid, true
}

// BrowserProcess returns the main browser process of the Chromium whose
// user-data dir is dir (the process naming --user-data-dir=dir without a
// --type= flag), and false when none runs.
func BrowserProcess(dir string) (Proc, bool) {
	for _, p := range Processes("--user-data-dir=" + dir) {
		if !strings.Contains(p.Cmdline, "--type=") {
			return p, true
		}
	}
	return Proc{}, false
}

// PageRenderers returns the renderer processes of the Chromium whose
// user-data dir is dir (found in the browser's process group), leaving out
// extension processes (killing those would take a loaded extension down
// with the page).
func PageRenderers(dir string) []Proc {
	b, ok := BrowserProcess(dir)
	if !ok {
		return nil
	}
	return scanProcs(func(p Proc) bool {
		return p.PGID == b.PGID && strings.Contains(p.Cmdline, "--type=renderer") &&
			!strings.Contains(p.Cmdline, "--extension-process")
	})
}

// Signal sends sig to every process of procs (errors are ignored: a
// process may have exited meanwhile) and returns how many there were.
func Signal(procs []Proc, sig unix.Signal) int {
	for _, p := range procs {
		_ = unix.Kill(p.PID, sig)
	}
	return len(procs)
}

// waitGroupGone waits until no live process remains in process group pgid.
// It waits on each member's pidfd (readable when the process exits), so it
// needs no polling; the overall wait is bounded by timeout.
func waitGroupGone(pgid int, timeout time.Duration) error {
	return waitGone(scanProcs(func(p Proc) bool { return p.PGID == pgid }), timeout)
}

// waitGone waits for every process in procs to exit, bounded by timeout.
func waitGone(procs []Proc, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, p := range procs {
		fd, err := unix.PidfdOpen(p.PID, 0)
		if err != nil {
			continue // already gone (ESRCH)
		}
		for {
			ms := int(time.Until(deadline) / time.Millisecond)
			if ms <= 0 {
				unix.Close(fd)
				return fmt.Errorf("chromiumtest: process %d still running after %v", p.PID, timeout)
			}
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, ms)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || n > 0 {
				break
			}
		}
		unix.Close(fd)
	}
	return nil
}

// AssertNoProcesses fails t if a live process whose command line contains
// needle (a user-data dir, a profile path) remains. Processes that were
// already killed get until timeout to finish exiting (waited on through
// pidfds, not by sleeping); any still alive then are reported with their
// command lines.
func AssertNoProcesses(t testing.TB, needle string, timeout time.Duration) {
	t.Helper()
	if needle == "" {
		t.Fatal("chromiumtest: AssertNoProcesses: empty needle matches everything")
	}
	_ = waitGone(Processes(needle), timeout)
	if left := Processes(needle); len(left) > 0 {
		var b strings.Builder
		for _, p := range left {
			fmt.Fprintf(&b, "\n  pid %d pgid %d: %.200s", p.PID, p.PGID, p.Cmdline)
		}
		t.Errorf("chromiumtest: %d process(es) matching %q remain:%s", len(left), needle, b.String())
	}
}

// Group returns the live processes of process group pgid.
func Group(pgid int) []Proc {
	return scanProcs(func(p Proc) bool { return p.PGID == pgid })
}
