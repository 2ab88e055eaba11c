package tools_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// dialogSite serves /?b=<body> as a page of body with an output paragraph
// #out (an extension cannot navigate a tab to a data: URL).
func dialogSite(t *testing.T) func(body string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><title>dialogs</title><p id=out>none</p>`+r.URL.Query().Get("b"))
	}))
	t.Cleanup(srv.Close)
	return func(body string) string { return srv.URL + "/?b=" + url.QueryEscape(body) }
}

// dialogBackends are the backends that watch their tab for dialogs
// between calls (browserbackend.CapDialogs).
func dialogBackends(t *testing.T) map[string]func(t *testing.T) (*tools.Tools, browserbackend.Invocation) {
	return map[string]func(t *testing.T) (*tools.Tools, browserbackend.Invocation){
		"local": func(t *testing.T) (*tools.Tools, browserbackend.Invocation) {
			tl, _ := localTools(t)
			return tl, browserbackend.Invocation{ConversationID: "conv-dialog", InterfaceID: "cli"}
		},
		"cdp-inspect": func(t *testing.T) (*tools.Tools, browserbackend.Invocation) {
			tl, _ := cdpInspectTools(t)
			return tl, browserbackend.Invocation{ConversationID: "conv-dialog", InterfaceID: "cli"}
		},
		"extension": func(t *testing.T) (*tools.Tools, browserbackend.Invocation) {
			h := startRuntime(t)
			startExtension(t, h)
			return h.tools(t), h.invocation("conv-dialog")
		},
		"host-bridge": func(t *testing.T) (*tools.Tools, browserbackend.Invocation) {
			h := startRuntime(t)
			runBridgeOn(t, h, chromiumtest.Start(t), true) // a tab per conversation
			return h.tools(t), h.invocation("conv-dialog")
		},
	}
}

// TestPageToolsOnEveryBackend runs the page-event and page-tool cases on
// each backend, one browser (and hub) per backend, each case in a
// conversation of its own.
func TestPageToolsOnEveryBackend(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, backend string, tl *tools.Tools, inv browserbackend.Invocation)
	}{
		{"a dialog during load is reported and answered", dialogDuringLoad},
		{"a click that opens a confirm returns with it", clickOpensConfirm},
		{"one conversation's dialog does not stall another", dialogDoesNotStallAnother},
		{"an action waits for the navigation it started", actionWaitsForNavigation},
		{"files are uploaded from the upload directory", filesAreUploaded},
		{"back, forward and reload wait for the page", historyAndReload},
		{"evaluate returns the function's value", evaluateInPage},
		{"console messages of the current document", consoleMessages},
		{"network requests of the current document", networkRequests},
		{"fill form and drag", fillFormAndDrag},
		{"pdf and resize", pdfAndResize},
		{"the conversation's tabs", tabsOfAConversation},
		{"a download is reported to the action that started it", downloadsAreReported},
		{"the screenshot file is the raw answer decoded", screenshotFileIsTheRawAnswer},
		{"the tool scenario passes", scenarioPasses},
	}
	for name, start := range dialogBackends(t) {
		t.Run(name, func(t *testing.T) {
			tl, inv := start(t)
			for i, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					cinv := inv
					cinv.ConversationID = fmt.Sprintf("%s-%d", inv.ConversationID, i)
					c.run(t, name, tl, cinv)
				})
			}
		})
	}
}

func outText(t *testing.T, ctx context.Context, tl *tools.Tools, inv browserbackend.Invocation) string {
	t.Helper()
	ex, err := tl.Read().Extract(ctx, inv, tools.ExtractInput{Target: tools.Target{Selector: "#out"}})
	require.NoError(t, err)
	return ex.Text
}

func dialogDuringLoad(t *testing.T, name string, tl *tools.Tools, inv browserbackend.Invocation) {
	dialogPage := dialogSite(t)
	ctx := stepCtx(t)
	_, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: dialogPage(`<script>alert("hi")</script>`)})
	var te *tools.Error
	require.ErrorAs(t, err, &te, "a navigate whose page opens an alert while loading fails")
	assert.Equal(t, tools.CodeDialogOpen, te.Code)
	require.NotNil(t, te.Dialog)
	assert.Equal(t, "alert", te.Dialog.Type)
	assert.Equal(t, "hi", te.Dialog.Message)

	_, err = tl.Read().Snapshot(ctx, inv, tools.SnapshotInput{})
	require.ErrorAs(t, err, &te, "the next call is told, not wedged")
	assert.Equal(t, tools.CodeDialogOpen, te.Code)
	assert.Contains(t, err.Error(), `alert "hi"`, "the error names the dialog")
	if name != "host-bridge" { // the bridge's browser client knows it; the runtime sees only its error
		require.NotNil(t, te.Dialog)
		assert.Equal(t, "hi", te.Dialog.Message)
	}

	_, err = tl.Act().HandleDialog(ctx, inv, tools.HandleDialogInput{Accept: true})
	require.NoError(t, err)
	assert.Equal(t, "none", outText(t, ctx, tl, inv), "the page runs again once the dialog is answered")

	_, err = tl.Act().HandleDialog(ctx, inv, tools.HandleDialogInput{Accept: true})
	require.ErrorAs(t, err, &te)
	assert.Equal(t, tools.CodeNoDialog, te.Code, "no dialog is open any more")
}

func clickOpensConfirm(t *testing.T, name string, tl *tools.Tools, inv browserbackend.Invocation) {
	body := (`<button id=b onclick="out.textContent=String(confirm('sure?'))">go</button>` +
		`<button id=p onclick="out.textContent=prompt('name?','ada')">ask</button>`)
	dialogPage := dialogSite(t)
	ctx := stepCtx(t)
	_, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: dialogPage(body)})
	require.NoError(t, err)

	res, err := tl.Act().Click(ctx, inv, tools.ElementInput{Target: tools.Target{Selector: "#b"}})
	require.NoError(t, err, "the click happened; the dialog is its outcome")
	require.NotNil(t, res.Dialog)
	assert.Equal(t, "confirm", res.Dialog.Type)
	assert.Equal(t, "sure?", res.Dialog.Message)
	assert.Empty(t, res.Dialog.Handled, "left open for the agent")

	_, err = tl.Act().HandleDialog(ctx, inv, tools.HandleDialogInput{Accept: false})
	require.NoError(t, err)
	assert.Equal(t, "false", outText(t, ctx, tl, inv), "the page got the dismissal")

	// A host application's policy answers instead of the agent.
	actx := tools.WithDialogPolicy(ctx, tools.DialogAccept)
	res, err = tl.Act().Click(actx, inv, tools.ElementInput{Target: tools.Target{Selector: "#p"}})
	require.NoError(t, err)
	require.NotNil(t, res.Dialog)
	assert.Equal(t, "prompt", res.Dialog.Type)
	assert.Equal(t, tools.DialogAccepted, res.Dialog.Handled)
	assert.Equal(t, "ada", outText(t, ctx, tl, inv), "an accepted prompt returns its default")
}

func dialogDoesNotStallAnother(t *testing.T, name string, tl *tools.Tools, inv browserbackend.Invocation) {
	dialogPage := dialogSite(t)
	ctx := stepCtx(t)
	_, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: dialogPage(`<script>alert("blocking")</script>`)})
	require.ErrorIs(t, err, &tools.Error{Code: tools.CodeDialogOpen})

	other := inv
	other.ConversationID = "conv-other"
	_, err = tl.Navigate(ctx, other, tools.NavigateInput{URL: dialogPage(`<p>free</p>`)})
	require.NoError(t, err, "another conversation's tab in the same browser works")
	assert.Equal(t, "none", outText(t, ctx, tl, other))

	_, err = tl.Read().Extract(ctx, inv, tools.ExtractInput{})
	require.ErrorIs(t, err, &tools.Error{Code: tools.CodeDialogOpen}, "the first conversation's dialog is still its own")
}
