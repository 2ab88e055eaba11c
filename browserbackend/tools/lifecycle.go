package tools

import (
	"context"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/sessions"
)

// AttachInput is the browser_attach tool input.
type AttachInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// NewTab and UseActiveTab choose the tab as in NavigateInput; without
	// either, attach uses the conversation's tab, opening one when it has
	// none.
	NewTab       bool `json:"new_tab,omitempty"`
	UseActiveTab bool `json:"use_active_tab,omitempty"`
}

// AttachResult reports the page the conversation is now attached to.
type AttachResult struct {
	URL   string `json:"url"`
	Title string `json:"title"`
	Call
}

// Attach selects the conversation's backend and tab without changing the
// page: it runs the selection (the backend becomes the conversation's
// remembered kind), resolves the tab, and reports the page's URL and title.
func (t *Tools) Attach(ctx context.Context, inv browserbackend.Invocation, in AttachInput) (AttachResult, error) {
	return run(t, ctx, inv, spec{op: "attach", mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultActionTimeout,
		tab: tabWanted(in.NewTab, in.UseActiveTab)},
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
	// Tabs are the tabs the backends let go of: closed, detached (left
	// open) or already gone.
	Tabs []browserbackend.Released `json:"tabs,omitempty"`
	Call
}

// Detach ends the conversation's hold on its browsers: every provider
// detaches and forgets the conversation's tabs, which stay open
// (Selector.ReleaseConversation without close), and the conversation memo is
// forgotten, so the next call selects afresh and opens or adopts a tab anew.
func (t *Tools) Detach(ctx context.Context, inv browserbackend.Invocation, in ReleaseInput) (ReleaseResult, error) {
	return t.release(ctx, inv, in, "detach", false)
}

// Close is Detach that also closes what the conversation opened: every
// provider closes the tabs (or pages) the conversation opened; a user's tab
// it adopted is only detached.
func (t *Tools) Close(ctx context.Context, inv browserbackend.Invocation, in ReleaseInput) (ReleaseResult, error) {
	return t.release(ctx, inv, in, "close", true)
}

func (t *Tools) release(ctx context.Context, inv browserbackend.Invocation, in ReleaseInput, op string, closing bool) (ReleaseResult, error) {
	ctx, cancel, inv, err := t.prepare(ctx, op, inv, in.BrowserMode, in.TimeoutMs)
	if err != nil {
		return ReleaseResult{}, err
	}
	defer cancel()
	by := sessions.ClosedByAgent
	if closing {
		by = sessions.ClosedByClose
	}
	saveErr := t.managed.end(ctx, op, t, inv, by) // reads the browser before its tabs go
	t.kept.dropConversation(inv.ConversationID)   // before the tabs go: its Client must not outlive them
	t.viewports.Remove(inv.ConversationID)
	t.snaps.forget(inv.ConversationID)
	var res ReleaseResult
	res.Forgot, _ = t.sel.Memo().Get(inv.ConversationID)
	res.Backend = res.Forgot
	res.Tabs, err = t.sel.ReleaseConversation(ctx, inv.ConversationID, closing)
	if err != nil {
		return res, wrap(op, err)
	}
	return res, saveErr
}

// StatusInput is the browser_status tool input.
type StatusInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// Probe actively checks each proposed backend (Candidate.Probe); without
	// it availability is the providers' preflight only.
	Probe bool `json:"probe,omitempty"`
}

// Status is the browser_status tool; see the package-level Status.
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
	return Status(ctx, t.sel, inv, StatusOptions{Probe: in.Probe})
}
