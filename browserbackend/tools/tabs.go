package tools

import (
	"context"
	"errors"
	"sync"

	"github.com/browserchain/browserchain/hostproxy/tabs"

	"github.com/browserchain/browserchain/browserbackend"
)

// The extension's tab operations (PXY-6) come from package tabs, sent
// through the per-call Client like any other command.

// DefaultMaxPins bounds the pinned-tab table; the least recently used pin is
// dropped beyond it (the tab itself stays open).
const DefaultMaxPins = 10000

// tabPin is the extension tab of one (conversation, client).
type tabPin struct {
	tabID int
	// owned is true for a tab the tools opened (Close closes it), false for
	// the user's tab pinned with use_active_tab (Close only detaches).
	owned bool
	used  uint64
}

type pinKey struct{ conversation, client string }

// tabPins is the TOOL-2 table. Safe for concurrent use.
type tabPins struct {
	mu    sync.Mutex
	m     map[pinKey]*tabPin
	clock uint64
	max   int
	// busy holds one token per key while a call selects or opens that
	// key's tab, so two concurrent first calls of a conversation open one
	// tab, not two. Entries live only while held or waited for.
	busy map[pinKey]*keyLock
}

type keyLock struct {
	token chan struct{}
	refs  int
}

func newTabPins() *tabPins {
	return &tabPins{m: make(map[pinKey]*tabPin), max: DefaultMaxPins, busy: make(map[pinKey]*keyLock)}
}

// lock takes k's token, honouring ctx; the returned func releases it.
func (t *tabPins) lock(ctx context.Context, k pinKey) (func(), error) {
	t.mu.Lock()
	l := t.busy[k]
	if l == nil {
		l = &keyLock{token: make(chan struct{}, 1)}
		t.busy[k] = l
	}
	l.refs++
	t.mu.Unlock()
	drop := func() {
		t.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(t.busy, k)
		}
		t.mu.Unlock()
	}
	select {
	case l.token <- struct{}{}:
		return func() { <-l.token; drop() }, nil
	case <-ctx.Done():
		drop()
		return nil, ctx.Err()
	}
}

func keyOf(inv browserbackend.Invocation) pinKey {
	return pinKey{conversation: inv.ConversationID, client: inv.TargetClientID}
}

func (t *tabPins) get(k pinKey) (tabPin, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.m[k]
	if !ok {
		return tabPin{}, false
	}
	t.clock++
	p.used = t.clock
	return *p, true
}

func (t *tabPins) set(k pinKey, p tabPin) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clock++
	p.used = t.clock
	t.m[k] = &p
	for len(t.m) > t.max {
		var oldest pinKey
		var min uint64 = ^uint64(0)
		for k, v := range t.m {
			if v.used < min {
				oldest, min = k, v.used
			}
		}
		delete(t.m, oldest)
	}
}

func (t *tabPins) del(k pinKey) (tabPin, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.m[k]
	delete(t.m, k)
	if !ok {
		return tabPin{}, false
	}
	return *p, true
}

// PinnedTab returns the extension tab pinned for the invocation's
// (conversation, target client), if any (TOOL-2).
func (t *Tools) PinnedTab(inv browserbackend.Invocation) (tabID int, ok bool) {
	p, ok := t.pins.get(keyOf(inv))
	return p.tabID, ok
}

// tabRequest is what a call asks of the extension tab pin.
type tabRequest struct {
	// open: the call may open a dedicated tab when none is pinned
	// (navigate, attach).
	open      bool
	newTab    bool
	useActive bool
}

// expectsExtension reports whether the invocation's first candidate is the
// extension: the mode pins it, or in auto mode the conversation memo
// remembers it, or the plan lists it first.
func (t *Tools) expectsExtension(inv browserbackend.Invocation) bool {
	switch inv.Mode {
	case browserbackend.Mode("extension"):
		return true
	case browserbackend.ModeAuto:
	default:
		return false
	}
	if inv.TargetClientID != "" {
		return true
	}
	plan := t.sel.Plan(inv)
	proposed := false
	for _, c := range plan.Candidates {
		proposed = proposed || c.Kind == browserbackend.KindExtension
	}
	if k, ok := t.sel.Memo().Get(inv.ConversationID); ok && inv.ConversationID != "" {
		// Only when an extension client is connected now: a pinned
		// extension client would otherwise wait out the reconnect grace
		// (SEL-8), which auto mode must not do.
		return k == browserbackend.KindExtension && proposed
	}
	return len(plan.Candidates) > 0 && plan.Candidates[0].Kind == browserbackend.KindExtension
}

