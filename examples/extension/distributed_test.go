package extension_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/eventhub/natshub"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/examples/server/runtime"
	"github.com/browserchain/browserchain/hostproxy/auth"
	"github.com/browserchain/browserchain/hostproxy/bridge"
	"github.com/browserchain/browserchain/internal/chromiumtest"
	"github.com/browserchain/browserchain/internal/natstest"
)

// replicaRuntime is the reference runtime as one replica named name of a
// distributed hub on broker url, served on a loopback port.
func replicaRuntime(t *testing.T, url, name string, key []byte) (*runtime.Runtime, string) {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := natshub.New(ctx, nc, name, natshub.WithLogger(log))
	require.NoError(t, err)
	rt, err := runtime.New(runtime.Config{Key: key, AllowedOrigins: []string{ExtensionOrigin}, Logger: log, Distributed: d})
	require.NoError(t, err)
	srv := chromiumtest.LoopbackServer(t, rt.Handler)
	t.Cleanup(func() {
		rt.Close()
		nc.Close()
	})
	return rt, srv.URL
}

// The reference extension subscribes to replica B; an auto invocation on
// replica A selects the extension and runs commands in its tab; results
// posted to B reach A (DHUB-2, DHUB-3).
func TestExtensionOnReplicaBServesAutoInvocationOnReplicaA(t *testing.T) {
	broker := natstest.Start(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	rtA, _ := replicaRuntime(t, broker.URL(), "a", key)
	_, urlB := replicaRuntime(t, broker.URL(), "b", key)
	fx := startFixtures(t)
	chromiumtest.Start(t, chromiumtest.WithExtension(copyExtension(t, urlB)))

	deadline := time.NewTimer(stepTimeout)
	defer deadline.Stop()
	for found := false; !found; {
		changed := rtA.Cluster.Changed()
		for _, c := range rtA.Cluster.Roster() {
			found = found || c.InterfaceID == wire.InterfaceChromeExtension
		}
		if found {
			break
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatal("replica A never saw the extension subscribed to B")
		}
	}

	c := rtA.Selector.Client(browserbackend.Invocation{ConversationID: "conv-1", InterfaceID: wire.InterfaceMacOS,
		ActorPrincipalID: rtA.Auth.ActorPrincipalID(), Mode: browserbackend.ModeAuto})
	defer c.Close()
	var created tab // {"tabId":"<string>","clientId"} (WIRE-3)
	send(t, c, "Vellum.createTab", map[string]any{"url": fx.page("first"), "active": false}, &created)
	require.Equal(t, browserbackend.KindExtension, c.Kind())
	require.NotZero(t, created.ID)
	// Page.navigate answers once the document has committed; the page's
	// own load event then ends the awaited evaluation (no polling).
	send(t, c, "Page.navigate", map[string]any{"url": fx.page("first")}, nil)
	var ev struct{ Result struct{ Value string } }
	send(t, c, "Runtime.evaluate", map[string]any{"expression": titleWhenLoaded, "awaitPromise": true, "returnByValue": true}, &ev)
	require.Equal(t, "first", ev.Result.Value)
	var shot struct{ Data string }
	send(t, c, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	require.NoError(t, err)
	require.Equal(t, "\x89PNG", string(png[:4]))
	send(t, c, "Vellum.closeTab", map[string]any{"tabId": created.ID}, nil)
}

// The reference desktop bridge subscribed to replica C serves an auto
// invocation on replica A routed to host-bridge (DHUB-2, DHUB-3).
func TestBridgeOnReplicaCServesInvocationOnReplicaA(t *testing.T) {
	broker := natstest.Start(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	rtA, _ := replicaRuntime(t, broker.URL(), "a", key)
	rtC, urlC := replicaRuntime(t, broker.URL(), "c", key)
	browser := chromiumtest.Start(t)
	tok, err := rtC.Auth.Mint(auth.Grant{InterfaceID: wire.InterfaceMacOS, ClientID: "mac-1"})
	require.NoError(t, err)
	cfg := cdpinspect.DefaultConfig()
	cfg.Host, cfg.Port, cfg.ProbeTimeoutMs = "127.0.0.1", browser.Port, 5000
	br, err := bridge.New(bridge.Options{
		ServerURL: urlC, Token: tok.Token, ClientID: "mac-1", InterfaceID: wire.InterfaceMacOS,
		Dial:   bridge.CDPInspectDialer(cfg, cdpinspect.WithWebSocketURL(browser.BrowserWSURL), cdpinspect.WithUserDataDirs()),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MinBackoff: 10 * time.Millisecond,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- br.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	deadline := time.NewTimer(stepTimeout)
	defer deadline.Stop()
	for {
		changed := rtA.Cluster.Changed()
		if _, ok := rtA.Cluster.Client("mac-1"); ok {
			break
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatal("replica A never saw the bridge subscribed to C")
		}
	}
	c := rtA.Selector.Client(browserbackend.Invocation{ConversationID: "conv-1", InterfaceID: wire.InterfaceMacOS,
		ActorPrincipalID: rtA.Auth.ActorPrincipalID(), Mode: browserbackend.ModeAuto})
	defer c.Close()
	var ev struct{ Result struct{ Value float64 } }
	send(t, c, "Runtime.evaluate", map[string]any{"expression": "6*7", "returnByValue": true}, &ev)
	require.Equal(t, browserbackend.KindHostBridge, c.Kind())
	require.Equal(t, float64(42), ev.Result.Value)
}

// titleWhenLoaded evaluates to document.title once the page has loaded.
const titleWhenLoaded = `new Promise(r => { const done = () => r(document.title);
	if (document.readyState === "complete") done(); else addEventListener("load", done); })`
