package tools_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
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
	t.Cleanup(tl.Shutdown)
	inv := browserbackend.Invocation{ConversationID: "conv-egress", InterfaceID: "cli"}
	ctx := stepCtx(t)

	nav, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: "http://app.test:" + p + "/ok"})
	require.NoError(t, err, "a dev-listed loopback name loads through the proxy")
	assert.Equal(t, "Loopback", nav.Title)
	require.Equal(t, int64(1), hits.Load())

	_, _ = tl.Navigate(ctx, inv, tools.NavigateInput{URL: "http://rebind.test:" + p + "/rebound"})
	assert.Zero(t, rebound.Load(), "the rebound name never reached the loopback server")
}

// refusalSignal is a slog handler that reports the target of every refusal
// the egress proxy logs, dropping it when ch is full.
type refusalSignal struct{ ch chan string }

func (h refusalSignal) Enabled(context.Context, slog.Level) bool { return true }
func (h refusalSignal) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h refusalSignal) WithGroup(string) slog.Handler            { return h }
func (h refusalSignal) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "target" {
			select {
			case h.ch <- a.Value.String():
			default:
			}
		}
		return true
	})
	return nil
}

// egressSites serves app.test (dev-listed loopback) and counts what the
// rebind*.test names, public when the tools check them and loopback when
// the proxy connects, receive (nothing, if the proxy refuses them).
type egressSites struct {
	port    string
	g       *guard.Guard
	egress  *guard.EgressProxy
	refused chan string
	// gates release the /later pages' own navigations, by the gate
	// parameter.
	gates   map[string]chan struct{}
	rebound atomic.Int64
}

func startEgressSites(t *testing.T) *egressSites {
	es := &egressSites{refused: make(chan string, 64),
		gates: map[string]chan struct{}{"http": make(chan struct{}), "https": make(chan struct{})}}
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Loopback", "<p>served</p>")
	})
	mux.HandleFunc("/rebound", func(w http.ResponseWriter, r *http.Request) {
		es.rebound.Add(1)
		page(w, "Rebound", "<p>should not be served</p>")
	})
	mux.HandleFunc("/hop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	// /later?gate=G&to=U navigates itself to U once the test closes
	// gates[G], after the call that loaded it has returned.
	mux.HandleFunc("/later", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		page(w, "Later", fmt.Sprintf(`<p>later</p><script>fetch("/go?gate=%s").then(() => { location = %q; });</script>`,
			url.QueryEscape(q.Get("gate")), q.Get("to")))
	})
	mux.HandleFunc("/go", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-es.gates[r.URL.Query().Get("gate")]:
		case <-r.Context().Done():
		}
	})
	srv := chromiumtest.LoopbackServer(t, mux)
	es.port = port(t, srv.URL)
	lookup := func(public bool) guard.Resolver {
		return guard.ResolverFunc(func(_ context.Context, _, host string) ([]netip.Addr, error) {
			if strings.HasPrefix(host, "rebind") && public {
				return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
			}
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		})
	}
	es.g = guard.MustNew(guard.Policy{AllowedDomains: []string{"app.test", "*.test"}, DevLoopback: []string{"app.test:" + es.port},
		Resolver: lookup(true), Logger: quietLogger()})
	var err error
	es.egress, err = guard.NewEgressProxy(es.g, guard.EgressOptions{Resolver: lookup(false), Logger: slog.New(refusalSignal{es.refused})})
	require.NoError(t, err)
	t.Cleanup(func() { es.egress.Close() })
	return es
}

// assertEgressForbidden: err is the guard's forbidden refusal of wantURL,
// with the proxy's private-network rule.
func assertEgressForbidden(t *testing.T, err error, wantURL string) {
	t.Helper()
	require.ErrorIs(t, err, tools.ErrForbidden)
	var ge *guard.Error
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, wantURL, ge.URL, "the refusal names the URL")
	assert.True(t, strings.HasPrefix(ge.Rule, guard.RulePrivateNetwork), "and the proxy's rule: %q", ge.Rule)
}

// egressScenario: a page the egress proxy refuses — plain http (the
// proxy's 403 page), https (a refused tunnel), behind a redirect, or
// reached by the page itself between two calls — is a forbidden error
// naming the private-network rule, never a loaded page.
func egressScenario(t *testing.T, ctx context.Context, tl *tools.Tools, inv browserbackend.Invocation, es *egressSites) {
	p := es.port
	nav, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: "http://app.test:" + p + "/ok"})
	require.NoError(t, err, "a dev-listed loopback name loads through the proxy")
	assert.Equal(t, "Loopback", nav.Title)

	for _, u := range []string{
		"http://rebind-http.test:" + p + "/rebound",
		"https://rebind-https.test:" + p + "/rebound",
	} {
		_, err = tl.Navigate(ctx, inv, tools.NavigateInput{URL: u})
		assertEgressForbidden(t, err, u)
	}
	for _, to := range []string{
		"http://rebind-hop-http.test:" + p + "/rebound",
		"https://rebind-hop-https.test:" + p + "/rebound",
	} {
		_, err = tl.Navigate(ctx, inv, tools.NavigateInput{URL: "http://app.test:" + p + "/hop?to=" + url.QueryEscape(to)})
		assertEgressForbidden(t, err, to)
	}

	// The page's own navigation, refused between calls, fails the next
	// call; the page it left is never content.
	for _, gate := range []string{"http", "https"} {
		host := "rebind-later-" + gate + ".test:" + p
		to := gate + "://" + host + "/rebound"
		_, err = tl.Navigate(ctx, inv, tools.NavigateInput{URL: "http://app.test:" + p + "/later?gate=" + gate + "&to=" + url.QueryEscape(to)})
		require.NoError(t, err)
		for len(es.refused) > 0 {
			<-es.refused
		}
		close(es.gates[gate])
		for target := ""; target != host; {
			target = <-es.refused
		}
		_, err = tl.Read().WaitFor(ctx, inv, tools.WaitForInput{Navigation: true, URLContains: host})
		assertEgressForbidden(t, err, to)
		ex, err := tl.Read().Extract(ctx, inv, tools.ExtractInput{MaxChars: 1000})
		require.NoError(t, err)
		assert.NotContains(t, ex.Text, "guard: forbidden", "the proxy's refusal page is never content")
	}

	assert.Zero(t, es.rebound.Load(), "the rebound names never reached the loopback server")
}

func TestEgressProxyRefusalIsForbidden(t *testing.T) {
	t.Run("local", func(t *testing.T) {
		es := startEgressSites(t)
		b := local.New(local.Options{Logger: quietLogger(), Args: es.egress.ChromiumArgs()})
		t.Cleanup(func() { b.Close() })
		tl := toolsOver(t, local.NewProvider(b), tools.Options{Guard: es.g}) // kept Clients: Options.Guard
		egressScenario(t, stepCtx(t), tl, browserbackend.Invocation{ConversationID: "conv-egress-local", InterfaceID: "cli"}, es)
	})
	t.Run("cdp-inspect", func(t *testing.T) {
		es := startEgressSites(t)
		b := chromiumtest.Start(t, chromiumtest.WithArgs(es.egress.ChromiumArgs()...))
		tl := toolsOver(t, cdpInspectProvider(t, b), tools.Options{})
		ctx := guard.NewContext(stepCtx(t), es.g)
		egressScenario(t, ctx, tl, browserbackend.Invocation{ConversationID: "conv-egress-cdp", InterfaceID: "cli"}, es)
	})
}
