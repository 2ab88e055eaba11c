package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/cdpinspect"
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
		})
	}
	t.Run("chrome:// is refused before any CDP call", func(t *testing.T) {
		_, err := tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: "chrome://settings"})
		assert.ErrorIs(t, err, tools.ErrInvalidInput)
	})
	t.Run("links limits", func(t *testing.T) {
		for _, l := range []int{-1, 201} {
			_, err := tl.Read().Links(stepCtx(t), inv, tools.LinksInput{Limit: l})
			assert.ErrorIs(t, err, tools.ErrInvalidInput, "limit %d", l)
		}
		_, err := tl.Read().Links(stepCtx(t), inv, tools.LinksInput{Limit: 0})
		assert.NoError(t, err)
	})
}

// The tab closed by the user while wait_for waits for a navigation: the
// call ends with a typed error that says the tab went away, not at its
// deadline.
func TestWaitForNavigationEndsWhenTheTabIsClosed(t *testing.T) {
	b := chromiumtest.Start(t)
	cfg := cdpinspect.DefaultConfig()
	cfg.Enabled, cfg.Host, cfg.Port = true, "127.0.0.1", b.Port
	cfg.ProbeTimeoutMs = 5000
	prov := cdpinspect.NewProvider(cfg, cdpinspect.WithWebSocketURL(b.BrowserWSURL))
	stuck := make(chan struct{}, 1)
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{prov}, Logger: quietLogger(),
		Hooks: browserbackend.Hooks{Stick: func(browserbackend.Invocation, browserbackend.Kind) { stuck <- struct{}{} }}})
	tl := tools.New(tools.Options{Selector: sel, ScreenshotDir: t.TempDir(), Logger: quietLogger()})
	inv := browserbackend.Invocation{ConversationID: "conv-closed-tab", InterfaceID: "cli"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		_, err := tl.Read().WaitFor(ctx, inv, tools.WaitForInput{URLContains: "never-visited", TimeoutMs: int(tools.MaxTimeout / time.Millisecond)})
		got <- err
	}()
	<-stuck // the call's first command (Page.enable) has run on the tab
	closeAllPages(t, b)
	err := <-got
	require.Error(t, err)
	assert.NotErrorIs(t, err, tools.ErrTimeout, "%v", err)
	// The session error when the close hit a poll in flight; the closed
	// tab's own error when it came between two polls (cdpinspect checks
	// the tab when a command finds its session gone before it was sent).
	var be *browserbackend.Error
	require.ErrorAs(t, err, &be)
	if !errors.Is(err, browserbackend.ErrSessionNotFound) {
		assert.Equal(t, browserbackend.CodeTargetNotFound, be.Code, "%v", err)
		assert.Contains(t, err.Error(), "the conversation's tab was closed")
	}
}

// closeAllPages closes every page target of browser with
// Target.closeTarget on a connection of its own.
func closeAllPages(t *testing.T, b *chromiumtest.Browser) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, b.BrowserWSURL, nil)
	require.NoError(t, err)
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 24)
	call := func(id int, method string, params any) json.RawMessage {
		raw, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
		require.NoError(t, ws.Write(ctx, websocket.MessageText, raw))
		for {
			_, data, err := ws.Read(ctx)
			require.NoError(t, err)
			var f struct {
				ID     int             `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			if json.Unmarshal(data, &f) == nil && f.ID == id {
				return f.Result
			}
		}
	}
	var list struct {
		TargetInfos []struct{ TargetID, Type string } `json:"targetInfos"`
	}
	require.NoError(t, json.Unmarshal(call(1, "Target.getTargets", map[string]any{}), &list))
	for i, tg := range list.TargetInfos {
		if tg.Type == "page" {
			call(2+i, "Target.closeTarget", map[string]any{"targetId": tg.TargetID})
		}
	}
}
