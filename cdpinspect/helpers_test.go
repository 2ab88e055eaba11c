package cdpinspect_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// cfgFor returns a config pointing at 127.0.0.1:port with the largest probe
// timeout the config allows, so that a loaded test machine never turns an
// answer into a timeout. Tests about the timeout itself use shortProbe.
func cfgFor(port int) cdpinspect.Config {
	c := cdpinspect.DefaultConfig()
	c.Host = "127.0.0.1"
	c.Port = port
	c.ProbeTimeoutMs = 5000
	return c
}

// shortProbe sets the smallest probe timeout the config allows.
func shortProbe(c cdpinspect.Config) cdpinspect.Config {
	c.ProbeTimeoutMs = 50
	return c
}

// closedPort returns a loopback port nothing listens on (it was bound and
// released).
func closedPort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

// portOf returns the port of a listener address "127.0.0.1:NNNN".
func portOf(t testing.TB, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	return n
}

// writeActivePort writes a DevToolsActivePort file into a fresh dir.
func writeActivePort(t testing.TB, port int, path string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "DevToolsActivePort"), []byte(strconv.Itoa(port)+"\n"+path), 0o600))
	return dir
}

// assertDiscoveryErr checks the shape every discovery failure has.
func assertDiscoveryErr(t testing.TB, err error, code string) {
	t.Helper()
	require.Error(t, err)
	var e *bb.Error
	require.True(t, errors.As(err, &e), "want *browserbackend.Error, got %T: %v", err, err)
	assert.Equal(t, bb.ClassTransport, e.Class, "class: %v", err)
	assert.Equal(t, code, e.Code, "code: %v", err)
	assert.Equal(t, code, e.Detail, "discovery code: %v", err)
	assert.Equal(t, bb.KindCDPInspect, e.Backend)
	assert.True(t, errors.Is(err, bb.ErrTransport))
}

// silentServer accepts TCP connections on 127.0.0.1 and never answers. The
// connections are closed when the test ends.
func silentServer(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return portOf(t, ln.Addr().String())
}

// rawServer accepts TCP connections and writes reply to each, then closes.
func rawServer(t testing.TB, reply string) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4096)
			_, _ = c.Read(buf)
			_, _ = c.Write([]byte(reply))
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return portOf(t, ln.Addr().String())
}

// pageCount counts page targets through /json/list of a real browser.
func pageCount(t testing.TB, b *chromiumtest.Browser) int {
	t.Helper()
	resp, err := http.Get(b.HTTPURL() + "/json/list")
	require.NoError(t, err)
	defer resp.Body.Close()
	var list []struct {
		Type string `json:"type"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	n := 0
	for _, tg := range list {
		if tg.Type == "page" {
			n++
		}
	}
	return n
}

// dialBrowser dials a real browser through its DevToolsActivePort file.
func dialBrowser(t testing.TB, b *chromiumtest.Browser, opts ...cdpinspect.Option) *cdpinspect.Backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := cfgFor(b.Port)
	opts = append([]cdpinspect.Option{cdpinspect.WithUserDataDirs()}, opts...)
	be, err := cdpinspect.Dial(ctx, cfg, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { be.Close() })
	return be
}

// send sends method with params (any JSON-marshalable value, nil for none)
// on the backend's page session.
func send(t testing.TB, be *cdpinspect.Backend, method string, params any) json.RawMessage {
	t.Helper()
	res, err := trySend(be, method, params)
	require.NoError(t, err, method)
	return res
}

func trySend(be *cdpinspect.Backend, method string, params any) (json.RawMessage, error) {
	var raw json.RawMessage
	if params != nil {
		var err error
		if raw, err = json.Marshal(params); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return be.Send(ctx, bb.Command{Method: method, Params: raw})
}
