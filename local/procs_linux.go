//go:build linux

package local

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
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
		raw, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(raw) == 0 {
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

// killProfileProcesses SIGKILLs every process of profileProcesses(dir) and
// returns how many there were. It is Close's last resort (LOC-3); normally
// Playwright has already ended them and it finds nothing.
func killProfileProcesses(dir string) int {
	ps := profileProcesses(dir)
	for _, p := range ps {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
	return len(ps)
}

// processGone reports whether no process pid exists.
func processGone(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }
