package tools_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// Navigations whose response never becomes a document (a download, a 204)
// or that are not http(s) end with a result or a typed error, never by
// waiting out the deadline.
func TestNavigateEdgeResponsesEndWithoutWaitingForTheDeadline(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/nocontent", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/download", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="x.bin"`)
		_, _ = w.Write([]byte("binary"))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { page(w, "home", "<p>home</p>") })
	srv := chromiumtest.LoopbackServer(t, mux)
	tl, _ := cdpInspectTools(t)
	inv := browserbackend.Invocation{ConversationID: "conv-edge", InterfaceID: "cli"}

	for _, tc := range []struct{ name, url string }{
		{"404 page", srv.URL + "/missing"},
		{"about:blank", "about:blank"},
		{"about:blank again", "about:blank"},
		{"data URL", "data:text/html,<title>d</title><p>data</p>"},
		{"same-document fragment", "data:text/html,<title>d</title><p>data</p>#frag"},
		{"204 no content", srv.URL + "/nocontent"},
		{"download", srv.URL + "/download"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: srv.URL + "/"})
			require.NoError(t, err)
			_, err = tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: tc.url})
			if err != nil {
				assert.NotErrorIs(t, err, tools.ErrTimeout, "%v", err)
			}
			t.Logf("%s: err=%v", tc.name, err)
		})
	}
	t.Run("chrome:// is refused before any CDP call", func(t *testing.T) {
		_, err := tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: "chrome://settings"})
		assert.ErrorIs(t, err, tools.ErrInvalidInput)
	})
	t.Run("links limits", func(t *testing.T) {
		for _, l := range []int{-1, 201} {
			_, err := tl.Links(stepCtx(t), inv, tools.LinksInput{Limit: l})
			assert.ErrorIs(t, err, tools.ErrInvalidInput, "limit %d", l)
		}
		_, err := tl.Links(stepCtx(t), inv, tools.LinksInput{Limit: 0})
		assert.NoError(t, err)
	})
}
