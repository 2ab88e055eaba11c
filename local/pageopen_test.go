//go:build linux

package local

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mxschmitt/playwright-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// closeSignalPage is a page whose Close is reported on closed.
type closeSignalPage struct {
	playwright.Page
	closed chan struct{}
}

func (p *closeSignalPage) Close(opts ...playwright.PageCloseOptions) error {
	close(p.closed)
	return p.Page.Close(opts...)
}

// A page opening that never finishes (Playwright's answer when the new
// page's renderer dies during its set-up) does not hold the conversation up
// to its deadline: another attempt runs beside it and wins, and the stuck
// attempt's page is closed once it arrives.
func TestAPageOpeningThatNeverFinishesIsHedged(t *testing.T) {
	b, _ := newTestBrowser(t, Options{})
	var stuck atomic.Bool
	release, late := make(chan struct{}), make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce) // before Close, which waits for every attempt
	b.setPageOpening(func(st *state) openedPage {
		if stuck.CompareAndSwap(true, false) {
			<-release
			r := openPageOnce(st)
			if r.err == nil {
				r.page = &closeSignalPage{Page: r.page, closed: late}
			}
			return r
		}
		return openPageOnce(st)
	}, time.Millisecond) // hedge the stuck attempt at once
	ctx := testCtx(t)
	// The launch's first page is the spare, which this conversation takes
	// without an opening.
	assert.Equal(t, "1", evalValue(t, ctx, b.Client("first"), "1"))

	stuck.Store(true)
	assert.Equal(t, "42", evalValue(t, ctx, b.Client("second"), "6*7"), "served by the hedged attempt")
	require.False(t, stuck.Load(), "the opening went through the stuck attempt")

	releaseOnce()
	select {
	case <-late:
	case <-ctx.Done():
		t.Fatal("the stuck attempt's page was never closed")
	}
}
