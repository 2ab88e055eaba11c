package chromiumtest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
