package tools

import (
	"context"
	"errors"

	"github.com/browserchain/browserchain/hostproxy/tabs"

	"github.com/browserchain/browserchain/browserbackend"
)

// AttachInput is the browser_attach tool input.
type AttachInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// NewTab and UseActiveTab choose the extension tab as in NavigateInput;
	// without either, attach reuses the pinned tab or opens a dedicated one.
	NewTab       bool `json:"new_tab,omitempty"`
	UseActiveTab bool `json:"use_active_tab,omitempty"`
}

// AttachResult reports the page the conversation is now attached to.
type AttachResult struct {
	URL   string `json:"url"`
	Title string `json:"title"`
	Call
}

// Attach selects the conversation's backend and page without changing it:
// it runs the selection (the backend becomes the conversation's remembered
// kind, SEL-9), pins an extension tab (TOOL-2), and reports the page's URL and
// title.
func (t *Tools) Attach(ctx context.Context, inv browserbackend.Invocation, in AttachInput) (AttachResult, error) {
	return run(t, ctx, inv, spec{op: "attach", mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultActionTimeout,
		tab: tabRequest{open: true, newTab: in.NewTab, useActive: in.UseActiveTab}},
		func(ctx context.Context, p *Page) (AttachResult, error) {
			var loc struct{ URL, Title string }
			err := p.evaluate(ctx, "attach", `({URL: location.href, Title: document.title})`, false, &loc)
			return AttachResult{URL: loc.URL, Title: loc.Title}, err
		})
}

// ReleaseInput is the browser_detach and browser_close tool input.
type ReleaseInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
}

// ReleaseResult reports what Detach or Close released.
type ReleaseResult struct {
	// Forgot is the backend kind the conversation memo held ("" when none).
	Forgot browserbackend.Kind `json:"forgot,omitempty"`
	// TabID is the extension tab detached or closed, 0 when none was pinned.
	TabID int `json:"tabId,omitempty"`
	// TabClosed is true when Close closed a tab the tools had opened.
	TabClosed bool `json:"tabClosed,omitempty"`
	// TabGone is true when the pinned tab had already been closed.
	TabGone bool `json:"tabGone,omitempty"`
	Call
}

// Detach ends the conversation's hold on its browser: the extension tab pin
// is released with Vellum.detach (the tab stays open), the conversation
// memo is forgotten (Selector.Forget, SEL-9), so the next call selects
// afresh, and Options.DetachConversation runs (wired to
// cdpinspect.Provider.ForgetConversation, cdp-inspect forgets the
// conversation's tab, which stays open). It sends nothing when no
// extension tab is pinned.
func (t *Tools) Detach(ctx context.Context, inv browserbackend.Invocation, in ReleaseInput) (ReleaseResult, error) {
	return t.release(ctx, inv, in, "detach", false)
}

// Close is Detach that also closes what the conversation opened: a dedicated
// extension tab (Vellum.closeTab; a tab pinned with use_active_tab is only
// detached, it is the user's), and, through Options.CloseConversation, the
// state a backend keeps per conversation outside CDP (the local backend's
// page). Wire Options.CloseConversation to cdpinspect.Provider's
// CloseConversation as well, and Close closes the tab cdp-inspect opened
// for the conversation; a user tab (adopted with use_active_tab) is never
// closed, nor is a host-bridge tab (INS-3).
func (t *Tools) Close(ctx context.Context, inv browserbackend.Invocation, in ReleaseInput) (ReleaseResult, error) {
	return t.release(ctx, inv, in, "close", true)
}

func (t *Tools) release(ctx context.Context, inv browserbackend.Invocation, in ReleaseInput, op string, closing bool) (ReleaseResult, error) {
	if err := checkInvocation(op, inv); err != nil {
		return ReleaseResult{}, err
	}
	mode, err := parseMode(t.sel, op, in.BrowserMode, inv)
	if err != nil {
		return ReleaseResult{}, err
	}
	ctx, cancel, err := deadline(ctx, op, in.TimeoutMs, DefaultActionTimeout)
	if err != nil {
		return ReleaseResult{}, err
	}
	defer cancel()
	inv.Mode = mode
	t.kept.dropConversation(inv.ConversationID) // before the page goes: its Client must not outlive it
	var res ReleaseResult
	res.Forgot, _ = t.sel.Memo().Get(inv.ConversationID)
	// Forget last: the release commands below succeed through the selector,
	// which remembers their backend again.
	defer t.sel.Forget(inv.ConversationID)

	var firstErr error
	extensionMode := mode == browserbackend.ModeAuto || mode == browserbackend.Mode("extension")
	if pin, ok := t.pins.get(keyOf(inv)); ok && extensionMode {
		t.pins.del(keyOf(inv))
		ext := inv
		ext.Mode = browserbackend.Mode("extension")
		c := t.sel.Client(ext)
		res.TabID = pin.tabID
		if closing && pin.owned {
			firstErr = tabs.Close(ctx, c, tabs.ID(pin.tabID))
			res.TabClosed = firstErr == nil
		} else {
			firstErr = tabs.Detach(ctx, c, tabs.ID(pin.tabID))
		}
		if tabGone(firstErr) {
			// Closed meanwhile (by the user or another call): nothing to
			// release.
			firstErr, res.TabGone = nil, true
		}
		res.Call = Call{Backend: c.Kind(), Attempts: c.Attempts(), TabID: pin.tabID}
		c.Close()
	}
	hook := t.detachFn
	if closing {
		hook = t.closeFn
	}
	if hook != nil {
		if err := hook(ctx, res.Forgot, inv.ConversationID); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if firstErr != nil {
		return res, wrap(op, firstErr)
	}
	return res, nil
}

// tabGone reports whether err says the extension tab no longer exists: the
// extension answers a CDP-style protocol error ("no tab with id") or a
// cdp_session_not_found transport error.
func tabGone(err error) bool {
	return err != nil && (errors.Is(err, browserbackend.ErrSessionNotFound) ||
		(errors.Is(err, browserbackend.ErrProtocol) && errors.Is(err, browserbackend.ErrServerError)))
}

// StatusInput is the browser_status tool input.
type StatusInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// Probe actively checks each proposed backend (Candidate.Probe); without
	// it availability is the providers' preflight only.
	Probe bool `json:"probe,omitempty"`
}

// Status is the browser_status tool (SEL-13); see the package-level Status.
func (t *Tools) Status(ctx context.Context, inv browserbackend.Invocation, in StatusInput) (StatusReport, error) {
	const op = "status"
	if err := checkInvocation(op, inv); err != nil {
		return StatusReport{}, err
	}
	mode, err := parseMode(t.sel, op, in.BrowserMode, inv)
	if err != nil {
		return StatusReport{}, err
	}
	ctx, cancel, err := deadline(ctx, op, in.TimeoutMs, DefaultActionTimeout)
	if err != nil {
		return StatusReport{}, err
	}
	defer cancel()
	inv.Mode = mode
	rep, err := Status(ctx, t.sel, inv, StatusOptions{Probe: in.Probe})
	if tab, ok := t.PinnedTab(inv); ok {
		rep.PinnedTabID = tab
	}
	return rep, err
}
