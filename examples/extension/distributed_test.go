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
	"github.com/browserchain/browserchain/eventhub/natshub"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/examples/server/runtime"
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
	d, err := natshub.New(ctx, natshub.Config{Conn: nc, Replica: name, Logger: log})
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
	var created struct{ Tab tab }
	send(t, c, "Vellum.createTab", map[string]any{"url": fx.page("first"), "active": false}, &created)
	require.Equal(t, browserbackend.KindExtension, c.Kind())
	require.NotZero(t, created.Tab.ID)
	var ev struct{ Result struct{ Value string } }
	send(t, c, "Runtime.evaluate", map[string]any{"expression": "document.title", "returnByValue": true}, &ev)
	require.Equal(t, "first", ev.Result.Value)
	var shot struct{ Data string }
	send(t, c, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	require.NoError(t, err)
	require.Equal(t, "\x89PNG", string(png[:4]))
	send(t, c, "Vellum.closeTab", map[string]any{"tabId": created.Tab.ID}, nil)
}
