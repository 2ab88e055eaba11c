//go:build linux

package local

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSweepStaleProfilesRemovesOnlyDeadOnes(t *testing.T) {
	dir := t.TempDir()
	host, err := os.Hostname()
	require.NoError(t, err)

	// A pid that surely exited: a child we waited for.
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	deadPID := cmd.Process.Pid

	mk := func(name, lock string, age time.Duration) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.Mkdir(p, 0o700))
		if lock != "" {
			link := "SingletonLock"
			if strings.HasPrefix(name, scratchPrefix) {
				link = ownerLink
			}
			require.NoError(t, os.Symlink(lock, filepath.Join(p, link)))
		}
		if age > 0 {
			old := time.Now().Add(-age)
			require.NoError(t, os.Chtimes(p, old, old))
		}
		return p
	}
	deadLock := mk(tempProfilePrefix+"dead", host+"-"+strconv.Itoa(deadPID), 0)
	liveLock := mk(tempProfilePrefix+"live", host+"-"+strconv.Itoa(os.Getpid()), 0)
	otherHost := mk(tempProfilePrefix+"other", "elsewhere-"+strconv.Itoa(deadPID), 0)
	fresh := mk(tempProfilePrefix+"fresh", "", 0)
	old := mk(tempProfilePrefix+"old", "", 2*staleProfileAge)
	foreign := mk("not-ours", host+"-"+strconv.Itoa(deadPID), 2*staleProfileAge)
	// A browser's scratch directory goes with the host process it names,
	// not with its age.
	deadScratch := mk(scratchPrefix+"dead", host+"-"+strconv.Itoa(deadPID), 0)
	liveScratch := mk(scratchPrefix+"live", host+"-"+strconv.Itoa(os.Getpid()), 2*staleProfileAge)
	unnamedScratch := mk(scratchPrefix+"unnamed", "", 2*staleProfileAge)

	sweepStaleProfiles(dir, quietLogger())

	for _, p := range []string{liveLock, otherHost, fresh, foreign, liveScratch, unnamedScratch} {
		assert.DirExists(t, p)
	}
	for _, p := range []string{deadLock, old, deadScratch} {
		assert.NoDirExists(t, p)
	}
}

func TestReapProfileProcessesKillsNamedProcessesAndTheirGroup(t *testing.T) {
	dir := t.TempDir()
	// A stand-in browser: a group leader whose command line names the
	// profile (argv[0]), with a child that does not.
	cmd := exec.Command("sh", "-c", "sleep 300 & echo ready; wait")
	cmd.Args[0] = "--user-data-dir=" + dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)

	found := profileProcesses(dir)
	require.Len(t, found, 2, "leader and its child must be found: %+v", found)

	assert.Equal(t, 2, reapProfileProcesses(dir))
	assert.Empty(t, profileProcesses(dir))
	assert.Zero(t, reapProfileProcesses(dir), "nothing left to kill")
}
