//go:build linux

package faulttest

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// crashable are the backends whose conversations the soak found stuck after
// a renderer crash (every later tools.Navigate timed out in Page.enable):
// all four.
var crashable = []string{"extension", "host-bridge", "cdp-inspect", "local"}

// toolsCallMs is the deadline of every tool call here: a hang guard.
const toolsCallMs = int(longDeadline / 1e6)

// navigated returns Tools over r whose conversation conv shows /page.
func navigated(t *testing.T, ctx context.Context, r *rig, s *site, conv string) *tools.Tools {
	t.Helper()
	tl := tools.New(tools.Options{Selector: r.sel, ScreenshotDir: t.TempDir(), Logger: quietLogger()})
	res, err := tl.Navigate(ctx, r.inv(conv), tools.NavigateInput{URL: s.url("/page"), TimeoutMs: toolsCallMs})
	require.NoError(t, err, "navigate before the fault")
	require.Equal(t, pageTitle, res.Title)
	require.Equal(t, r.kind, res.Backend)
	return tl
}

// killRenderers SIGKILLs every page renderer of r's browser while no
// command is in flight (the soak's renderer fault).
func killRenderers(t *testing.T, r *rig) {
	t.Helper()
	require.NotZero(t, chromiumtest.Signal(chromiumtest.PageRenderers(r.profile()), unix.SIGKILL), "a page renderer runs")
}

// The renderer of an idle conversation's page killed: the same
// conversation's next tools.Navigate works (a crashed cdp-inspect or bridge
// tab is revived by a navigation, local opens a fresh page) and Extract
// reads the real page, on the backend that served it before.
func TestFaultRendererKilledThenSameConversationNavigatesAndExtracts(t *testing.T) {
	eachBackend(t, crashable, func(t *testing.T, r *rig, s *site) {
		ctx, cancel := context.WithTimeout(context.Background(), longDeadline)
		defer cancel()
		tl := navigated(t, ctx, r, s, "conv")
		killRenderers(t, r)

		nav, err := tl.Navigate(ctx, r.inv("conv"), tools.NavigateInput{URL: s.url("/page"), TimeoutMs: toolsCallMs})
		require.NoError(t, err, "the same conversation navigates after the crash")
		assert.Equal(t, pageTitle, nav.Title)
		assert.Equal(t, r.kind, nav.Backend, "the conversation stays on its backend")
		ext, err := tl.Read().Extract(ctx, r.inv("conv"), tools.ExtractInput{TimeoutMs: toolsCallMs})
		require.NoError(t, err)
		assert.Equal(t, s.url("/page"), ext.URL)
		assert.Contains(t, ext.Text, "fault matrix", "the page's own content")
	})
}

// After a renderer crash, a conversation's next call that is not a
// navigation gets a typed error — page_lost (the page went away; navigate
// again), or target_crashed when the call reached the page before the
// backend had noticed the crash — never a blank page read as the site's
// content (issue 10: an Extract read url about:blank, text ""). The
// navigation after it works.
func TestFaultLostPageIsAnErrorNotABlankPage(t *testing.T) {
	eachBackend(t, crashable, func(t *testing.T, r *rig, s *site) {
		ctx, cancel := context.WithTimeout(context.Background(), longDeadline)
		defer cancel()
		tl := navigated(t, ctx, r, s, "conv")
		killRenderers(t, r)

		ext, err := tl.Read().Extract(ctx, r.inv("conv"), tools.ExtractInput{TimeoutMs: toolsCallMs})
		require.Error(t, err, "an extract after the crash read url=%q text=%q", ext.URL, ext.Text)
		var te *tools.Error
		require.ErrorAs(t, err, &te, "a typed tool error")
		assert.True(t, errors.Is(err, bb.ErrPageLost) || errors.Is(err, bb.ErrTargetCrashed), "page_lost or target_crashed, got %v", err)
		assert.NotErrorIs(t, err, bb.ErrTimeout, "not at its deadline")
		assert.NoError(t, ctx.Err())
		t.Logf("extract after the crash: %v", err)

		_, err = tl.Navigate(ctx, r.inv("conv"), tools.NavigateInput{URL: s.url("/page"), TimeoutMs: toolsCallMs})
		require.NoError(t, err)
		ext, err = tl.Read().Extract(ctx, r.inv("conv"), tools.ExtractInput{TimeoutMs: toolsCallMs})
		require.NoError(t, err)
		assert.Contains(t, ext.Text, "fault matrix")
	})
}
