package tools_test

import (
	"context"
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/internal/chromiumtest"
	"github.com/browserchain/browserchain/local"
)

// TestLocalEgressProxyRefusesARebindingName: the local Chromium runs behind
// the guard's egress proxy. rebind.test resolves to a public address when
// the tools check the URL and to loopback when the proxy connects: the
// proxy refuses, and the loopback server receives nothing; a dev-listed
// loopback name loads through the same proxy.
func TestLocalEgressProxyRefusesARebindingName(t *testing.T) {
	var hits, rebound atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		page(w, "Loopback", "<p>served</p>")
	})
	mux.HandleFunc("/rebound", func(w http.ResponseWriter, r *http.Request) {
		rebound.Add(1)
		page(w, "Rebound", "<p>should not be served</p>")
	})
	srv := chromiumtest.LoopbackServer(t, mux)
	p := port(t, srv.URL)
	lookup := func(public bool) guard.Resolver {
		return guard.ResolverFunc(func(_ context.Context, _, host string) ([]netip.Addr, error) {
			if host == "rebind.test" && public {
				return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
			}
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		})
	}
	g := guard.MustNew(guard.Policy{AllowedDomains: []string{"app.test", "rebind.test"}, DevLoopback: []string{"app.test:" + p},
		Resolver: lookup(true), Logger: quietLogger()})
	egress, err := guard.NewEgressProxy(g, guard.EgressOptions{Resolver: lookup(false)})
	require.NoError(t, err)
	t.Cleanup(func() { egress.Close() })

	b := local.New(local.Options{Logger: quietLogger(), Args: egress.ChromiumArgs()})
	t.Cleanup(func() { b.Close() })
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{local.NewProvider(b)}, Logger: quietLogger()})
	tl := tools.New(tools.Options{Selector: sel, ScreenshotDir: t.TempDir(), Logger: quietLogger(), Guard: g})
	inv := browserbackend.Invocation{ConversationID: "conv-egress", InterfaceID: "cli"}
	ctx := stepCtx(t)

	nav, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: "http://app.test:" + p + "/ok"})
	require.NoError(t, err, "a dev-listed loopback name loads through the proxy")
	assert.Equal(t, "Loopback", nav.Title)
	require.Equal(t, int64(1), hits.Load())

	_, _ = tl.Navigate(ctx, inv, tools.NavigateInput{URL: "http://rebind.test:" + p + "/rebound"})
	assert.Zero(t, rebound.Load(), "the rebound name never reached the loopback server")
}
