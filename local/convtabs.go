package local

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mxschmitt/playwright-go"

	"github.com/browserchain/browserchain/browserbackend"
)

// convTabs are the pages of one conversation beyond its first. Each page
// is an entry of Browser.pages under a key of its own: the conversation id
// for its first page, the id, a NUL and a number for the others, so that
// every page gets the same opening, eviction and loss handling.
type convTabs struct {
	cur  string   // the key of the current page
	keys []string // every key, least recently current first
	next int      // the number of the next key
	// popups are pages the conversation's pages opened, not adopted yet
	// (Playwright reports them on its dispatch goroutine, where no call to
	// Playwright may be made); opener is the opening page's key.
	popups []popup
	// openers maps adopted popups' keys to their opener's target id.
	openers map[string]string
}

type popup struct {
	page   playwright.Page
	opener string
}

// conversationOf returns the conversation a page key belongs to.
func conversationOf(key string) string {
	conv, _, _ := strings.Cut(key, "\x00")
	return conv
}

// tabsLocked returns conversation's tab set, creating it. b.mu must be held.
func (b *Browser) tabsLocked(conversation string) *convTabs {
	ct := b.tabs[conversation]
	if ct == nil {
		ct = &convTabs{cur: conversation, keys: []string{conversation}, next: 1, openers: map[string]string{}}
		b.tabs[conversation] = ct
	}
	return ct
}

// pageKey returns the key of the page a Build of conversation asking for
// req runs in: a new key for TabNew, the page with target id req.ID for
// TabByID, else the current page — or, when that page went away and an
// older one is open, the most recently current one.
func (b *Browser) pageKey(conversation string, req browserbackend.TabRequest) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ct := b.tabs[conversation]
	switch req.Want {
	case browserbackend.TabNew:
		if ct == nil {
			if _, open := b.pages[conversation]; !open {
				return conversation, nil // the conversation's first page
			}
		}
		ct = b.tabsLocked(conversation)
		key := conversation + "\x00" + strconv.Itoa(ct.next)
		ct.next++
		ct.keys = append(ct.keys, key)
		ct.cur = key
		return key, nil
	case browserbackend.TabByID:
		keys := []string{conversation}
		if ct != nil {
			keys = ct.keys
		}
		for _, k := range keys {
			if p := b.pages[k]; p != nil && p.tabID() == req.ID {
				if ct != nil {
					ct.use(k)
				}
				return k, nil
			}
		}
		return "", &browserbackend.Error{Class: browserbackend.ClassPolicy, Code: browserbackend.CodeTargetNotFound,
			Backend: browserbackend.KindLocal, Message: fmt.Sprintf("target %q is not a tab of this conversation", req.ID)}
	}
	if ct == nil {
		return conversation, nil
	}
	if _, open := b.pages[ct.cur]; !open && ct.cur != conversation {
		for i := len(ct.keys) - 1; i >= 0; i-- {
			if _, ok := b.pages[ct.keys[i]]; ok {
				delete(b.lost, ct.cur) // a tab of several closed: the others go on
				ct.drop(ct.cur)
				ct.use(ct.keys[i])
				break
			}
		}
	}
	return ct.cur, nil
}

// use makes key current (moving it last in keys).
func (ct *convTabs) use(key string) {
	ct.drop(key)
	ct.keys = append(ct.keys, key)
	ct.cur = key
}

func (ct *convTabs) drop(key string) {
	ct.keys = slices.DeleteFunc(ct.keys, func(k string) bool { return k == key })
}

func (p *pageEntry) tabID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.targetID
}

// notePopup records a page that p's page opened; it runs on Playwright's
// dispatch goroutine and only takes b.mu.
func (b *Browser) notePopup(p *pageEntry, pp playwright.Page) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	ct := b.tabsLocked(conversationOf(p.conv))
	ct.popups = append(ct.popups, popup{page: pp, opener: p.conv})
	close(b.popupNoted)
	b.popupNoted = make(chan struct{})
}

// maxPopupWait bounds how long a tab list waits for Playwright to report a
// popup the browser already lists.
const maxPopupWait = 2 * time.Second

