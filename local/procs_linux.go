//go:build linux

package local

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// procInfo is one live process from /proc.
type procInfo struct {
	pid, ppid, pgid int
	cmdline         string // arguments joined by spaces
}

// listProcesses scans /proc and returns every process that is not a zombie
// (zombies have no command line and hold no resources).
func listProcesses() []procInfo {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []procInfo
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// An empty command line is kept: a process in the middle of an exec
		// (a browser's child becoming a renderer, a shell's child becoming
		// its command) reads as empty for a moment, and it still belongs to
		// its process group. Kernel threads are empty too; their group (0)
		// is never a profile's.
		raw, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// stat: "pid (comm) state ppid pgrp ..."; comm may hold spaces or ')'.
		k := bytes.LastIndexByte(stat, ')')
		if k < 0 {
			continue
		}
		f := strings.Fields(string(stat[k+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgid, _ := strconv.Atoi(f[2])
		out = append(out, procInfo{
			pid: pid, ppid: ppid, pgid: pgid,
			cmdline: strings.TrimRight(string(bytes.ReplaceAll(raw, []byte{0}, []byte{' '})), " "),
		})
	}
	return out
}

// profileProcesses returns the live processes of the browser that uses the
// profile directory dir: those whose command line names dir (Chromium passes
// --user-data-dir=dir to the browser and most helpers, and its crash handlers
// get a database under dir, see configSubdir) and every process in the
// process group of such a browser (Playwright starts the browser as a group
// leader). Our own process and process group are never included. dir ""
// matches nothing.
func profileProcesses(dir string) []procInfo {
	if dir == "" {
		return nil
	}
	dir = strings.TrimRight(dir, "/")
	names := func(cmd string) bool {
		flag := "--user-data-dir=" + dir
		return strings.Contains(cmd, flag+" ") || strings.HasSuffix(cmd, flag) || strings.Contains(cmd, dir+"/")
	}
	all := listProcesses()
	self, own := os.Getpid(), syscall.Getpgrp()
	groups := make(map[int]bool)
	for _, p := range all {
		if p.pid != self && p.pgid > 1 && p.pgid != own && names(p.cmdline) {
			groups[p.pgid] = true
		}
	}
	var out []procInfo
	for _, p := range all {
		if p.pid != self && (groups[p.pgid] || names(p.cmdline)) {
			out = append(out, p)
		}
	}
	return out
}

// Bounds of reapProfileProcesses.
const (
	exitGrace = 2 * time.Second // for processes already on their way out
	killGrace = 5 * time.Second // after SIGKILL
)

// killProfileProcesses SIGKILLs every process of profileProcesses(dir) and
// returns how many there were. Test cleanups use it as a hammer.
func killProfileProcesses(dir string) int {
	ps := profileProcesses(dir)
	for _, p := range ps {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
	return len(ps)
}

// reapProfileProcesses makes sure no process of profileProcesses(dir) runs
// when it returns: processes still exiting get exitGrace to finish,
// the rest are SIGKILLed and waited for (killGrace). Waiting uses pidfds
// (poll until the process has exited), not sleeps. It returns how many
// processes had to be killed; normally Playwright has ended them all and it
// finds nothing.
func reapProfileProcesses(dir string) (killed int) {
	ps := profileProcesses(dir)
	if len(ps) == 0 {
		return 0
	}
	fds := make([]int, 0, len(ps))
	for _, p := range ps {
		fd, err := unix.PidfdOpen(p.pid, 0)
		if err != nil {
			continue // already gone (ESRCH), or pidfds unsupported
		}
		fds = append(fds, fd)
	}
	defer func() {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
	}()
	alive := waitPidfds(fds, time.Now().Add(exitGrace))
	for _, fd := range alive {
		if unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil {
			killed++
		}
	}
	waitPidfds(alive, time.Now().Add(killGrace))
	// Processes without a pidfd (none on Linux ≥ 5.3) get a plain SIGKILL.
	if len(fds) < len(ps) {
		for _, p := range profileProcesses(dir) {
			if syscall.Kill(p.pid, syscall.SIGKILL) == nil {
				killed++
			}
		}
	}
	return killed
}

// waitPidfds waits until every process behind fds has exited or deadline
// passes, and returns the fds of those still running.
func waitPidfds(fds []int, deadline time.Time) []int {
	pending := append([]int(nil), fds...)
	for len(pending) > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		pfds := make([]unix.PollFd, len(pending))
		for i, fd := range pending {
			pfds[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
		}
		n, err := unix.Poll(pfds, int(left.Milliseconds())+1)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			break
		}
		next := pending[:0]
		for i, pfd := range pfds {
			if pfd.Revents == 0 {
				next = append(next, pending[i])
			}
		}
		pending = next
	}
	return pending
}

// watchExit runs onExit on a new goroutine once process pid has exited
// (a zombie counts: the Playwright driver is reaped only by its Stop), and
// closes done after onExit returned. It returns false, and starts nothing,
// when the process cannot be watched (already gone, or no pidfd support).
func watchExit(pid int, onExit func(), done chan<- struct{}) bool {
	if pid <= 0 {
		return false
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false
	}
	go func() {
		defer close(done)
		defer unix.Close(fd)
		for {
			_, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, -1)
			if err != unix.EINTR {
				break
			}
		}
		onExit()
	}()
	return true
}

// browserProcess returns the pid of the Chromium browser process that the
// Playwright driver driverPID launched on profile dir (its child naming
// --user-data-dir=dir), or 0 when there is none.
func browserProcess(driverPID int, dir string) int {
	if driverPID <= 0 || dir == "" {
		return 0
	}
	for _, p := range listProcesses() {
		if p.ppid == driverPID && strings.Contains(p.cmdline, "--user-data-dir="+strings.TrimRight(dir, "/")) {
			return p.pid
		}
	}
	return 0
}
