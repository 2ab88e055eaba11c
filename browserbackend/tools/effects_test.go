package tools_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

// effectsSite serves a form whose submit navigates to /thanks, a link that
// opens a new window and a button that changes nothing.
func effectsSite(t *testing.T) string {
	mux := http.NewServeMux()
	mux.HandleFunc("/form", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><title>form</title>
<form action="/thanks" method="post"><input name="q" id="q" value="x"><button id="send">Send</button></form>
<a id="pop" href="/thanks" target="_blank">pop</a>
<button id="noop" onclick="document.body.dataset.clicked=1">noop</button>
<select id="go" onchange="location.href='/thanks?via=select'"><option>a</option><option>b</option></select>`)
	})
	mux.HandleFunc("/thanks", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><title>thanks</title><p id=out>Thanks!</p>`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func actionWaitsForNavigation(t *testing.T, name string, tl *tools.Tools, inv browserbackend.Invocation) {
	base := effectsSite(t)
	ctx := stepCtx(t)
	for i := 0; i < 5; i++ {
		_, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: base + "/form"})
		require.NoError(t, err)
		res, err := tl.Act().Click(ctx, inv, tools.ElementInput{Target: tools.Target{Selector: "#send"}})
		require.NoError(t, err)
		require.NotNil(t, res.Navigated, "the submit's navigation is reported")
		assert.True(t, strings.HasSuffix(res.Navigated.URL, "/thanks"), res.Navigated.URL)
		assert.Equal(t, "thanks", res.Navigated.Title)
		ex, err := tl.Read().Extract(ctx, inv, tools.ExtractInput{})
		require.NoError(t, err)
		assert.Contains(t, ex.Text, "Thanks!", "the next call reads the new page, never the old form")
	}

	_, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: base + "/form"})
	require.NoError(t, err)
	res, err := tl.Act().Click(ctx, inv, tools.ElementInput{Target: tools.Target{Selector: "#noop"}})
	require.NoError(t, err)
	assert.Nil(t, res.Navigated, "a click that starts nothing returns at once")
	assert.Empty(t, res.Opened)

	sel, err := tl.Act().SelectOption(ctx, inv, tools.SelectOptionInput{Target: tools.Target{Selector: "#go"}, Values: []string{"b"}})
	require.NoError(t, err)
	require.NotNil(t, sel.Navigated, "a selection whose change handler navigates")
	assert.Contains(t, sel.Navigated.URL, "via=select")

	_, err = tl.Navigate(ctx, inv, tools.NavigateInput{URL: base + "/form"})
	require.NoError(t, err)
	typed, err := tl.Act().Type(ctx, inv, tools.TypeInput{Target: tools.Target{Selector: "#q"}, Text: "y", Submit: true})
	require.NoError(t, err)
	require.NotNil(t, typed.Navigated, "Enter submits the form")
	assert.Equal(t, "thanks", typed.Navigated.Title)

	_, err = tl.Navigate(ctx, inv, tools.NavigateInput{URL: base + "/form"})
	require.NoError(t, err)
	res, err = tl.Act().Click(ctx, inv, tools.ElementInput{Target: tools.Target{Selector: "#pop"}})
	require.NoError(t, err)
	assert.Nil(t, res.Navigated, "the page itself stays")
	if assert.Len(t, res.Opened, 1, "the new window is reported") {
		assert.True(t, strings.HasSuffix(res.Opened[0], "/thanks"), res.Opened[0])
	}
}
