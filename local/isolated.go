package local

import (
	"errors"
	"fmt"

	"github.com/mxschmitt/playwright-go"
)

// isoContext is the browser context of one conversation under
// Options.Isolated; ready is closed once ctx or err is set.
type isoContext struct {
	st    *state
	ready chan struct{}
	ctx   playwright.BrowserContext
	err   error
}

// openConversationPage opens a page of conversation in st: in the shared
// persistent context, or under Options.Isolated in the conversation's own
// context (created on its first page).
func (b *Browser) openConversationPage(st *state, conversation string) (playwright.Page, playwright.CDPSession, error) {
	if !b.opts.Isolated {
		return b.openPage(st)
	}
	bc, err := b.contextOf(st, conversation)
	if err != nil {
		return nil, nil, err
	}
	return b.openPageWith(func() openedPage {
		page, err := bc.NewPage()
		if err != nil {
			return openedPage{err: err}
		}
		sess, err := bc.NewCDPSession(page)
		if err != nil {
			_ = page.Close()
			return openedPage{err: err}
		}
		return openedPage{page: page, sess: sess}
	})
}

// contextOf returns conversation's browser context in st, creating it;
// concurrent first pages of one conversation share one context.
func (b *Browser) contextOf(st *state, conversation string) (playwright.BrowserContext, error) {
	b.mu.Lock()
	ic := b.contexts[conversation]
	if ic != nil && ic.st != st {
		ic = nil // of a browser that died: its context went with it
	}
	create := ic == nil
	if create {
		ic = &isoContext{st: st, ready: make(chan struct{})}
		b.contexts[conversation] = ic
	}
	b.mu.Unlock()
	if create {
		ic.ctx, ic.err = newIsolatedContext(st)
		if ic.err != nil {
			b.mu.Lock()
			if b.contexts[conversation] == ic {
				delete(b.contexts, conversation)
			}
			b.mu.Unlock()
		}
		close(ic.ready)
	}
	<-ic.ready // bounded: NewContext answers or fails when the browser goes
	return ic.ctx, ic.err
}

func newIsolatedContext(st *state) (playwright.BrowserContext, error) {
	br := st.bctx.Browser()
	if br == nil {
		return nil, errors.New("local: the persistent context has no browser to open an isolated context in")
	}
	bc, err := br.NewContext()
	if err != nil {
		return nil, fmt.Errorf("local: open an isolated browser context: %w", err)
	}
	return bc, nil
}

// closeContextOf disposes of conversation's isolated context, if any,
// with its cookies and storage.
func (b *Browser) closeContextOf(conversation string) error {
	b.mu.Lock()
	ic := b.contexts[conversation]
	delete(b.contexts, conversation)
	b.mu.Unlock()
	if ic == nil {
		return nil
	}
	<-ic.ready
	if ic.ctx == nil {
		return nil
	}
	if err := ic.ctx.Close(); err != nil && !errors.Is(err, playwright.ErrTargetClosed) {
		return fmt.Errorf("local: close the conversation's browser context: %w", err)
	}
	return nil
}
