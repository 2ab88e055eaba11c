package local

import (
	"errors"
	"time"

	"github.com/mxschmitt/playwright-go"
)

// Opening a page is hedged. Playwright never finishes opening a page whose
// renderer died while the page was being set up: it reports a crash only for
// a page it has already handed out, and the setup commands sent to the dead
// renderer get no answer. That happens when a renderer is killed (an
// out-of-memory kill, a crash) just as Chromium gives it to a new tab, and
// without a second attempt the conversation would wait out its deadline on a
// page that never opens.
const (
	// pageOpenHedge is how long one attempt may run before another starts
	// beside it. A page normally opens in about 200 ms, and in a few seconds
	// on a loaded machine.
	pageOpenHedge = 10 * time.Second
	// maxPageOpenAttempts bounds the attempts of one opening.
	maxPageOpenAttempts = 3
	// maxHedgingOpenings: with more attempts than this running in the
	// browser, a slow attempt is waiting its turn, not stuck, and another
	// one beside it would only add to the queue (200 conversations opening
	// pages at once); the hedge waits another interval.
	maxHedgingOpenings = 4
)

// openedPage is the outcome of one attempt to open a page.
type openedPage struct {
	page playwright.Page
	sess playwright.CDPSession
	err  error
}

// contextGoneError is a failure to open a page because st's browser
// context has closed: the browser is gone (classifyOpenError marks it dead).
type contextGoneError struct{ error }

func (e contextGoneError) Unwrap() error { return e.error }

// openPageOnce opens a page of st's context and a CDPSession on it. A
// context that refuses a new page as closed fails with contextGoneError.
func openPageOnce(st *state) openedPage {
	page, err := st.bctx.NewPage()
	if errors.Is(err, playwright.ErrTargetClosed) {
		return openedPage{err: contextGoneError{err}}
	}
	if err != nil {
		return openedPage{err: err}
	}
	sess, err := st.bctx.NewCDPSession(page)
	if err != nil {
		_ = page.Close()
		return openedPage{err: err}
	}
	return openedPage{page: page, sess: sess}
}

// openPage opens a page and its CDPSession in st. An attempt that has not
// finished after the hedge interval gets another beside it (at most
// maxPageOpenAttempts, and only while at most maxHedgingOpenings attempts
// run in the browser); the first to succeed wins and the pages of the later
// ones are closed when they arrive. It fails with the last attempt's error
// when every attempt failed, and with errClosed once b is closed. Attempts
// end at the latest when the browser goes away (Playwright then fails them).
func (b *Browser) openPage(st *state) (playwright.Page, playwright.CDPSession, error) {
	return b.openPageWith(func() openedPage { return b.tune.openAttempt(st) })
}

// openPageWith is openPage with attempt as one attempt.
func (b *Browser) openPageWith(attempt func() openedPage) (playwright.Page, playwright.CDPSession, error) {
	hedge := b.tune.pageOpenHedge
	results := make(chan openedPage, maxPageOpenAttempts)
	started, pending := 0, 0
	start := func() bool {
		if !b.track() {
			return false
		}
		started++
		pending++
		b.openings.Add(1)
		go func() {
			defer b.wg.Done()
			defer b.openings.Add(-1)
			results <- attempt()
		}()
		return true
	}
	if !start() {
		return nil, nil, errClosed("")
	}
	timer := time.NewTimer(hedge)
	defer timer.Stop()
	var lastErr error
	for {
		select {
		case r := <-results:
			pending--
			if r.err == nil {
				b.closeLatePages(results, pending)
				return r.page, r.sess, nil
			}
			lastErr = r.err
			if pending == 0 {
				return nil, nil, lastErr
			}
		case <-timer.C:
			switch {
			case started >= maxPageOpenAttempts:
			case b.openings.Load() > maxHedgingOpenings:
				timer.Reset(hedge) // a busy browser: check again later
			case start():
				timer.Reset(hedge)
			}
		}
	}
}

// closeLatePages closes the pages of the n attempts still running on results
// as they finish: the opening already has its page.
func (b *Browser) closeLatePages(results <-chan openedPage, n int) {
	if n == 0 || !b.track() {
		return
	}
	go func() {
		defer b.wg.Done()
		for range n {
			if r := <-results; r.err == nil {
				_ = r.page.Close()
			}
		}
	}()
}
