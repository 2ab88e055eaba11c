package tools_test

import (
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

// Conversations run tool calls in parallel on the local backend, each on its
// own page; the calls neither race (-race) nor see each other's pages.
func TestConcurrentConversationsOnLocalKeepTheirOwnPages(t *testing.T) {
	s := startSite(t)
	tl, lb := localTools(t)
	const n = 3
	var wg sync.WaitGroup
	errs := make([]error, n)
	texts := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inv := browserbackend.Invocation{ConversationID: "conv-" + strconv.Itoa(i)}
			ctx := stepCtx(t)
			path := "/item/" + strconv.Itoa(100+i)
			if _, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: s.url(path)}); err != nil {
				errs[i] = err
				return
			}
			if _, err := tl.Snapshot(ctx, inv, tools.SnapshotInput{}); err != nil {
				errs[i] = err
				return
			}
			ex, err := tl.Extract(ctx, inv, tools.ExtractInput{})
			errs[i], texts[i] = err, ex.Text
		}()
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "conversation %d", i)
		assert.Equal(t, "/item/"+strconv.Itoa(100+i), texts[i], "conversation %d sees its own page", i)
	}
	assert.Len(t, lb.Conversations(), n, "one page per conversation")

	// Close releases the conversation's page through Options.CloseConversation.
	res, err := tl.Close(stepCtx(t), browserbackend.Invocation{ConversationID: "conv-0"}, tools.ReleaseInput{})
	require.NoError(t, err)
	assert.Equal(t, browserbackend.KindLocal, res.Forgot)
	assert.NotContains(t, lb.Conversations(), "conv-0")
}
