package tools_test

import (
	"context"
	"crypto/rand"
	"slices"
	"testing"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/examples/extension"
	"github.com/browserchain/browserchain/examples/server/runtime"
	"github.com/browserchain/browserchain/hostproxy/vellumtest"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// extensionDir is the reference extension, relative to this package.
const extensionDir = "../../examples/extension"

// hubStack is the reference runtime (hub, proxy, routes, auth, selector with
// the extension and host-bridge providers) on a loopback port.
type hubStack struct {
	rt  *runtime.Runtime
	url string
}

func startRuntime(t testing.TB) *hubStack { return startRuntimeWith(t, nil) }

// startRuntimeWith is startRuntime with a config edited by edit (nil: none),
// e.g. fallback providers after the hub's.
func startRuntimeWith(t testing.TB, edit func(*runtime.Config)) *hubStack {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	cfg := runtime.Config{Key: key, AllowedOrigins: []string{extension.Origin, vellumtest.DevOrigin}, Logger: quietLogger()}
	if edit != nil {
		edit(&cfg)
	}
	rt, err := runtime.New(cfg)
	require.NoError(t, err)
	srv := chromiumtest.LoopbackServer(t, rt.Handler)
	// Runs before the server's Close (cleanups are LIFO): streams end first.
	t.Cleanup(func() { rt.Close() })
	return &hubStack{rt: rt, url: srv.URL}
}

func (h *hubStack) tools(t testing.TB) *tools.Tools {
	return tools.New(tools.Options{Selector: h.rt.Selector, ScreenshotDir: t.TempDir(), Logger: quietLogger()})
}

func (h *hubStack) invocation(conv string) browserbackend.Invocation {
	return browserbackend.Invocation{ConversationID: conv, InterfaceID: "cli", ActorPrincipalID: h.rt.Auth.ActorPrincipalID()}
}

// waitClient waits, woken by roster changes (never polling), until a client
// of the interface is connected.
func (h *hubStack) waitClient(t testing.TB, iface string) eventhub.ClientInfo {
	t.Helper()
	guard := time.NewTimer(stepTimeout)
	defer guard.Stop()
	for {
		changed := h.rt.Hub.Changed()
		for _, c := range h.rt.Hub.Roster() {
			if c.InterfaceID == iface {
				return c
			}
		}
		select {
		case <-changed:
		case <-guard.C:
			t.Fatalf("no %s client connected within %v", iface, stepTimeout)
		}
	}
}

// waitGone waits, woken by roster changes, until no client of the
// interface is connected.
func (h *hubStack) waitGone(t testing.TB, iface string) {
	t.Helper()
	guard := time.NewTimer(stepTimeout)
	defer guard.Stop()
	for {
		changed := h.rt.Hub.Changed()
		if !slices.ContainsFunc(h.rt.Hub.Roster(), func(c eventhub.ClientInfo) bool { return c.InterfaceID == iface }) {
			return
		}
		select {
		case <-changed:
		case <-guard.C:
			t.Fatalf("a %s client still connected after %v", iface, stepTimeout)
		}
	}
}

// startExtension starts headless Chromium with a copy of the reference
// extension configured to pair with h and connect at start, and waits until
// the extension is on the hub's roster.
func startExtension(t testing.TB, h *hubStack) *chromiumtest.Browser {
	t.Helper()
	dst := t.TempDir()
	require.NoError(t, extension.Install(extensionDir, dst, h.url))
	b := chromiumtest.Start(t, chromiumtest.WithExtension(dst))
	h.waitClient(t, wire.InterfaceChromeExtension)
	return b
}

// startVellumClient starts headless Chromium driven by the Vellum-shaped
// test client, paired with h, and waits until it is on the roster.
func startVellumClient(t testing.TB, h *hubStack) (*vellumtest.Client, *chromiumtest.Browser) {
	t.Helper()
	b := chromiumtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	c, err := vellumtest.Start(ctx, vellumtest.Options{ServerURL: h.url, BrowserWSURL: b.BrowserWSURL})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	h.waitClient(t, wire.InterfaceChromeExtension)
	return c, b
}
