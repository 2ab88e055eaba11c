package cdpinspect_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

func TestDiscoverUsesDevToolsActivePortWhenJSONVersionAnswers404(t *testing.T) {
	// Chrome 144+ with remote debugging enabled at chrome://inspect answers
	// 404 on /json/version; only the file names the browser endpoint.
	srv := chromiumtest.LoopbackServer(t, http.NotFoundHandler())
	port := portOf(t, srv.Listener.Addr().String())
	dir := writeActivePort(t, port, "/devtools/browser/5b1c0ffe-aaaa-bbbb-cccc-123456789abc")

	_, err := cdpinspect.Discover(context.Background(), cfgFor(port), cdpinspect.WithUserDataDirs())
	assertDiscoveryErr(t, err, bb.CodeNonChrome) // the HTTP step alone cannot find it

	ep, err := cdpinspect.Discover(context.Background(), cfgFor(port), cdpinspect.WithUserDataDirs(dir))
	require.NoError(t, err)
	assert.Equal(t, cdpinspect.SourceDevToolsActivePort, ep.Source)
	assert.Equal(t, dir, ep.UserDataDir)
	assert.Equal(t, "ws://127.0.0.1:"+strconv.Itoa(port)+"/devtools/browser/5b1c0ffe-aaaa-bbbb-cccc-123456789abc", ep.BrowserWSURL)
}

func TestDiscoverReadsRealBrowsersDevToolsActivePort(t *testing.T) {
	b := chromiumtest.Start(t)
	cfg := cfgFor(closedPort(t)) // the HTTP step would fail: the file must be what finds it
	ep, err := cdpinspect.Discover(context.Background(), cfg, cdpinspect.WithUserDataDirs(t.TempDir(), b.UserDataDir))
	require.NoError(t, err)
	assert.Equal(t, cdpinspect.SourceDevToolsActivePort, ep.Source)
	assert.Equal(t, b.BrowserWSURL, ep.BrowserWSURL)
}

func TestDiscoverFromJSONVersionOfRealBrowser(t *testing.T) {
	b := chromiumtest.Start(t)
	cfg := cfgFor(b.Port)
	cfg.Host = "localhost"
	ep, err := cdpinspect.Probe(context.Background(), cfg, cdpinspect.WithUserDataDirs())
	require.NoError(t, err)
	assert.Equal(t, cdpinspect.SourceJSONVersion, ep.Source)
	assert.True(t, strings.HasSuffix(ep.BrowserWSURL, b.WSPath), ep.BrowserWSURL)
	assert.True(t, strings.HasPrefix(ep.Browser, "Chrome/"), ep.Browser)
	assert.Equal(t, 1, ep.Pages, "a fresh browser has one about:blank page")
}

func TestDiscoverStaleDevToolsActivePortIsUnreachable(t *testing.T) {
	port := closedPort(t)
	dir := writeActivePort(t, port, "/devtools/browser/gone")
	_, err := cdpinspect.Discover(context.Background(), cfgFor(port), cdpinspect.WithUserDataDirs(dir))
	assertDiscoveryErr(t, err, bb.CodeUnreachable)
	assert.Contains(t, err.Error(), "DevToolsActivePort", "the message should name the stale file too")
}

func TestDiscoverMalformedDevToolsActivePortFallsThroughToHTTP(t *testing.T) {
	b := chromiumtest.Start(t)
	dir := writeActivePort(t, 1, "not a path")
	cfg := cfgFor(b.Port)
	ep, err := cdpinspect.Discover(context.Background(), cfg, cdpinspect.WithUserDataDirs(dir))
	require.NoError(t, err)
	assert.Equal(t, cdpinspect.SourceJSONVersion, ep.Source)
}

func TestDiscoverRefusesNonLoopbackEndpoints(t *testing.T) {
	cfg := cfgFor(9222)
	cfg.Host = "192.0.2.10" // TEST-NET-1: refused before any connection
	_, err := cdpinspect.Discover(context.Background(), cfg, cdpinspect.WithUserDataDirs())
	assertDiscoveryErr(t, err, bb.CodeNonLoopback)

	_, err = cdpinspect.Discover(context.Background(), cfgFor(9222),
		cdpinspect.WithWebSocketURL("ws://192.0.2.10:9222/devtools/browser/abc"))
	assertDiscoveryErr(t, err, bb.CodeNonLoopback)

	_, err = cdpinspect.Discover(context.Background(), cfgFor(9222),
		cdpinspect.WithWebSocketURL("ws://[2001:db8::1]:9222/devtools/browser/abc"))
	assertDiscoveryErr(t, err, bb.CodeNonLoopback)
}

