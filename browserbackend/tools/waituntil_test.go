package tools_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

// A page whose one <img> the server holds back (issue 10 item 7): the load
// event never fires. With the default wait_until (load) the call ends at its
// deadline with the committed document — URL, title, still loading — not an
// empty failure; domcontentloaded and none return without waiting for the
// image; Extract reads the page either way.
func TestNavigateWithAHeldBackImageReportsTheDocumentStillLoading(t *testing.T) {
	s := startSite(t)
	tl, _ := localTools(t)
	inv := browserbackend.Invocation{ConversationID: "held-image"}
	url := s.url("/heldimg")

	// Warm: the browser launch must not eat the short deadline below.
	_, err := tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: s.url("/item/1")})
	require.NoError(t, err)

	t.Run("load (default) ends at the deadline with the document", func(t *testing.T) {
		// The deadline only has to cover the document's commit (a small
		// page on loopback); the image never arrives.
		res, err := tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: url, TimeoutMs: 5000})
		require.NoError(t, err)
		assert.True(t, res.StillLoading)
		assert.Equal(t, "Held image", res.Title)
		assert.Equal(t, url, res.URL)
		assert.Equal(t, "interactive", res.ReadyState)
		ex, err := tl.Read().Extract(stepCtx(t), inv, tools.ExtractInput{})
		require.NoError(t, err)
		assert.Contains(t, ex.Text, "text before the image")
	})

	t.Run("domcontentloaded returns once the document is parsed", func(t *testing.T) {
		// The deadline is the longest allowed: returning at all shows the
		// call did not wait for the image.
		res, err := tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: url, WaitUntil: tools.WaitDOMContentLoaded,
			TimeoutMs: int(tools.MaxTimeout.Milliseconds())})
		require.NoError(t, err)
		assert.True(t, res.StillLoading)
		assert.Equal(t, "Held image", res.Title)
	})

	t.Run("none returns at commit", func(t *testing.T) {
		res, err := tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: url, WaitUntil: tools.WaitNone,
			TimeoutMs: int(tools.MaxTimeout.Milliseconds())})
		require.NoError(t, err)
		assert.True(t, res.StillLoading)
		assert.Equal(t, url, res.URL)
	})

	t.Run("load on a page that loads is not still loading", func(t *testing.T) {
		res, err := tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: s.url("/item/1"), WaitUntil: tools.WaitLoad})
		require.NoError(t, err)
		assert.False(t, res.StillLoading)
		assert.Equal(t, "complete", res.ReadyState)
	})

	t.Run("an unknown wait_until is refused before any CDP call", func(t *testing.T) {
		_, err := tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: url, WaitUntil: "networkidle"})
		assert.ErrorIs(t, err, tools.ErrInvalidInput)
		assert.ErrorContains(t, err, "wait_until must be load, domcontentloaded or none")
	})
}
