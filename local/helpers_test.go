//go:build linux

package local

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
)

// testTimeout bounds every real-browser step: a hang guard, not a
// performance assertion.
const testTimeout = 60 * time.Second

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newTestBrowser returns a Browser with its own profile directory; Cleanup
// closes it and, should anything survive, kills the profile's processes.
func newTestBrowser(t *testing.T, opts Options) (*Browser, string) {
	t.Helper()
	if opts.ProfileDir == "" {
		opts.ProfileDir = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	b := New(opts)
	t.Cleanup(func() {
		_ = b.Close()
		killProfileProcesses(opts.ProfileDir)
	})
	return b, opts.ProfileDir
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// driverChildren returns the Playwright driver processes this test process
// started (node … cli.js run-driver).
func driverChildren() []procInfo {
	var out []procInfo
	for _, p := range listProcesses() {
		if p.ppid == os.Getpid() && strings.Contains(p.cmdline, "cli.js run-driver") {
			out = append(out, p)
		}
	}
	return out
}

// evalValue sends Runtime.evaluate and returns result.value as JSON text.
func evalValue(t *testing.T, ctx context.Context, c browserbackend.ScopedClient, expr string) string {
	t.Helper()
	params, _ := json.Marshal(map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	raw, err := c.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate", Params: params})
	require.NoError(t, err)
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails any `json:"exceptionDetails"`
	}
	require.NoError(t, json.Unmarshal(raw, &res), string(raw))
	require.Nil(t, res.ExceptionDetails, string(raw))
	return string(res.Result.Value)
}

// targetID returns the id of the page target behind c.
func targetID(t *testing.T, ctx context.Context, c browserbackend.ScopedClient) string {
	t.Helper()
	raw, err := c.Send(ctx, browserbackend.Command{Method: "Target.getTargetInfo"})
	require.NoError(t, err)
	var res struct {
		TargetInfo struct {
			TargetID string `json:"targetId"`
			Type     string `json:"type"`
		} `json:"targetInfo"`
	}
	require.NoError(t, json.Unmarshal(raw, &res))
	require.Equal(t, "page", res.TargetInfo.Type)
	require.NotEmpty(t, res.TargetInfo.TargetID)
	return res.TargetInfo.TargetID
}

// fixture serves a titled page on 127.0.0.1.
func fixture(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>local fixture</title><body style="background:#1d6fa5"><h1>browserchain local</h1></body>`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// expectPageLost asserts that c's next command is told that the
// conversation's page went away (page_lost) instead of getting a blank one.
func expectPageLost(t *testing.T, ctx context.Context, c *Client) {
	t.Helper()
	_, err := c.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1"}`)})
	assert.ErrorIs(t, err, &browserbackend.Error{Class: browserbackend.ClassClosed, Code: CodePageLost})
}
