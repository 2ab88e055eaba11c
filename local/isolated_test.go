//go:build linux

package local

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
)

// Under Options.Isolated two conversations on one browser do not see each
// other's cookies or storage, a conversation's tabs share theirs, and
// closing the conversation disposes of them.
func TestIsolatedConversationsDoNotShareCookies(t *testing.T) {
	b, _ := newTestBrowser(t, Options{Isolated: true})
	assert.True(t, NewProvider(b).Describe().Caps.Has(browserbackend.CapIsolated))
	assert.False(t, NewProvider(New(Options{})).Describe().Caps.Has(browserbackend.CapIsolated))
	srv := fixture(t)
	ctx := testCtx(t)
	open := func(conv string, req browserbackend.TabRequest) browserbackend.ScopedClient {
		c, err := b.build(ctx, conv, req)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		params, _ := json.Marshal(map[string]string{"url": srv.URL})
		_, err = c.Send(ctx, browserbackend.Command{Method: "Page.navigate", Params: params})
		require.NoError(t, err)
		evalValue(t, ctx, c, `new Promise(r => document.readyState === "complete" ? r(1) : addEventListener("load", () => r(1)))`)
		return c
	}
	a := open("a", browserbackend.TabRequest{})
	evalValue(t, ctx, a, `document.cookie = "who=a; max-age=600"; localStorage.setItem("who", "a"); 1`)
	bb := open("b", browserbackend.TabRequest{})
	assert.Equal(t, `""`, evalValue(t, ctx, bb, `document.cookie`))
	assert.Equal(t, `null`, evalValue(t, ctx, bb, `localStorage.getItem("who")`))
	a2 := open("a", browserbackend.TabRequest{Want: browserbackend.TabNew})
	assert.Equal(t, `"who=a"`, evalValue(t, ctx, a2, `document.cookie`), "a conversation's tabs share its context")

	require.NoError(t, b.CloseConversation("a"))
	a3 := open("a", browserbackend.TabRequest{})
	assert.Equal(t, `""`, evalValue(t, ctx, a3, `document.cookie`), "closing the conversation disposed of its cookies")
}
