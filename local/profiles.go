package local

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// staleProfileAge is how old a temporary profile without a Chromium lock
// must be before sweepStaleProfiles removes it.
const staleProfileAge = 24 * time.Hour

// ownerLink is the symlink in a scratch directory (scratchPrefix) naming
// the host process that made it, "<hostname>-<pid>" like Chromium's
// SingletonLock, so that the sweep can tell one a killed host left.
const ownerLink = "owner"

// makeScratch makes a browser's scratch directory (scratchPrefix) with its
// ownerLink, or returns "" (the browser keeps the system's TMPDIR) when it
// cannot, or when Chromium's singleton socket under it would not fit a
// Unix socket address. Best effort: the reason is logged at debug level.
func makeScratch(log *slog.Logger) string {
	dir, err := os.MkdirTemp("", scratchPrefix)
	if err != nil {
		log.Debug("local: no scratch directory for the browser", "error", err)
		return ""
	}
	host, _ := os.Hostname()
	if len(dir)+len(chromiumSocketSuffix) > maxSocketPath {
		err = errors.New("its path is too long for Chromium's singleton socket")
	} else {
		err = os.Symlink(host+"-"+strconv.Itoa(os.Getpid()), filepath.Join(dir, ownerLink))
	}
	if err != nil {
		log.Debug("local: no scratch directory for the browser", "path", dir, "error", err)
		_ = os.RemoveAll(dir)
		return ""
	}
	return dir
}

// sweepStaleProfiles removes temporary profiles (tempProfilePrefix) and
// browser scratch directories (scratchPrefix) under dir that a killed host
// left behind (Close removes its own, but a SIGKILLed host cannot). A
// profile is stale when Chromium's SingletonLock names this host and a
// process that no longer exists, or when it has no lock and has not changed
// for staleProfileAge; a scratch directory when its ownerLink names this
// host and a process that no longer exists. Best effort: errors are logged
// at debug level and ignored.
func sweepStaleProfiles(dir string, log *slog.Logger) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	host, _ := os.Hostname()
	for _, e := range ents {
		var stale bool
		path := filepath.Join(dir, e.Name())
		switch {
		case !e.IsDir():
			continue
		case strings.HasPrefix(e.Name(), tempProfilePrefix):
			stale = profileIsStale(path, host)
		case strings.HasPrefix(e.Name(), scratchPrefix):
			stale = lockIsStale(filepath.Join(path, ownerLink), host)
		}
		if !stale {
			continue
		}
		if err := os.RemoveAll(path); err != nil {
			log.Debug("local: cannot remove a stale profile", "path", path, "error", err)
			continue
		}
		log.Info("local: removed a stale temporary directory", "path", path)
	}
}

// profileIsStale applies sweepStaleProfiles' rule to one directory.
func profileIsStale(path, host string) bool {
	lock := filepath.Join(path, "SingletonLock")
	if _, err := os.Readlink(lock); err == nil {
		return lockIsStale(lock, host)
	}
	fi, err := os.Stat(path)
	return err == nil && time.Since(fi.ModTime()) > staleProfileAge
}

// lockIsStale reports whether the symlink at lock names a process of this
// host that no longer exists. Chromium's SingletonLock (and ownerLink) is
// a symlink to "<hostname>-<pid>"; another host's (a shared temporary
// directory), an unreadable or an unknown one is not stale.
func lockIsStale(lock, host string) bool {
	target, err := os.Readlink(lock)
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(target, '-')
	if i < 0 || target[:i] != host {
		return false
	}
	pid, err := strconv.Atoi(target[i+1:])
	if err != nil || pid <= 0 {
		return false
	}
	return processGone(pid)
}
