package tools_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/cdpinspect"
)

// TestOperationsOnOneBrowser runs the operations' edge cases on cdp-inspect
// (the quickest real backend to start), one browser for all subtests.
func TestOperationsOnOneBrowser(t *testing.T) {
	s := startSite(t)
	tl, browser := cdpInspectTools(t)
	inv := browserbackend.Invocation{ConversationID: "conv-ops", InterfaceID: "cli"}
	nav := func(t *testing.T, path string) {
		t.Helper()
		_, err := tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: s.url(path)})
		require.NoError(t, err)
	}

	t.Run("a Page runs on a plain ScopedClient without a selector", func(t *testing.T) {
		cfg := cdpinspect.DefaultConfig()
		cfg.Host, cfg.Port, cfg.ProbeTimeoutMs = "127.0.0.1", browser.Port, 5000
		be, err := cdpinspect.Dial(stepCtx(t), cfg, cdpinspect.WithWebSocketURL(browser.BrowserWSURL), cdpinspect.WithUserDataDirs())
		require.NoError(t, err)
		defer be.Close()
		p := tools.NewPage(tools.SessionOf(be, ""), tools.PageOptions{ScreenshotDir: t.TempDir()})
		res, err := p.Navigate(stepCtx(t), tools.NavigateInput{URL: s.url("/item/3")})
		require.NoError(t, err, "the load event arrives through the backend's EventSource")
		assert.Equal(t, "/item/3", res.Title)
		l, err := p.Links(stepCtx(t), tools.LinksInput{})
		require.NoError(t, err)
		assert.Empty(t, l.Links)
		assert.Empty(t, l.Backend, "no selector, no call record")
	})

	t.Run("navigate that never loads times out with a typed error", func(t *testing.T) {
		_, err := tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: s.url("/slow"), TimeoutMs: 300})
		require.Error(t, err)
		assert.ErrorIs(t, err, tools.ErrTimeout)
	})

	t.Run("navigate to a closed port fails with the browser's reason", func(t *testing.T) {
		_, err := tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: "http://127.0.0.1:" + itoa(closedPort(t)) + "/"})
		assert.ErrorIs(t, err, tools.ErrNavigationFailed)
		assert.Contains(t, err.Error(), "ERR_CONNECTION_REFUSED")
	})

	t.Run("large page: snapshot and extract are bounded, screenshot stays a file", func(t *testing.T) {
		nav(t, "/large")
		snap, err := tl.Read().Snapshot(stepCtx(t), inv, tools.SnapshotInput{MaxNodes: 100})
		require.NoError(t, err)
		assert.Len(t, snap.Nodes, 100)
		assert.True(t, snap.Truncated)
		ex, err := tl.Read().Extract(stepCtx(t), inv, tools.ExtractInput{MaxChars: 1000})
		require.NoError(t, err)
		assert.Len(t, ex.Text, 1000)
		assert.True(t, ex.Truncated)
		assert.Greater(t, ex.Length, 100_000)
		shot, err := tl.Read().Screenshot(stepCtx(t), inv, tools.ScreenshotInput{FullPage: true})
		require.NoError(t, err)
		assert.Equal(t, tools.MaxFullPageHeight, shot.Height, "a very long page is cut")
		assert.True(t, shot.Clipped)
		raw, err := json.Marshal(shot)
		require.NoError(t, err)
		assert.Less(t, len(raw), 2048, "the image never travels in the result")
		assert.NotContains(t, string(raw), "iVBOR", "no base64 PNG inline")
	})

	t.Run("element errors are typed", func(t *testing.T) {
		nav(t, "/widgets")
		h, err := tl.Act().Hover(stepCtx(t), inv, tools.ElementInput{Target: tools.Target{Selector: "#doomed"}})
		require.NoError(t, err)
		require.NotEmpty(t, h.Ref)
		_, err = tl.Act().Click(stepCtx(t), inv, tools.ElementInput{Target: tools.Target{Selector: "#remove"}})
		require.NoError(t, err)
		_, err = tl.Act().Click(stepCtx(t), inv, tools.ElementInput{Target: tools.Target{Ref: h.Ref}})
		assert.ErrorIs(t, err, tools.ErrNotFound, "a ref whose node was removed")
		_, err = tl.Act().Click(stepCtx(t), inv, tools.ElementInput{Target: tools.Target{Selector: "#nope"}})
		assert.ErrorIs(t, err, tools.ErrNotFound)
		var te *tools.Error
		require.ErrorAs(t, err, &te)
		assert.Equal(t, browserbackend.KindCDPInspect, te.Backend, "the error names the backend that served the call")
		assert.Equal(t, "click", te.Op)
		_, err = tl.Act().Click(stepCtx(t), inv, tools.ElementInput{Target: tools.Target{Ref: "e99999999"}})
		assert.ErrorIs(t, err, tools.ErrNotFound)
		_, err = tl.Act().Click(stepCtx(t), inv, tools.ElementInput{Target: tools.Target{Selector: "##"}})
		assert.ErrorIs(t, err, tools.ErrInvalidInput, "a malformed selector")
	})

	t.Run("hover, press key, scroll", func(t *testing.T) {
		nav(t, "/widgets")
		_, err := tl.Act().Hover(stepCtx(t), inv, tools.ElementInput{Target: tools.Target{Selector: "#hover"}})
		require.NoError(t, err)
		ex, err := tl.Read().Extract(stepCtx(t), inv, tools.ExtractInput{Target: tools.Target{Selector: "#hover"}})
		require.NoError(t, err)
		assert.Equal(t, "hovered", ex.Text)

		for _, k := range []string{"a", "Shift+B", "c", "Backspace"} {
			_, err = tl.Act().PressKey(stepCtx(t), inv, tools.PressKeyInput{Key: k, Target: tools.Target{Selector: "#k"}})
			require.NoError(t, err, k)
		}
		_, err = tl.Act().Type(stepCtx(t), inv, tools.TypeInput{Target: tools.Target{Selector: "#k"}, Text: "yz", Slowly: true})
		require.NoError(t, err)
		_, err = tl.Read().WaitFor(stepCtx(t), inv, tools.WaitForInput{Selector: `#k[data-x], input#k`})
		require.NoError(t, err)
		var val struct{ Value string }
		snap, err := tl.Read().Snapshot(stepCtx(t), inv, tools.SnapshotInput{})
		require.NoError(t, err)
		for _, n := range snap.Nodes {
			if n.Role == "textbox" {
				val.Value = n.Value
			}
		}
		assert.Equal(t, "aByz", val.Value, "keys typed into the focused field")

		_, err = tl.Act().Scroll(stepCtx(t), inv, tools.ScrollInput{DeltaY: 800})
		require.NoError(t, err)
		_, err = tl.Read().WaitFor(stepCtx(t), inv, tools.WaitForInput{Selector: `#hover[data-scrolled="1"]`})
		require.NoError(t, err, "the page saw the wheel scroll")
	})

	t.Run("wait for a selector that appears later, and for a navigation", func(t *testing.T) {
		nav(t, "/widgets")
		_, err := tl.Act().Click(stepCtx(t), inv, tools.ElementInput{Target: tools.Target{Selector: "#later"}})
		require.NoError(t, err)
		ex, err := tl.Read().Extract(stepCtx(t), inv, tools.ExtractInput{})
		require.NoError(t, err)
		require.NotContains(t, ex.Text, "arrived late", "held back by the gate")
		type res struct {
			r   tools.WaitForResult
			err error
		}
		got := make(chan res, 1)
		go func() {
			r, err := tl.Read().WaitFor(stepCtx(t), inv, tools.WaitForInput{Selector: "#late"})
			got <- res{r, err}
		}()
		close(s.gate)
		w := <-got
		require.NoError(t, w.err)
		assert.Equal(t, "selector", w.r.Matched)

		_, err = tl.Read().WaitFor(stepCtx(t), inv, tools.WaitForInput{Text: "never on this page", TimeoutMs: 200})
		assert.ErrorIs(t, err, tools.ErrTimeout)

		_, err = tl.Act().Click(stepCtx(t), inv, tools.ElementInput{Target: tools.Target{Selector: "#go"}})
		require.NoError(t, err)
		w2, err := tl.Read().WaitFor(stepCtx(t), inv, tools.WaitForInput{URLContains: "/item/7"})
		require.NoError(t, err)
		assert.Equal(t, s.url("/item/7"), w2.URL)
	})
}

