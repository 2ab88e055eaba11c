package hostproxy

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
)

// The selector's SEL-8 grace is woken by the providers' Changed channel:
// a target extension that connects during the grace serves the command at
// once, without any polling delay.
func TestSelectorGrace_TargetExtensionConnectingDuringGraceServes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newFakeHub()
		p := newTestProxy(h)
		sel := browserbackend.NewSelector(browserbackend.Options{
			Providers: []browserbackend.Provider{p.ExtensionProvider(ProviderOptions{}), p.HostBridgeProvider(ProviderOptions{})},
			Logger:    quietLogger(),
		})
		c := sel.Client(browserbackend.Invocation{ConversationID: "c", ActorPrincipalID: "alice",
			Mode: browserbackend.Mode("extension"), TargetClientID: "ext-1"})
		defer c.Close()
		start := time.Now()
		done := make(chan outcome, 1)
		go func() {
			res, err := c.Send(context.Background(), browserbackend.Command{Method: "Page.enable"})
			done <- outcome{res, err}
		}()
		synctest.Wait()         // the selector is waiting for the roster to change
		time.Sleep(time.Second) // advances the bubble's fake clock; not synchronisation
		ext := h.add("ext-1", wire.InterfaceChromeExtension, "alice", t0)
		answer(t, p, ext, `{"tabId":7}`, false) // Vellum.createTab: the conversation's tab
		answer(t, p, ext, `{}`, false)          // Vellum.attach
		answer(t, p, ext, `{}`, false)          // Page.enable
		out := <-done
		require.NoError(t, out.err)
		assert.Equal(t, time.Second, time.Since(start), "served as soon as the client connected")
		assert.Equal(t, browserbackend.KindExtension, c.Kind())
	})
}

func TestSelectorGrace_TargetExtensionThatNeverConnectsFailsAfterGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newFakeHub()
		h.add("mac", wire.InterfaceMacOS, "alice", t0) // a bridge does not count
		p := newTestProxy(h)
		sel := browserbackend.NewSelector(browserbackend.Options{
			Providers: []browserbackend.Provider{p.ExtensionProvider(ProviderOptions{}), p.HostBridgeProvider(ProviderOptions{})},
			Logger:    quietLogger(),
		})
		c := sel.Client(browserbackend.Invocation{ActorPrincipalID: "alice", Mode: browserbackend.Mode("extension"), TargetClientID: "ext-1"})
		defer c.Close()
		start := time.Now()
		_, err := c.Send(context.Background(), browserbackend.Command{Method: "Page.enable"})
		require.Error(t, err)
		assert.Equal(t, browserbackend.DefaultGrace, time.Since(start))
		assert.ErrorIs(t, err, &browserbackend.Error{Code: browserbackend.CodeTargetUnavailable})
		h.clients["mac"].empty(t)
	})
}
