package browserbackend

import (
	"context"
	"errors"
	"sync"
)

// TabWant says which tab an invocation's page commands run in.
type TabWant int

const (
	// TabCurrent (the zero value) is the conversation's current tab, or a
	// new tab of the conversation's own when it has none.
	TabCurrent TabWant = iota
	// TabNew opens a new tab of the conversation's own and makes it the
	// current one.
	TabNew
	// TabActive adopts the user's active tab and makes it the current one.
	// A backend whose browser has no user tabs (a sacrificial Chromium) uses
	// the conversation's current tab instead. Closing the conversation
	// leaves an adopted tab open.
	TabActive
	// TabByID selects the conversation's tab named by TabRequest.ID (a
	// Tab.ID the backend reported) and makes it the current one; a tab the
	// conversation does not hold is a ClassPolicy error with code
	// CodeTargetNotFound.
	TabByID
)

// TabRequest is the tab part of an Invocation: which tab the backend that
// serves the call must resolve at Build and scope its commands to.
type TabRequest struct {
	Want TabWant
	// ID names the tab for TabByID; ignored otherwise.
	ID string
}

// Tab is the tab a backend resolved for an invocation.
type Tab struct {
	// ID is the backend's id of the tab (a CDP target id, or the extension's
	// decimal tab id); stable while the tab is open.
	ID string `json:"id"`
	// Owned is true for a tab the conversation opened (closing the
	// conversation closes it), false for a user's tab it adopted.
	Owned bool `json:"owned,omitempty"`
}

// TabScoped is implemented by backends whose commands run in one tab. The
// per-invocation Client reports it (Client.Tab).
type TabScoped interface {
	Tab() Tab
}

// Caps is what a backend kind can do beyond sending commands to its tab. A
// Provider declares them in Descriptor.Caps; layers above the core ask for a
// capability instead of naming a kind.
type Caps uint32

const (
	// CapTabs: Build honours Invocation.Tab (new, active, by id) and the
	// backend reports its tab (TabScoped).
	CapTabs Caps = 1 << iota
	// CapHoldTargets: commands with SessionID BrowserSessionID run at
	// browser level, where Target.setAutoAttach with waitForDebuggerOnStart
	// holds every new page target before its first request.
	CapHoldTargets
	// CapDialogs: the backend is a DialogWatcher; Page.javascriptDialogOpening
	// reaches its subscribers and Page.handleJavaScriptDialog answers.
	CapDialogs
)

// Has reports whether c holds every capability of x.
func (c Caps) Has(x Caps) bool { return c&x == x }

// Released is one tab a provider let go of when a conversation ended.
type Released struct {
	Kind Kind `json:"backend"`
	Tab  Tab  `json:"tab"`
	// Closed: the tab was closed; otherwise it was detached and stays open.
	Closed bool `json:"closed,omitempty"`
	// Gone: the tab had already been closed (by the user, say).
	Gone bool `json:"gone,omitempty"`
}

// ConversationReleaser is implemented by providers that hold state per
// conversation (tabs, pages, connections). ReleaseConversation ends the
// conversation's hold: with close set it closes what the conversation opened
// (its own tabs; an adopted user tab is only detached), otherwise it detaches
// and forgets, leaving every tab open. It reports the tabs it let go of and
// must return within ctx. A conversation the provider never served is not an
// error. Safe for concurrent use.
type ConversationReleaser interface {
	ReleaseConversation(ctx context.Context, conversationID string, close bool) ([]Released, error)
}

// Tab returns the tab the sticky backend runs in, and false before a backend
// was selected or when the backend is not TabScoped.
func (c *Client) Tab() (Tab, bool) {
	c.mu.Lock()
	b := c.sticky
	c.mu.Unlock()
	if ts, ok := b.(TabScoped); ok {
		return ts.Tab(), true
	}
	return Tab{}, false
}

// Caps returns the capabilities the sticky backend's provider declares; 0
// before a backend was selected.
func (c *Client) Caps() Caps {
	k := c.Kind()
	if k == "" {
		return 0
	}
	d, _ := c.sel.Descriptor(k)
	return d.Caps
}

// ReleaseConversation ends a conversation on every provider: it forgets the
// conversation's remembered kind and calls ReleaseConversation, with close,
// on every provider that implements ConversationReleaser, concurrently. It
// returns the tabs released, in provider order, and every provider's error
// joined. Safe for concurrent use.
func (s *Selector) ReleaseConversation(ctx context.Context, conversationID string, close bool) ([]Released, error) {
	defer s.Forget(conversationID)
	type answer struct {
		tabs []Released
		err  error
	}
	answers := make([]answer, len(s.providers))
	var wg sync.WaitGroup
	for i, p := range s.providers {
		r, ok := p.(ConversationReleaser)
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tabs, err := r.ReleaseConversation(ctx, conversationID, close)
			answers[i] = answer{tabs, err}
		}()
	}
	wg.Wait()
	var tabs []Released
	var errs []error
	for _, a := range answers {
		tabs = append(tabs, a.tabs...)
		if a.err != nil {
			errs = append(errs, a.err)
		}
	}
	return tabs, errors.Join(errs...)
}
