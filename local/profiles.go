package local

import (
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

// sweepStaleProfiles removes temporary profiles (tempProfilePrefix) under dir
// that a killed host left behind (LOC-3: Close removes its own, but a SIGKILLed
// host cannot). A profile is stale when Chromium's SingletonLock names this
// host and a process that no longer exists, or when it has no lock and has
// not changed for staleProfileAge. Best effort: errors are logged at debug
// level and ignored.
func sweepStaleProfiles(dir string, log *slog.Logger) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	host, _ := os.Hostname()
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), tempProfilePrefix) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if !profileIsStale(path, host) {
			continue
		}
		if err := os.RemoveAll(path); err != nil {
			log.Debug("local: cannot remove a stale profile", "path", path, "error", err)
			continue
		}
		log.Info("local: removed a stale temporary profile", "path", path)
	}
}

// profileIsStale applies sweepStaleProfiles' rule to one directory.
func profileIsStale(path, host string) bool {
	target, err := os.Readlink(filepath.Join(path, "SingletonLock"))
	if err == nil {
		// Chromium's lock is a symlink to "<hostname>-<pid>".
		i := strings.LastIndexByte(target, '-')
		if i < 0 || target[:i] != host {
			return false // another host's (shared tmp) or unknown: leave it
		}
		pid, err := strconv.Atoi(target[i+1:])
		if err != nil || pid <= 0 {
			return false
		}
		return processGone(pid)
	}
	fi, err := os.Stat(path)
	return err == nil && time.Since(fi.ModTime()) > staleProfileAge
}
