package tools

import (
	"context"
	"errors"

	"github.com/browserchain/browserchain/browserbackend"
)

// TabTools are the tools over the conversation's tabs: list, select, open
// and close. A backend that keeps one tab per conversation (it is no
// browserbackend.TabLister) answers List, Select and Close with
// browserbackend's ClassPolicy error, code not_supported (CodeBackend
// here). It is a view of its Tools and as safe for concurrent use.
type TabTools struct{ t *Tools }

// Tabs returns the tab tools.
func (t *Tools) Tabs() TabTools { return TabTools{t} }

// TabsInput is the browser_tabs tool input.
type TabsInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
}

// TabsResult lists the conversation's tabs, current first.
type TabsResult struct {
	Tabs []browserbackend.TabInfo `json:"tabs"`
	// Backend is the backend that holds them ("" before the conversation's
	// first call).
	Backend browserbackend.Kind `json:"backend,omitempty"`
}

// List is the browser_tabs tool: the conversation's tabs on the backend
// that serves it (the kind browser_mode pins, else the conversation's
// remembered one), current first. Popups its tabs opened are adopted as
// they are listed: they become the conversation's (closed with it) and can
// be selected. Nothing is opened: before the conversation's first call the
// list is empty.
func (tt TabTools) List(ctx context.Context, inv browserbackend.Invocation, in TabsInput) (TabsResult, error) {
	const op = "tabs"
	ctx, cancel, inv, err := tt.t.prepare(ctx, op, inv, in.BrowserMode, in.TimeoutMs)
	if err != nil {
		return TabsResult{}, err
	}
	defer cancel()
	k, tabs, err := tt.t.sel.ConversationTabs(ctx, inv)
	if err != nil {
		return TabsResult{}, withBackend(wrap(op, err), k)
	}
	if tabs == nil {
		tabs = []browserbackend.TabInfo{}
	}
	return TabsResult{Tabs: tabs, Backend: k}, nil
}

// SelectTabInput is the browser_tab_select tool input.
type SelectTabInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// TabID is a tab id from List.
	TabID string `json:"tab_id"`
}

// SelectTabResult is the tab selected.
type SelectTabResult struct {
	URL   string `json:"url"`
	Title string `json:"title"`
	Call
}

// Select is the browser_tab_select tool: the conversation's later calls run
// in the tab TabID (one of List's). A tab the conversation does not hold is
// CodeBackend wrapping browserbackend's target_not_found.
func (tt TabTools) Select(ctx context.Context, inv browserbackend.Invocation, in SelectTabInput) (SelectTabResult, error) {
	return run(tt.t, ctx, inv, spec{op: "tab_select", mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultActionTimeout,
		check: func() error {
			if in.TabID == "" {
				return invalidInput("tab_select", "tab_id is required")
			}
			return nil
		},
		tab: browserbackend.TabRequest{Want: browserbackend.TabByID, ID: in.TabID}},
		func(ctx context.Context, p *Page) (SelectTabResult, error) {
			var loc struct{ URL, Title string }
			err := p.evaluate(ctx, "tab_select", `({URL: location.href, Title: document.title})`, false, &loc)
			return SelectTabResult{URL: loc.URL, Title: loc.Title}, err
		})
}

// OpenTabInput is the input of opening a tab.
type OpenTabInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// URL, when set, is loaded in the new tab (as Navigate loads it);
	// WaitUntil is Navigate's.
	URL       string `json:"url,omitempty"`
	WaitUntil string `json:"wait_until,omitempty"`
}

// Open opens a new tab of the conversation's own and makes it current: it
// is Navigate with NewTab when URL is set, else Attach with NewTab. On
// backends with a tab list the previous tabs stay the conversation's.
func (tt TabTools) Open(ctx context.Context, inv browserbackend.Invocation, in OpenTabInput) (NavigateResult, error) {
	if in.URL != "" {
		return tt.t.Navigate(ctx, inv, NavigateInput{BrowserMode: in.BrowserMode, TimeoutMs: in.TimeoutMs, URL: in.URL,
			WaitUntil: in.WaitUntil, NewTab: true})
	}
	at, err := tt.t.Attach(ctx, inv, AttachInput{BrowserMode: in.BrowserMode, TimeoutMs: in.TimeoutMs, NewTab: true})
	return NavigateResult{URL: at.URL, Title: at.Title, Call: at.Call}, err
}

// CloseTabInput is the browser_tab_close tool input.
type CloseTabInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// TabID is a tab id from List.
	TabID string `json:"tab_id"`
}

// CloseTabResult is what Close released and the tabs left.
type CloseTabResult struct {
	Released browserbackend.Released  `json:"released"`
	Tabs     []browserbackend.TabInfo `json:"tabs"`
}

// Close is the browser_tab_close tool: it closes the conversation's tab
// TabID (a user's tab it adopted is only let go of). When that was the
// current tab, the most recently used remaining one becomes current; with
// none left the next call opens a new tab.
func (tt TabTools) Close(ctx context.Context, inv browserbackend.Invocation, in CloseTabInput) (CloseTabResult, error) {
	const op = "tab_close"
	if in.TabID == "" {
		return CloseTabResult{}, invalidInput(op, "tab_id is required")
	}
	ctx, cancel, inv, err := tt.t.prepare(ctx, op, inv, in.BrowserMode, in.TimeoutMs)
	if err != nil {
		return CloseTabResult{}, err
	}
	defer cancel()
	tt.t.kept.dropConversation(inv.ConversationID) // its Client may be on the tab that goes
	rel, err := tt.t.sel.CloseTab(ctx, inv, in.TabID)
	if err != nil {
		return CloseTabResult{}, withBackend(wrap(op, err), rel.Kind)
	}
	_, tabs, err := tt.t.sel.ConversationTabs(ctx, inv)
	if err != nil {
		return CloseTabResult{Released: rel}, wrap(op, err)
	}
	if tabs == nil {
		tabs = []browserbackend.TabInfo{}
	}
	return CloseTabResult{Released: rel, Tabs: tabs}, nil
}

// prepare is what every tool does before it reaches a backend without a
// Client of its own: the invocation and browser_mode are checked and the
// deadline set.
func (t *Tools) prepare(ctx context.Context, op string, inv browserbackend.Invocation, mode string, timeoutMs int) (context.Context, context.CancelFunc, browserbackend.Invocation, error) {
	if err := checkInvocation(op, inv); err != nil {
		return nil, nil, inv, err
	}
	m, err := parseMode(t.sel, op, mode, inv)
	if err != nil {
		return nil, nil, inv, err
	}
	ctx, cancel, err := deadline(ctx, op, timeoutMs, DefaultActionTimeout)
	if err != nil {
		return nil, nil, inv, err
	}
	inv.Mode = m
	return ctx, cancel, inv, nil
}

// withBackend sets the backend of a tools *Error that has none.
func withBackend(err error, k browserbackend.Kind) error {
	var te *Error
	if errors.As(err, &te) && te.Backend == "" && k != "" {
		cp := *te
		cp.Backend = k
		return &cp
	}
	return err
}
