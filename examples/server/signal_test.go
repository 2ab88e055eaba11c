//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/examples/server/runtime"
	"github.com/browserchain/browserchain/internal/chromiumtest"
	"github.com/browserchain/browserchain/internal/logtest"
	"github.com/browserchain/browserchain/internal/proctest"
)

// exitDeadline bounds the wait for the server to exit after the signal: a
// guard against a hang, not a timing assertion.
const exitDeadline = 30 * time.Second

var listening = regexp.MustCompile(`reference server listening.*addr=(\S+)`)

// A SIGTERM or SIGINT while POST /v1/browser/command waits on a local
// Page.navigate to a page that never answers cancels the command, which is
// answered cancelled (not failed by the browser closing under it), and the
// process exits cleanly without waiting for the command's deadline; no
// Chromium or Playwright driver process and nothing in the server's TMPDIR
// is left behind.
func TestSignalDuringAStuckCommandExitsAndLeavesNothing(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "browserchain-server")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "building examples/server: %s", out)

	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			hit := make(chan struct{}, 1)
			release := make(chan struct{})
			site := chromiumtest.LoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case hit <- struct{}{}:
				default:
				}
				select {
				case <-r.Context().Done():
				case <-release:
				}
			}))
			t.Cleanup(func() { close(release) }) // runs before the site closes

			tmp := proctest.ShortTempDir(t)
			cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-key-file", filepath.Join(t.TempDir(), "server.key"))
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			var log logtest.Buffer
			startCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			addr, exited := proctest.StartServing(t, startCtx, cmd, &log, listening)
			cancel()
			defer func() {
				if t.Failed() {
					t.Logf("server stderr:\n%s", log.String())
				}
			}()

			type answer struct {
				status int
				body   string
				err    error
			}
			answers := make(chan answer, 1)
			go func() {
				body, _ := json.Marshal(runtime.CommandRequest{ConversationID: "c1", BrowserMode: "local",
					Method: "Page.navigate", Params: json.RawMessage(`{"url":"` + site.URL + `/never"}`),
					TimeoutMs: int((5 * time.Minute).Milliseconds())}) // far past the test's wait
				c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
				resp, err := c.Post("http://"+addr+runtime.CommandPath, "application/json", bytes.NewReader(body))
				if err != nil {
					answers <- answer{err: err}
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				answers <- answer{status: resp.StatusCode, body: string(b)}
			}()
			select {
			case <-hit: // Chromium is loading the page: the command is in flight
			case a := <-answers:
				t.Fatalf("the command was answered before the page answered: %+v", a)
			}
			require.NotEmpty(t, chromiumtest.Processes(tmp), "Chromium runs with its profile in the server's TMPDIR")

			start := time.Now()
			require.NoError(t, cmd.Process.Signal(sig))
			select {
			case err = <-exited:
			case <-time.After(exitDeadline):
				t.Fatalf("the server did not exit within %v of %v", exitDeadline, sig)
			}
			t.Logf("%v to exit: %v", sig, time.Since(start))
			exited <- err
			require.NoError(t, err, "%v is a clean exit", sig)

			a := <-answers
			require.NoError(t, a.err, "the pending command is answered before the server exits")
			var resp runtime.CommandResponse
			require.NoError(t, json.Unmarshal([]byte(a.body), &resp), a.body)
			require.NotNil(t, resp.Error, a.body)
			// Cancelled by the signal, before the browser closed (which
			// would fail it closed).
			assert.Equal(t, browserbackend.ClassAborted, resp.Error.Class, a.body)
			assert.Equal(t, browserbackend.CodeCancelled, resp.Error.Code, a.body)

			assert.Empty(t, chromiumtest.Processes(tmp), "no process names the server's TMPDIR")
			assert.Empty(t, chromiumtest.ProcessesWithEnv("TMPDIR="+tmp), "no driver or Chromium process is left")
			left, err := os.ReadDir(tmp)
			require.NoError(t, err)
			assert.Empty(t, left, "the server's TMPDIR is empty")
		})
	}
}
