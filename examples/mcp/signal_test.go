//go:build linux

package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/internal/chromiumtest"
	"github.com/browserchain/browserchain/internal/logtest"
	"github.com/browserchain/browserchain/internal/proctest"
)

// exitDeadline bounds the wait for the server to exit after the signal: a
// guard against a hang, not a timing assertion.
const exitDeadline = 30 * time.Second

// A SIGTERM or SIGINT while browser_navigate waits on a page that never
// answers cancels the call and ends the process cleanly, over stdio and
// over streamable HTTP, without waiting for the call's deadline (here the
// longest a call may have, well past the test's wait); no
// Chromium or Playwright driver process and nothing in the server's TMPDIR
// is left behind.
func TestSignalDuringAStuckNavigateExitsAndLeavesNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		http bool
		sig  syscall.Signal
	}{
		{"stdio-SIGTERM", false, syscall.SIGTERM},
		{"stdio-SIGINT", false, syscall.SIGINT},
		{"http-SIGTERM", true, syscall.SIGTERM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSite(t)
			tmp := proctest.ShortTempDir(t)
			mark := newMark(t)
			args := serverArgs(t.TempDir())
			if tc.http {
				args = append(args, "-http", "127.0.0.1:0")
			}
			cmd := diesWithTest(exec.Command(binary, args...))
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp, markEnv+"="+mark)
			var stderr logtest.Buffer
			ctx := procCtx(t)
			var cs *mcp.ClientSession
			var exited chan error
			if tc.http {
				cs, exited = startHTTPClient(t, ctx, cmd, &stderr)
			} else {
				cs, exited = startStdioClient(t, ctx, cmd, &stderr)
			}
			defer func() {
				if t.Failed() {
					t.Logf("server stderr:\n%s", stderr.String())
				}
			}()

			type outcome struct {
				res *mcp.CallToolResult
				err error
			}
			calls := make(chan outcome, 1)
			go func() {
				// The longest deadline a call may have: a server that waits
				// for it does not exit within exitDeadline.
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_navigate",
					Arguments: map[string]any{"url": s.URL + "/slow", "timeout_ms": tools.MaxTimeout.Milliseconds()}})
				calls <- outcome{res, err}
			}()
			select {
			case <-s.slowHit: // Chromium is loading the page: the call is in flight
			case o := <-calls:
				t.Fatalf("browser_navigate returned before the page answered: %v %+v", o.err, o.res)
			}
			require.NotEmpty(t, chromiumtest.Processes(tmp), "Chromium runs with its profile in the server's TMPDIR")

			start := time.Now()
			require.NoError(t, cmd.Process.Signal(tc.sig))
			var err error
			select {
			case err = <-exited:
			case <-time.After(exitDeadline):
				t.Fatalf("the server did not exit within %v of %v", exitDeadline, tc.sig)
			}
			t.Logf("%v to exit: %v", tc.sig, time.Since(start))
			exited <- err
			require.NoError(t, err, "%v is a clean exit", tc.sig)
			assert.Empty(t, chromiumtest.Processes(tmp), "no process names the server's TMPDIR")
			assert.Empty(t, marked(t, mark), "no server, driver or Chromium process is left")
			left, err := os.ReadDir(tmp)
			require.NoError(t, err)
			assert.Empty(t, left, "the server's TMPDIR is empty")
			<-calls
			_ = cs.Close()
		})
	}
}

// startStdioClient starts cmd and connects an MCP client over its stdio;
// exited receives cmd's exit (the test puts it back after reading it).
func startStdioClient(t *testing.T, ctx context.Context, cmd *exec.Cmd, stderr io.Writer) (*mcp.ClientSession, chan error) {
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "signal-test"}, nil).Connect(ctx,
		&mcp.IOTransport{Reader: stdout, Writer: stdin}, nil)
	require.NoError(t, err)
	return cs, exited
}

// startHTTPClient starts cmd (serving -http), waits for its address and
// connects an MCP client over streamable HTTP; exited receives cmd's exit.
func startHTTPClient(t *testing.T, ctx context.Context, cmd *exec.Cmd, log io.Writer) (*mcp.ClientSession, chan error) {
	url, exited := proctest.StartServing(t, ctx, cmd, log, listening)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "signal-test"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url}, nil)
	require.NoError(t, err)
	return cs, exited
}