func TestDiscoverRefusesJSONVersionPointingOffMachine(t *testing.T) {
	srv := chromiumtest.LoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"Browser":"Chrome/156.0","webSocketDebuggerUrl":"ws://192.0.2.10:9222/devtools/browser/x"}`))
	}))
	_, err := cdpinspect.Discover(context.Background(), cfgFor(portOf(t, srv.Listener.Addr().String())), cdpinspect.WithUserDataDirs())
	assertDiscoveryErr(t, err, bb.CodeNonLoopback)
}

func TestDiscoverRefusesNonChromeHTTPServers(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"404":  func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
		"json": func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{"name":"some other service"}`)) },
		"node.js": func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"Browser":"node.js/v20.11.0","Protocol-Version":"1.1"}`))
		},
		"page ws": func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"Browser":"Chrome/156.0","webSocketDebuggerUrl":"ws://127.0.0.1:1/devtools/page/x"}`))
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := chromiumtest.LoopbackServer(t, h)
			_, err := cdpinspect.Discover(context.Background(), cfgFor(portOf(t, srv.Listener.Addr().String())), cdpinspect.WithUserDataDirs())
			assertDiscoveryErr(t, err, bb.CodeNonChrome)
		})
	}
}

func TestDiscoverRejectsGarbageAsInvalidResponse(t *testing.T) {
	t.Run("http body", func(t *testing.T) {
		srv := chromiumtest.LoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("\x00\x01 this is not json {{{"))
		}))
		_, err := cdpinspect.Discover(context.Background(), cfgFor(portOf(t, srv.Listener.Addr().String())), cdpinspect.WithUserDataDirs())
		assertDiscoveryErr(t, err, bb.CodeInvalidResponse)
	})
	t.Run("not http", func(t *testing.T) {
		port := rawServer(t, "SSH-2.0-OpenSSH_9.2\r\n garbage garbage\r\n")
		_, err := cdpinspect.Discover(context.Background(), cfgFor(port), cdpinspect.WithUserDataDirs())
		assertDiscoveryErr(t, err, bb.CodeInvalidResponse)
	})
	t.Run("oversized body", func(t *testing.T) {
		srv := chromiumtest.LoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"Browser":"` + strings.Repeat("x", 2<<20) + `"}`))
		}))
		_, err := cdpinspect.Discover(context.Background(), cfgFor(portOf(t, srv.Listener.Addr().String())), cdpinspect.WithUserDataDirs())
		assertDiscoveryErr(t, err, bb.CodeInvalidResponse)
	})
	t.Run("websocket url", func(t *testing.T) {
		_, err := cdpinspect.Discover(context.Background(), cfgFor(9222), cdpinspect.WithWebSocketURL("http://127.0.0.1:9222/json"))
		assertDiscoveryErr(t, err, bb.CodeInvalidResponse)
	})
}

func TestDiscoverNothingListeningIsUnreachable(t *testing.T) {
	_, err := cdpinspect.Discover(context.Background(), cfgFor(closedPort(t)), cdpinspect.WithUserDataDirs())
	assertDiscoveryErr(t, err, bb.CodeUnreachable)
}

func TestDiscoverSilentEndpointTimesOutAtProbeTimeout(t *testing.T) {
	port := silentServer(t)
	_, err := cdpinspect.Discover(context.Background(), shortProbe(cfgFor(port)), cdpinspect.WithUserDataDirs())
	assertDiscoveryErr(t, err, bb.CodeUnresponsive)

	// The same through a DevToolsActivePort file: the port accepts, so the
	// WebSocket handshake in Dial is what times out.
	dir := writeActivePort(t, port, "/devtools/browser/silent")
	_, err = cdpinspect.Dial(context.Background(), shortProbe(cfgFor(closedPort(t))), cdpinspect.WithUserDataDirs(dir))
	assertDiscoveryErr(t, err, bb.CodeUnresponsive)
}

func TestDiscoverCancelledContextIsAborted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := cdpinspect.Discover(ctx, cfgFor(silentServer(t)), cdpinspect.WithUserDataDirs())
	require.Error(t, err)
	assert.True(t, errors.Is(err, bb.ErrAborted), "%v", err)
}

func TestParseDevToolsActivePort(t *testing.T) {
	port, path, err := cdpinspect.ParseDevToolsActivePort([]byte("9222\n/devtools/browser/abc-def\n"))
	require.NoError(t, err)
	assert.Equal(t, 9222, port)
	assert.Equal(t, "/devtools/browser/abc-def", path)
	for _, in := range []string{"", "9222", "9222\n", "0\n/devtools/browser/a", "65536\n/devtools/browser/a", "+9222\n/devtools/browser/a",
		"9222\n/devtools/page/a", "9222\n/devtools/browser/", "9222\n/devtools/browser/a\nextra", "9222\n/devtools/browser/a/../b"} {
		_, _, err := cdpinspect.ParseDevToolsActivePort([]byte(in))
		assert.Error(t, err, "%q", in)
	}
}
