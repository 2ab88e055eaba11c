// Package proctest starts the example binaries in tests and waits for them
// to report where they serve. Test-only.
package proctest

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// ShortTempDir returns a fresh directory for a child's TMPDIR, removed when
// the test ends. It is short on purpose: Chromium puts a Unix socket there,
// and a socket path is at most 107 bytes (t.TempDir is often longer).
func ShortTempDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "bc-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// StartServing starts cmd with its stderr copied to log (nil: discarded)
// and returns the first submatch of address in a stderr line — where the
// child says it serves. exited receives cmd's exit once; a test that reads
// it puts it back. The child is killed when the test ends. It fails the
// test if the child exits first or ctx ends first.
func StartServing(t testing.TB, ctx context.Context, cmd *exec.Cmd, log io.Writer, address *regexp.Regexp) (string, chan error) {
	t.Helper()
	if log == nil {
		log = io.Discard
	}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(io.TeeReader(stderr, log))
		for sc.Scan() {
			if m := address.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		_, _ = io.Copy(log, stderr) // keep the child's stderr flowing
		exited <- cmd.Wait()
	}()
	select {
	case addr := <-found:
		return addr, exited
	case err := <-exited:
		exited <- err
		t.Fatalf("proctest: %s exited before serving: %v", cmd.Path, err)
	case <-ctx.Done():
		t.Fatalf("proctest: %s did not report its address", cmd.Path)
	}
	return "", nil
}
