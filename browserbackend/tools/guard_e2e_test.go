package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/internal/chromiumtest"
	"github.com/browserchain/browserchain/local"
)

// guardSites are two loopback servers standing for allowed.test and
// blocked.test: the browser maps both names to 127.0.0.1
// (--host-resolver-rules) and the guard's resolver does the same.
type guardSites struct {
	allowed, blocked string // base URLs by name
	blockedHits      atomic.Int64
	policy           guard.Policy
}

func startGuardSites(t *testing.T) *guardSites {
	gs := &guardSites{}
	blocked := http.NewServeMux()
	blocked.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		gs.blockedHits.Add(1)
		page(w, "Blocked", "<p>you should not be here</p>")
	})
	bs := chromiumtest.LoopbackServer(t, blocked)
	gs.blocked = "http://blocked.test:" + port(t, bs.URL)

	allowed := http.NewServeMux()
	allowed.HandleFunc("/r", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, gs.blocked+"/landing", http.StatusFound)
	})
	allowed.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Allowed", fmt.Sprintf(`<a id="link" href="%[1]s/link">a link</a>
<button id="loc" onclick="location = '%[1]s/script'">by script</button>
<button id="pop" onclick="window.open('%[1]s/popup')">a popup</button>
<form method="post" action="%[1]s/post"><input name="q" value="x"><button id="post">Go</button></form>
<a id="ok" href="/page?again">same site</a>`, gs.blocked))
	})
	as := chromiumtest.LoopbackServer(t, allowed)
	ap := port(t, as.URL)
	gs.allowed = "http://allowed.test:" + ap
	gs.policy = guard.Policy{
		AllowedDomains: []string{"allowed.test"},
		DevLoopback:    []string{"allowed.test:" + ap},
		AllowWrites:    true, // the form post is a write; this test is about where pages go
		Resolver: guard.ResolverFunc(func(_ context.Context, _, host string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}),
		Logger: quietLogger(),
	}
	return gs
}

func port(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u.Port()
}

const hostRules = "--host-resolver-rules=MAP allowed.test 127.0.0.1, MAP blocked.test 127.0.0.1"

// pageURL reads the conversation page's URL through a plain client.
func pageURL(t *testing.T, sel *browserbackend.Selector, inv browserbackend.Invocation) string {
	c := sel.Client(inv)
	defer c.Close()
	t2 := true
	res, err := cdp.Call(stepCtx(t), c, runtime.Evaluate, runtime.EvaluateParams{Expression: "location.href", ReturnByValue: &t2})
	require.NoError(t, err)
	var u string
	require.NoError(t, json.Unmarshal(res.Result.Value, &u))
	return u
}

func assertForbidden(t *testing.T, err error, wantURL string) {
	t.Helper()
	require.ErrorIs(t, err, tools.ErrForbidden)
	require.ErrorIs(t, err, guard.ErrForbidden)
	var ge *guard.Error
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, wantURL, ge.URL, "the refusal names the URL")
	assert.Equal(t, guard.RuleAllowedDomains, ge.Rule, "and the rule")
}

// guardNavigationScenario is the GRD-2 scenario of issue 13 on one backend.
func guardNavigationScenario(t *testing.T, ctx context.Context, tl *tools.Tools, sel *browserbackend.Selector, inv browserbackend.Invocation, gs *guardSites) {
	open := func() {
		_, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: gs.allowed + "/page"})
		require.NoError(t, err, "an allowed page loads")
	}
	t.Run("direct", func(t *testing.T) {
		_, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: gs.blocked + "/direct"})
		assertForbidden(t, err, gs.blocked+"/direct")
	})
	t.Run("redirect", func(t *testing.T) {
		_, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: gs.allowed + "/r"})
		assertForbidden(t, err, gs.blocked+"/landing")
		assert.Equal(t, "about:blank", pageURL(t, sel, inv), "parked")
	})
	for _, c := range []struct{ name, id, path string }{
		{"link click", "#link", "/link"}, {"location from script", "#loc", "/script"}, {"form post", "#post", "/post"},
	} {
		t.Run(c.name, func(t *testing.T) {
			open()
			_, err := tl.Click(ctx, inv, tools.ElementInput{Target: tools.Target{Selector: c.id}})
			assertForbidden(t, err, gs.blocked+c.path)
			assert.Equal(t, "about:blank", pageURL(t, sel, inv), "parked")
		})
	}
	t.Run("allowed link", func(t *testing.T) {
		open()
		_, err := tl.Click(ctx, inv, tools.ElementInput{Target: tools.Target{Selector: "#ok"}})
		require.NoError(t, err)
		assert.Equal(t, gs.allowed+"/page?again", pageURL(t, sel, inv))
	})
	assert.Zero(t, gs.blockedHits.Load(), "the blocked server received no request")
	t.Run("window.open", func(t *testing.T) {
		open()
		_, err := tl.Click(ctx, inv, tools.ElementInput{Target: tools.Target{Selector: "#pop"}})
		assertForbidden(t, err, gs.blocked+"/popup")
		t.Logf("blocked server requests after window.open: %d", gs.blockedHits.Load())
	})
}

func TestGuardBlocksEveryWayOffTheAllowList(t *testing.T) {
	t.Run("local", func(t *testing.T) {
		gs := startGuardSites(t)
		b := local.New(local.Options{Logger: quietLogger(), Args: []string{hostRules}})
		t.Cleanup(func() { b.Close() })
		sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{local.NewProvider(b)}, Logger: quietLogger()})
		tl := tools.New(tools.Options{Selector: sel, ScreenshotDir: t.TempDir(), Logger: quietLogger(), Guard: guard.MustNew(gs.policy)})
		guardNavigationScenario(t, stepCtx(t), tl, sel, browserbackend.Invocation{ConversationID: "conv-guard-local", InterfaceID: "cli"}, gs)
	})
	t.Run("cdp-inspect", func(t *testing.T) {
		gs := startGuardSites(t)
		b := chromiumtest.Start(t, chromiumtest.WithArgs(hostRules))
		cfg := browserbackend.DefaultConfig()
		cfg.CDPInspect.Enabled = true
		cfg.CDPInspect.Host = "127.0.0.1"
		cfg.CDPInspect.Port = b.Port
		cfg.CDPInspect.ProbeTimeoutMs = 5000
		prov := cdpinspect.NewProvider(cfg, cdpinspect.WithWebSocketURL(b.BrowserWSURL), cdpinspect.WithUserDataDirs())
		sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{prov}, Logger: quietLogger()})
		// Per invocation: the policy comes with the ctx, not the Options.
		tl := tools.New(tools.Options{Selector: sel, ScreenshotDir: t.TempDir(), Logger: quietLogger()})
		ctx := guard.NewContext(stepCtx(t), guard.MustNew(gs.policy))
		guardNavigationScenario(t, ctx, tl, sel, browserbackend.Invocation{ConversationID: "conv-guard-cdp", InterfaceID: "cli"}, gs)
	})
}
