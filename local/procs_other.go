//go:build !linux

package local

// procInfo is one live process; the process table is only read on Linux.
type procInfo struct {
	pid, ppid, pgid int
	cmdline         string
}

func listProcesses() []procInfo { return nil }

func profileProcesses(string) []procInfo { return nil }

// reapProfileProcesses is a no-op outside Linux: Close relies on Playwright
// alone there.
func reapProfileProcesses(string) int { return 0 }

// killProfileProcesses is a no-op outside Linux: Close relies on Playwright
// alone there.
func killProfileProcesses(string) int { return 0 }

func watchExit(int, func(), chan<- struct{}) bool { return false }

// browserProcess finds nothing outside Linux: browser death is then noticed
// through Playwright alone.
func browserProcess(int, string) int { return 0 }
