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
	// CapDownloads: the browser is the runtime's own, so
	// Browser.setDownloadBehavior may save the page's downloads in a
	// directory the runtime chooses. Without it a download stays the
	// browser user's (it is only observed).
	CapDownloads
	// CapIsolated: each conversation's pages run in a browser context of
	// their own (Target.createBrowserContext), so cookies, storage and
	// cache are shared with no other conversation and not with the
	// browser's own profile; closing the conversation disposes of it.
	// Saved logins (tools' context_name) need it.
	CapIsolated
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

// TabInfo is one tab of a conversation, as a TabLister reports it.
type TabInfo struct {
	Tab
	URL   string `json:"url"`
	Title string `json:"title"`
	// Current marks the tab the conversation's calls run in.
	Current bool `json:"current,omitempty"`
	// Opener is the id of the conversation's tab that opened this one (a
	// popup), "" for a tab opened by the agent or adopted.
	Opener string `json:"opener,omitempty"`
}

// TabLister is implemented by providers that keep several tabs per
// conversation. Build's TabNew adds a tab to the conversation (the others
// stay open) and TabByID selects any of them. Both methods are safe for
// concurrent use and return within ctx.
type TabLister interface {
	// ConversationTabs lists the conversation's tabs, current first.
	// Popups that its tabs opened are adopted as they are listed: they
	// become tabs of the conversation (owned, so closing the conversation
	// closes them). Tabs closed meanwhile are dropped. A conversation the
	// provider never served has no tabs (not an error).
	ConversationTabs(ctx context.Context, conversationID string) ([]TabInfo, error)
	// CloseTab closes the conversation's tab tabID (an adopted user tab is
	// only let go of) and returns what was released. When it was the
	// current tab the most recently used remaining one becomes current;
	// with none left the next call opens a new tab. A tab the conversation
	// does not hold is a ClassPolicy error with code CodeTargetNotFound.
	CloseTab(ctx context.Context, conversationID, tabID string) (Released, error)
}

// tabKind is the kind that holds the conversation's tabs: the kind inv's
// mode pins, else the conversation's remembered kind; "" when neither.
func (s *Selector) tabKind(inv Invocation) Kind {
	if k, ok := s.ModeKind(inv.Mode); ok {
		return k
	}
	k, _ := s.memo.Get(inv.ConversationID)
	return k
}

func (s *Selector) tabLister(k Kind) (TabLister, error) {
	for i, p := range s.providers {
		if s.descs[i].Kind != k {
			continue
		}
		if tl, ok := p.(TabLister); ok {
			return tl, nil
		}
	}
	return nil, &Error{Class: ClassPolicy, Code: CodeNotSupported, Backend: k,
		Message: "this backend keeps one tab per conversation; it cannot list, select or close tabs"}
}

// ConversationTabs lists the tabs of inv's conversation on the backend that
// serves it (see tabKind) and returns that backend's kind; before the
// conversation's first call there are none. A backend that is not a
// TabLister is a ClassPolicy error with code CodeNotSupported. Safe for
// concurrent use.
func (s *Selector) ConversationTabs(ctx context.Context, inv Invocation) (Kind, []TabInfo, error) {
	k := s.tabKind(inv)
	if k == "" {
		return "", nil, nil
	}
	tl, err := s.tabLister(k)
	if err != nil {
		return k, nil, err
	}
	tabs, err := tl.ConversationTabs(ctx, inv.ConversationID)
	return k, tabs, err
}

// CloseTab closes one tab of inv's conversation on the backend that serves
// it; see TabLister.CloseTab and ConversationTabs. Safe for concurrent use.
func (s *Selector) CloseTab(ctx context.Context, inv Invocation, tabID string) (Released, error) {
	k := s.tabKind(inv)
	if k == "" {
		return Released{}, &Error{Class: ClassPolicy, Code: CodeTargetNotFound, Message: "the conversation has no tabs yet"}
	}
	tl, err := s.tabLister(k)
	if err != nil {
		return Released{}, err
	}
	return tl.CloseTab(ctx, inv.ConversationID, tabID)
}
