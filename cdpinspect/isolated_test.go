package cdpinspect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// evalStr evaluates expr in be's page and returns its string value.
func evalStr(t *testing.T, be *cdpinspect.Backend, expr string) string {
	t.Helper()
	raw := send(t, be, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	var res struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(raw, &res), string(raw))
	return res.Result.Value
}

// With WithIsolatedContexts two conversations do not see each other's
// cookies, neither sees the user's, closing one disposes of its context,
// and adopting the user's tab is refused.
func TestProviderIsolatedConversationsDoNotShareCookies(t *testing.T) {
	b := chromiumtest.Start(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>c</title>`)
	})
	site := chromiumtest.LoopbackServer(t, mux).URL
	p := enabledProvider(b.Port, cdpinspect.WithIsolatedContexts(true))
	t.Cleanup(func() { p.Close() })
	assert.True(t, p.Describe().Caps.Has(bb.CapIsolated))
	assert.False(t, enabledProvider(b.Port).Describe().Caps.Has(bb.CapIsolated))

	open := func(conv string) *cdpinspect.Backend {
		be := mustBuild(t, p, conv)
		send(t, be, "Page.navigate", map[string]string{"url": site})
		evalStr(t, be, `new Promise(r => document.readyState === "complete" ? r("") : addEventListener("load", () => r("")))`)
		return be
	}
	user := dialBrowser(t, b) // the user's own tab, in the default context
	send(t, user, "Page.navigate", map[string]string{"url": site})
	evalStr(t, user, `new Promise(r => document.readyState === "complete" ? r("") : addEventListener("load", () => r("")))`)
	evalStr(t, user, `document.cookie = "who=user; max-age=600"; ""`)

	a := open("conv-a")
	assert.Equal(t, "", evalStr(t, a, `document.cookie`), "the user's cookie")
	evalStr(t, a, `document.cookie = "who=a; max-age=600"; ""`)
	bconv := open("conv-b")
	assert.Equal(t, "", evalStr(t, bconv, `document.cookie`), "conv-a's cookie")
	assert.Equal(t, "who=user", evalStr(t, user, `document.cookie`))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := buildTab(t, ctx, p, "conv-c", bb.TabRequest{Want: bb.TabActive})
	require.ErrorIs(t, err, &bb.Error{Class: bb.ClassPolicy, Code: bb.CodeNotSupported})

	_, err = p.ReleaseConversation(ctx, "conv-a", true)
	require.NoError(t, err)
	a2 := open("conv-a")
	assert.Equal(t, "", evalStr(t, a2, `document.cookie`), "closing disposed of conv-a's cookies")
}