// A wait for a URL whose navigation committed before the wait began (its
// frameNavigated already gone) but has not loaded yet ends on its load event
// (the flake of stop 10: the wait then waited out its deadline).
func TestWaitForURLOfACommittedPageEndsOnItsLoad(t *testing.T) {
	site := startHeldSite(t)
	tl, _ := cdpInspectTools(t)
	inv := browserbackend.Invocation{ConversationID: "conv-wait-committed", InterfaceID: "cli"}
	_, err := tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: site.url + "/held", WaitUntil: tools.WaitDOMContentLoaded})
	require.NoError(t, err)
	<-site.requested // committed, its image held back: not loaded
	type res struct {
		r   tools.WaitForResult
		err error
	}
	got := make(chan res, 1)
	go func() {
		r, err := tl.Read().WaitFor(stepCtx(t), inv, tools.WaitForInput{URLContains: "/held"})
		got <- res{r, err}
	}()
	ex, err := tl.Read().Extract(stepCtx(t), inv, tools.ExtractInput{})
	require.NoError(t, err)
	require.Contains(t, ex.Text, "waiting for an image", "the page is the held one")
	close(site.release)
	w := <-got
	require.NoError(t, w.err)
	assert.Equal(t, site.url+"/held", w.r.URL)
}

func itoa(n int) string { return strconv.Itoa(n) }
