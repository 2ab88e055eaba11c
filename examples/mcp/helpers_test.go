//go:build linux

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// markEnv names the environment variable the tests give the server process;
// Chromium and the Playwright driver inherit it, so a process left behind
// is found by it.
const markEnv = "BROWSERCHAIN_MCP_TEST_MARK"

// procTimeout bounds each process a test runs: a guard, not synchronisation.
const procTimeout = 2 * time.Minute

func newMark(t *testing.T) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return t.Name() + "-" + hex.EncodeToString(b[:])
}

// marked returns the pids of live processes whose environment holds mark.
func marked(t *testing.T, mark string) []string {
	t.Helper()
	needle := []byte(markEnv + "=" + mark + "\x00")
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(append(env, 0), needle) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join(d, "stat")); err == nil {
			// A zombie has exited; its parent has yet to reap it.
			if f := strings.Fields(string(stat)); len(f) > 2 && f[2] == "Z" {
				continue
			}
		}
		cmd, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		out = append(out, filepath.Base(d)+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return out
}

// serverArgs are the flags every test passes to the server: no reference
// server port (tests run in parallel with other suites), files in dir.
func serverArgs(dir string) []string {
	return []string{"-listen=", "-key-file", filepath.Join(dir, "server.key"), "-screenshot-dir", filepath.Join(dir, "shots")}
}

// site serves /form and /slow (which answers only when the test ends).
type site struct {
	*httptest.Server
	slowHit chan struct{}
	// posted receives the password of each /welcome post.
	posted chan string
	// hits counts the requests the site served.
	hits atomic.Int64
}

func startSite(t *testing.T) *site {
	s := &site{slowHit: make(chan struct{}, 8), posted: make(chan string, 4)}
	done := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/form", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>Contact</title><h1>Contact</h1><label for="q">Query</label> <input id="q"><button>Send</button>`)
	})
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>Sign in</title><form method="post" action="/welcome"><label for="u">User</label><input id="u" name="u">
<label for="p">Password</label><input id="p" name="p" type="password"><button id="signin">Sign in</button></form>`)
	})
	mux.HandleFunc("/welcome", func(w http.ResponseWriter, r *http.Request) {
		s.posted <- r.PostFormValue("p")
		fmt.Fprintf(w, "<!doctype html><title>Welcome</title><p>Welcome, %s</p>", html.EscapeString(r.PostFormValue("u")))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		s.slowHit <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-done:
		}
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<!doctype html><title>%s</title>", html.EscapeString(r.URL.Path))
	})
	s.Server = chromiumtest.LoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { close(done) })
	return s
}

// diesWithTest makes cmd's process receive SIGKILL when the test process
// dies, so a test binary killed from outside (where no cleanup runs) leaves
// no MCP server or Inspector behind holding a browser.
func diesWithTest(cmd *exec.Cmd) *exec.Cmd {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

func procCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), procTimeout)
	t.Cleanup(cancel)
	return ctx
}
