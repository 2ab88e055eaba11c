package chromiumtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/browserchain/browserchain/internal/chromiumtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStartServesDevToolsAndKillLeavesNoProcess(t *testing.T) {
	b := chromiumtest.Start(t)
	require.NotZero(t, b.Port)
	require.True(t, strings.HasPrefix(b.BrowserWSURL, "ws://127.0.0.1:"), b.BrowserWSURL)

	resp, err := http.Get(b.HTTPURL() + "/json/version")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var v struct {
		Browser string `json:"Browser"`
		WS      string `json:"webSocketDebuggerUrl"`
	}
	require.NoError(t, json.Unmarshal(body, &v), string(body))
	assert.Contains(t, v.Browser, "Chrome/")
	assert.True(t, strings.HasSuffix(v.WS, b.WSPath), "version ws %q vs file path %q", v.WS, b.WSPath)

	require.NotEmpty(t, chromiumtest.Processes(b.UserDataDir), "browser processes should be visible while running")
	b.Kill()
	select {
	case <-b.Exited():
	default:
		t.Fatal("Kill returned before the browser process was reaped")
	}
	chromiumtest.AssertNoProcesses(t, b.UserDataDir, 10*time.Second)
}

// evalOnFirstPage evaluates expr on the browser's first page over a bare
// CDP WebSocket and returns the JSON value.
func evalOnFirstPage(t *testing.T, b *chromiumtest.Browser, expr string) json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, b.BrowserWSURL, nil)
	require.NoError(t, err)
	defer ws.CloseNow()
	id := 0
	call := func(method, session string, params any) json.RawMessage {
		id++
		msg, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params, "sessionId": session})
		require.NoError(t, ws.Write(ctx, websocket.MessageText, msg))
		for {
			_, data, err := ws.Read(ctx)
			require.NoError(t, err)
			var f struct {
				ID     int             `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			require.NoError(t, json.Unmarshal(data, &f))
			if f.ID == id {
				require.Empty(t, f.Error, method)
				return f.Result
			}
		}
	}
	var targets struct {
		TargetInfos []struct{ TargetID, Type string } `json:"targetInfos"`
	}
	require.NoError(t, json.Unmarshal(call("Target.getTargets", "", map[string]any{}), &targets))
	var page string
	for _, tg := range targets.TargetInfos {
		if tg.Type == "page" {
			page = tg.TargetID
			break
		}
	}
	require.NotEmpty(t, page)
	var att struct{ SessionID string }
	require.NoError(t, json.Unmarshal(call("Target.attachToTarget", "", map[string]any{"targetId": page, "flatten": true}), &att))
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(call("Runtime.evaluate", att.SessionID, map[string]any{"expression": expr, "returnByValue": true}), &res))
	return res.Result.Value
}

func TestWithWindowSizeSetsWindowSize(t *testing.T) {
	b := chromiumtest.Start(t, chromiumtest.WithWindowSize(1024, 700))
	assert.JSONEq(t, `[1024,700]`, string(evalOnFirstPage(t, b, "[outerWidth, outerHeight]")))
}

func TestStartLoadsUnpackedExtension(t *testing.T) {
	dir := t.TempDir()
	manifest := `{"manifest_version":3,"name":"chromiumtest probe","version":"1.0","background":{"service_worker":"sw.js"}}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(manifest), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sw.js"), []byte("self.addEventListener('install', () => {});"), 0o644))
	b := chromiumtest.Start(t, chromiumtest.WithExtension(dir))
	cmdlines := chromiumtest.Processes(b.UserDataDir)
	var found bool
	for _, p := range cmdlines {
		if p.PID == b.PID {
			found = strings.Contains(p.Cmdline, "--load-extension="+dir) &&
				strings.Contains(p.Cmdline, "--disable-extensions-except="+dir)
		}
	}
	assert.True(t, found, "browser command line should carry the extension flags")
}

func TestFixtureServerListensOnLoopbackOnly(t *testing.T) {
	srv := chromiumtest.FixtureServer(t, nil)
	assert.True(t, strings.HasPrefix(srv.URL, "http://127.0.0.1:"), srv.URL)
	resp, err := http.Get(srv.URL + "/")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(body), "browserchain fixture")
	resp, err = http.Get(srv.URL + "/missing")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestParseDevToolsActivePortRejectsMalformedFiles(t *testing.T) {
	for _, in := range []string{"", "9222", "0\n/devtools/browser/x", "70000\n/devtools/browser/x", "abc\n/devtools/browser/x", "9222\n/json/version"} {
		_, _, err := chromiumtest.ParseDevToolsActivePort([]byte(in))
		assert.Error(t, err, "%q", in)
	}
}

func ExampleParseDevToolsActivePort() {
	port, path, err := chromiumtest.ParseDevToolsActivePort([]byte("45299\n/devtools/browser/283b6bad\n"))
	fmt.Println(port, path, err)
	// Output: 45299 /devtools/browser/283b6bad <nil>
}

// ProcessesWithEnv finds a process by a whole entry of its environment,
// not by a prefix of one.
func TestProcessesWithEnvMatchesWholeEntries(t *testing.T) {
	entry := "CHROMIUMTEST_MARK=" + t.Name()
	cmd := exec.Command("sleep", "600")
	cmd.Env = append(os.Environ(), entry)
	require.NoError(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	found := chromiumtest.ProcessesWithEnv(entry)
	require.Len(t, found, 1)
	assert.Equal(t, cmd.Process.Pid, found[0].PID)
	assert.Empty(t, chromiumtest.ProcessesWithEnv(entry[:len(entry)-1]))
	assert.Empty(t, chromiumtest.ProcessesWithEnv(entry+"x"))
}