// awaitPopups waits until Playwright has reported every popup the browser
// lists as opened by one of conversation's pages (Target.getTargets through
// its current page): Playwright's popup event trails the browser's own
// record of the new target.
func (b *Browser) awaitPopups(ctx context.Context, conversation string) {
	b.mu.Lock()
	ct := b.tabs[conversation]
	keys := []string{conversation}
	cur := conversation
	if ct != nil {
		keys, cur = ct.keys, ct.cur
	}
	held := map[string]bool{}
	for _, k := range keys {
		if pe := b.pages[k]; pe != nil && pe.tabID() != "" {
			held[pe.tabID()] = true
		}
	}
	b.mu.Unlock()
	if len(held) == 0 {
		return
	}
	cl := b.Client(cur)
	defer cl.Close()
	raw, err := cl.Send(ctx, browserbackend.Command{Method: "Target.getTargets"})
	if err != nil {
		return
	}
	var res struct {
		TargetInfos []struct {
			TargetID string `json:"targetId"`
			Type     string `json:"type"`
			OpenerID string `json:"openerId"`
		} `json:"targetInfos"`
	}
	if json.Unmarshal(raw, &res) != nil {
		return
	}
	want := 0
	for _, in := range res.TargetInfos {
		if in.Type == "page" && held[in.OpenerID] && !held[in.TargetID] {
			want++
		}
	}
	wait := time.NewTimer(maxPopupWait)
	defer wait.Stop()
	for {
		b.mu.Lock()
		n := 0
		if ct := b.tabs[conversation]; ct != nil {
			n = len(ct.popups)
		}
		noted := b.popupNoted
		b.mu.Unlock()
		if n >= want {
			return
		}
		select {
		case <-noted:
		case <-wait.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// adoptPopups makes the conversation's pending popups pages of its own
// (each with a CDP session and its target id), dropping those closed
// meanwhile.
func (b *Browser) adoptPopups(ctx context.Context, conversation string) error {
	b.awaitPopups(ctx, conversation)
	b.mu.Lock()
	ct := b.tabs[conversation]
	if ct == nil || len(ct.popups) == 0 {
		b.mu.Unlock()
		return nil
	}
	pending := ct.popups
	ct.popups = nil
	st := b.st
	b.mu.Unlock()
	var errs []error
	for i, pp := range pending {
		if pp.page.IsClosed() {
			continue
		}
		if st == nil {
			break
		}
		sess, err := pp.page.Context().NewCDPSession(pp.page)
		if err != nil {
			if !pp.page.IsClosed() {
				errs = append(errs, err)
			}
			continue
		}
		b.mu.Lock()
		if b.closed || b.st != st {
			b.mu.Unlock()
			_ = pp.page.Close()
			continue
		}
		key := conversation + "\x00" + strconv.Itoa(ct.next)
		ct.next++
		ct.keys = append([]string{key}, ct.keys...) // never current by being adopted
		if op := b.pages[pp.opener]; op != nil {
			ct.openers[key] = op.tabID()
		}
		entry := newPageEntry(b, st, key)
		b.pages[key] = entry
		b.wg.Add(1)
		b.mu.Unlock()
		go entry.open(&spareTab{page: pp.page, sess: sess})
		cl := b.Client(key)
		err = cl.Open(ctx)
		if err == nil {
			err = cl.resolveTab(ctx)
		}
		_ = cl.Close()
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				b.mu.Lock()
				ct.popups = append(ct.popups, pending[i+1:]...)
				b.mu.Unlock()
				break
			}
		}
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// ConversationTabs implements browserbackend.TabLister: the conversation's
// pages, current first, its popups adopted. Safe for concurrent use.
func (p provider) ConversationTabs(ctx context.Context, conversationID string) ([]browserbackend.TabInfo, error) {
	b := p.b
	if err := b.adoptPopups(ctx, conversationID); err != nil {
		return nil, err
	}
	b.mu.Lock()
	var keys []string
	openers := map[string]string{}
	cur := conversationID
	if ct := b.tabs[conversationID]; ct != nil {
		keys = slices.Clone(ct.keys)
		cur = ct.cur
		for k, v := range ct.openers {
			openers[k] = v
		}
	} else if _, ok := b.pages[conversationID]; ok {
		keys = []string{conversationID}
	}
	type entry struct {
		key string
		p   *pageEntry
	}
	var open []entry
	for i := len(keys) - 1; i >= 0; i-- { // current (most recent) first
		if pe := b.pages[keys[i]]; pe != nil && !pe.isGone() {
			open = append(open, entry{keys[i], pe})
		}
	}
	b.mu.Unlock()
	slices.SortStableFunc(open, func(a, c entry) int {
		switch {
		case a.key == cur:
			return -1
		case c.key == cur:
			return 1
		}
		return 0
	})
	var out []browserbackend.TabInfo
	for _, e := range open {
		select {
		case <-e.p.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.p.err != nil || e.p.page == nil {
			continue
		}
		title, _ := e.p.page.Title()
		out = append(out, browserbackend.TabInfo{Tab: browserbackend.Tab{ID: e.p.tabID(), Owned: true},
			URL: e.p.page.URL(), Title: title, Current: e.key == cur, Opener: openers[e.key]})
	}
	return out, nil
}

// CloseTab implements browserbackend.TabLister: it closes the
// conversation's page tabID. Safe for concurrent use.
func (p provider) CloseTab(ctx context.Context, conversationID, tabID string) (browserbackend.Released, error) {
	b := p.b
	if err := b.adoptPopups(ctx, conversationID); err != nil {
		return browserbackend.Released{}, err
	}
	b.mu.Lock()
	keys := []string{conversationID}
	ct := b.tabs[conversationID]
	if ct != nil {
		keys = ct.keys
	}
	key := ""
	for _, k := range keys {
		if pe := b.pages[k]; pe != nil && pe.tabID() == tabID && tabID != "" {
			key = k
		}
	}
	if key == "" {
		b.mu.Unlock()
		return browserbackend.Released{}, &browserbackend.Error{Class: browserbackend.ClassPolicy, Code: browserbackend.CodeTargetNotFound,
			Backend: browserbackend.KindLocal, Message: fmt.Sprintf("target %q is not a tab of this conversation", tabID)}
	}
	if ct != nil {
		ct.drop(key)
		delete(ct.openers, key)
		if ct.cur == key && len(ct.keys) > 0 {
			ct.cur = ct.keys[len(ct.keys)-1]
		}
		if len(ct.keys) == 0 {
			delete(b.tabs, conversationID)
		}
	}
	pe := b.pages[key]
	delete(b.pages, key)
	delete(b.lost, key)
	b.mu.Unlock()
	if err := pe.close(); err != nil {
		return browserbackend.Released{}, err
	}
	return browserbackend.Released{Kind: browserbackend.KindLocal, Tab: browserbackend.Tab{ID: tabID, Owned: true}, Closed: true}, nil
}
