//go:build linux

package local

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestSweepStaleProfilesRemovesOnlyUnownedOnes covers the sweep's rule: a
// directory goes only when it is old enough and no open file description
// holds its owner lock (or, without a lock file, when it is very old); the
// PID a directory names decides nothing, since its owner may live in
// another PID namespace.
func TestSweepStaleProfilesRemovesOnlyUnownedOnes(t *testing.T) {
	dir := t.TempDir()
	host, err := os.Hostname()
	require.NoError(t, err)
	now := time.Now()

	// A pid that surely exited: a child we waited for.
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	deadPID := host + "-" + strconv.Itoa(cmd.Process.Pid)

	mk := func(name string, lockFile bool, age time.Duration) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.Mkdir(p, 0o700))
		// Chromium's lock and the owner file name a dead process of this
		// host: a host in another PID namespace looks just like that.
		require.NoError(t, os.Symlink(deadPID, filepath.Join(p, "SingletonLock")))
		if lockFile {
			require.NoError(t, os.WriteFile(filepath.Join(p, ownerLockName), []byte(deadPID+"\n"), 0o600))
		}
		at := now.Add(-age)
		require.NoError(t, os.Chtimes(p, at, at))
		return p
	}
	held := func(p string) {
		f, err := os.Open(filepath.Join(p, ownerLockName))
		require.NoError(t, err)
		t.Cleanup(func() { _ = f.Close() })
		require.NoError(t, unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB))
	}

	ownedProfile := mk(tempProfilePrefix+"owned", true, 2*staleProfileAge)
	held(ownedProfile)
	ownedScratch := mk(scratchPrefix+"owned", true, 2*staleProfileAge)
	held(ownedScratch)
	youngProfile := mk(tempProfilePrefix+"young", true, minSweepAge/2)
	youngScratch := mk(scratchPrefix+"young", true, minSweepAge/2)
	deadProfile := mk(tempProfilePrefix+"dead", true, 2*minSweepAge)
	deadScratch := mk(scratchPrefix+"dead", true, 2*minSweepAge)
	unlockedRecent := mk(tempProfilePrefix+"nolock", false, 2*minSweepAge)
	unlockedOld := mk(scratchPrefix+"nolock", false, 2*staleProfileAge)
	foreign := mk("not-ours", true, 2*staleProfileAge)

	sweepStaleProfiles(dir, now, quietLogger())

	for _, p := range []string{ownedProfile, ownedScratch, youngProfile, youngScratch, unlockedRecent, foreign} {
		assert.DirExists(t, p)
	}
	for _, p := range []string{deadProfile, deadScratch, unlockedOld} {
		assert.NoDirExists(t, p)
	}
}

// TestClaimedTempDirIsKeptUntilReleased: a directory of claimTempDir
// survives any sweep while its owner holds it, whatever its age, and goes
// with the first sweep after its owner is gone.
func TestClaimedTempDirIsKeptUntilReleased(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir, lock, err := claimTempDir(tempProfilePrefix)
	require.NoError(t, err)
	later := time.Now().Add(2 * staleProfileAge)

	sweepStaleProfiles(os.TempDir(), later, quietLogger())
	assert.DirExists(t, dir)

	require.NoError(t, lock.Close()) // as the owner's death would
	sweepStaleProfiles(os.TempDir(), later, quietLogger())
	assert.NoDirExists(t, dir)
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