// open returns the per-call client. When the extension is expected to serve
// the call, the client is pinned to the extension and the conversation's tab
// is selected (or opened) first, so no raw CDP command can land in some
// other tab; in auto mode a transport failure of that step falls back to a
// plain auto client.
func (t *Tools) open(ctx context.Context, inv browserbackend.Invocation, op string, req tabRequest) (*browserbackend.Client, int, error) {
	if !t.expectsExtension(inv) {
		return t.sel.Client(inv), 0, nil
	}
	ext := inv
	ext.Mode = browserbackend.Mode("extension")
	c := t.sel.Client(ext)
	tabID, err := t.ensureTab(ctx, c, inv, op, req)
	if err == nil {
		return c, tabID, nil
	}
	c.Close()
	if inv.Mode == browserbackend.ModeAuto && errors.Is(err, browserbackend.ErrTransport) && ctx.Err() == nil {
		t.log.Info("extension unavailable for the tool call, running the auto chain", "op", op,
			"conversationId", inv.ConversationID, "error", err)
		return t.sel.Client(inv), 0, nil
	}
	return nil, 0, err
}

// ensureTab selects the conversation's pinned tab, or pins one (TOOL-2).
func (t *Tools) ensureTab(ctx context.Context, c *browserbackend.Client, inv browserbackend.Invocation, op string, req tabRequest) (int, error) {
	key := keyOf(inv)
	unlock, err := t.pins.lock(ctx, key)
	if err != nil {
		// The caller's ctx ended while another call held the tab: a passed
		// deadline is a timeout, a cancellation stays an aborted backend error.
		return 0, wrap(op, browserbackend.Classify(err, false))
	}
	defer unlock()
	if pin, ok := t.pins.get(key); ok && !req.newTab && !req.useActive {
		err := tabs.Attach(ctx, c, tabs.ID(pin.tabID))
		if err == nil {
			return pin.tabID, nil
		}
		if !errors.Is(err, browserbackend.ErrProtocol) {
			return 0, err
		}
		// The tab is gone (closed by the user): forget it.
		t.pins.del(key)
		t.log.Info("pinned extension tab is gone", "conversationId", inv.ConversationID, "tabId", pin.tabID)
	}
	switch {
	case req.useActive:
		list, err := tabs.List(ctx, c)
		if err != nil {
			return 0, err
		}
		for _, tab := range list {
			if tab.Active {
				if err := tabs.Attach(ctx, c, tab.ID); err != nil {
					return 0, err
				}
				t.pins.set(key, tabPin{tabID: int(tab.ID)})
				return int(tab.ID), nil
			}
		}
		return 0, &Error{Op: op, Code: CodeNoTab, Message: "the browser reports no active tab"}
	case req.open:
		// Active: a background tab in a real Chrome produces no frames, so
		// Page.captureScreenshot and rAF-driven pages would stall in it.
		// about:blank: the navigation itself then runs through Page.navigate
		// with its load events, like on every other backend.
		tab, err := tabs.Create(ctx, c, "about:blank", true)
		if err != nil {
			return 0, err
		}
		if tab.ID == 0 {
			return 0, &Error{Op: op, Code: CodeBackend, Message: "Vellum.createTab answered without a tab id"}
		}
		if err := tabs.Attach(ctx, c, tab.ID); err != nil {
			// Do not leave the tab behind: nobody would ever use it.
			if cerr := tabs.Close(ctx, c, tab.ID); cerr != nil {
				t.log.Warn("closing the tab that could not be attached failed", "tabId", tab.ID, "error", cerr)
			}
			return 0, err
		}
		t.pins.set(key, tabPin{tabID: int(tab.ID), owned: true})
		t.log.Info("opened a dedicated extension tab", "conversationId", inv.ConversationID, "tabId", tab.ID)
		return int(tab.ID), nil
	}
	return 0, &Error{Op: op, Code: CodeNoTab,
		Message: "this conversation has no browser tab yet: navigate first, or attach with use_active_tab"}
}
