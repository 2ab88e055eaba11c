package tools_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// heldSite serves /held, a page whose image is answered only once release
// is closed, and /plain, a page that loads at once.
type heldSite struct {
	url       string
	requested chan struct{} // closed when the held image is first requested
	release   chan struct{}
}

func startHeldSite(t *testing.T) *heldSite {
	t.Helper()
	h := &heldSite{requested: make(chan struct{}), release: make(chan struct{})}
	var once atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/held", func(w http.ResponseWriter, r *http.Request) {
		page(w, "held page", `<p>waiting for an image</p><img src="/img" alt="held">`)
	})
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) {
		page(w, "plain page", `<p>nothing to wait for</p>`)
	})
	mux.HandleFunc("/img", func(w http.ResponseWriter, r *http.Request) {
		if once.CompareAndSwap(false, true) {
			close(h.requested)
		}
		select {
		case <-h.release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "image/gif")
		fmt.Fprint(w, "GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")
	})
	srv := chromiumtest.LoopbackServer(t, mux)
	h.url = srv.URL
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
	})
	return h
}

// TestTwoConversationsOnOneClient_ANavigateDoesNotEndOnBsLoad (WIRE-4): two
// conversations share one extension client, each in its own tab. A's
// navigate to a page whose image the server holds back must not end when
// B's page fires load, on a client that names the tab of its events (the
// reference extension) and on one that names none (the Vellum-shaped
// client); each conversation's commands run in its own tab.
func TestTwoConversationsOnOneClient_ANavigateDoesNotEndOnBsLoad(t *testing.T) {
	for _, client := range []string{"reference extension", "vellum-shaped client"} {
		t.Run(client, func(t *testing.T) {
			site := startHeldSite(t)
			h := startRuntime(t)
			if client == "reference extension" {
				startExtension(t, h)
			} else {
				startVellumClient(t, h)
			}
			tl := h.tools(t)
			invA, invB := h.invocation("conv-A"), h.invocation("conv-B")
			ctx := stepCtx(t)

			// B has its tab first, so A's is not simply the newest one.
			_, err := tl.Navigate(ctx, invB, tools.NavigateInput{URL: site.url + "/plain"})
			require.NoError(t, err)

			var released atomic.Bool
			type outcome struct {
				res           tools.NavigateResult
				err           error
				beforeRelease bool
			}
			aDone := make(chan outcome, 1)
			go func() {
				res, err := tl.Navigate(ctx, invA, tools.NavigateInput{URL: site.url + "/held"})
				aDone <- outcome{res, err, !released.Load()}
			}()
			select {
			case <-site.requested: // A's page is loading, its load event pending
			case o := <-aDone:
				t.Fatalf("A's navigate ended before its image was even requested: %+v %v", o.res, o.err)
			}

			// B loads a page (its load event reaches the client's subscribers)
			// and reads it, while A's image is still held back.
			nb, err := tl.Navigate(ctx, invB, tools.NavigateInput{URL: site.url + "/plain?again"})
			require.NoError(t, err)
			assert.Equal(t, "plain page", nb.Title, "B's navigate ran in B's tab")
			ex, err := tl.Extract(ctx, invB, tools.ExtractInput{})
			require.NoError(t, err)
			assert.Contains(t, ex.Text, "nothing to wait for")

			released.Store(true)
			close(site.release)
			a := <-aDone
			require.NoError(t, a.err)
			assert.False(t, a.beforeRelease, "A's navigate ended on another tab's load, before its own page loaded")
			assert.Equal(t, "held page", a.res.Title)
			tabA, _ := tl.PinnedTab(invA)
			tabB, _ := tl.PinnedTab(invB)
			assert.NotEqual(t, tabA, tabB, "each conversation has its own tab")
			exA, err := tl.Extract(ctx, invA, tools.ExtractInput{})
			require.NoError(t, err)
			assert.Contains(t, exA.Text, "waiting for an image", "A's later call reads A's tab")
		})
	}
}
