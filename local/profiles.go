package local

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ownerLockName is the file inside a temporary profile (tempProfilePrefix)
// or scratch directory (scratchPrefix) whose flock the owning Browser holds
// for the directory's life (see claimTempDir). It holds "<hostname>-<pid>"
// of the owner, for people only: the sweep never trusts a PID, since hosts
// in other PID namespaces (containers sharing a temporary directory) may
// own directories too.
const ownerLockName = ".browserchain-owner"

// minSweepAge is how long a temporary directory is safe from the sweep
// whatever its lock says: it covers the moment between its creation and
// its owner taking the lock.
const minSweepAge = 10 * time.Minute

// staleProfileAge is how long a temporary directory without an owner lock
// file (made by an older version) must have been unchanged before the
// sweep removes it.
const staleProfileAge = 24 * time.Hour

// claimTempDir makes a new directory in the system's temporary directory
// named prefix plus a random suffix, and takes its owner lock. The caller
// owns both: it removes dir, then closes lock, when it is done with them.
// On error nothing is left behind.
func claimTempDir(prefix string) (dir string, lock *os.File, err error) {
	dir, err = os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	lock, err = os.OpenFile(filepath.Join(dir, ownerLockName), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	// Where flock is not supported the lock is not held; the sweep cannot
	// take it either, so the directory is kept all the same.
	_ = lockOwner(lock)
	host, _ := os.Hostname()
	_, _ = lock.WriteString(host + "-" + strconv.Itoa(os.Getpid()) + "\n")
	return dir, lock, nil
}

// releaseTempDir removes a directory of claimTempDir and then releases its
// lock. Either may be empty or nil.
func releaseTempDir(dir string, lock *os.File) error {
	var err error
	if dir != "" {
		err = os.RemoveAll(dir)
	}
	if lock != nil {
		_ = lock.Close()
	}
	return err
}

// makeScratch makes a browser's scratch directory (scratchPrefix) with its
// owner lock, or returns "" (the browser keeps the system's TMPDIR) when it
// cannot, or when Chromium's singleton socket under it would not fit a
// Unix socket address. Best effort: the reason is logged at debug level.
func makeScratch(log *slog.Logger) (string, *os.File) {
	dir, lock, err := claimTempDir(scratchPrefix)
	if err != nil {
		log.Debug("local: no scratch directory for the browser", "error", err)
		return "", nil
	}
	if len(dir)+len(chromiumSocketSuffix) > maxSocketPath {
		log.Debug("local: no scratch directory for the browser", "path", dir,
			"error", "its path is too long for Chromium's singleton socket")
		_ = releaseTempDir(dir, lock)
		return "", nil
	}
	return dir, lock
}

// sweepStaleProfiles removes temporary profiles (tempProfilePrefix) and
// browser scratch directories (scratchPrefix) under dir that a killed host
// left behind (Close removes its own, but a SIGKILLed host cannot). A
// directory is removed only when it has not changed for minSweepAge (as of
// now) and either its owner lock (ownerLockName) can be taken, which means
// no live process holds it, or it has no lock file and has not changed for
// staleProfileAge. The lock is held while the directory is removed. Best
// effort: errors are logged at debug level and ignored.
func sweepStaleProfiles(dir string, now time.Time, log *slog.Logger) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, tempProfilePrefix) && !strings.HasPrefix(name, scratchPrefix) {
			continue
		}
		path := filepath.Join(dir, name)
		lock, ok := claimStale(path, now)
		if !ok {
			continue
		}
		if err := releaseTempDir(path, lock); err != nil {
			log.Debug("local: cannot remove a stale temporary directory", "path", path, "error", err)
			continue
		}
		log.Info("local: removed a stale temporary directory", "path", path)
	}
}

// claimStale applies sweepStaleProfiles' rule to the directory path. When
// it is stale it returns true and the owner lock it took (nil for a
// directory without a lock file), which the caller closes after removing
// the directory.
func claimStale(path string, now time.Time) (*os.File, bool) {
	fi, err := os.Stat(path)
	if err != nil || now.Sub(fi.ModTime()) < minSweepAge {
		return nil, false
	}
	lock, err := os.Open(filepath.Join(path, ownerLockName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, now.Sub(fi.ModTime()) >= staleProfileAge
	}
	if err != nil {
		return nil, false
	}
	if !lockOwner(lock) {
		_ = lock.Close()
		return nil, false
	}
	return lock, true
}
