package tools

import (
	"context"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/browserchain/browserchain/browserbackend"
)

// DevTools are the developer tools of the conversation's page: evaluate a
// function, read the console and the network, print a PDF, resize the
// viewport. It is a view of its Tools and as safe for concurrent use.
type DevTools struct{ t *Tools }

// Dev returns the developer tools.
func (t *Tools) Dev() DevTools { return DevTools{t} }

// Evaluate is the browser_evaluate tool: it runs Function in the page (on
// the element Target names, if any) and returns its value as JSON text, cut
// at MaxChars. Under a guard it is refused (forbidden, allow_scripts) unless
// the policy sets AllowScripts; a navigation it starts is checked like any
// other. A dialog it raises ends the call with the dialog (Call.Dialog).
func (d DevTools) Evaluate(ctx context.Context, inv browserbackend.Invocation, in EvaluateInput) (EvaluateResult, error) {
	return run(d.t, ctx, inv, spec{op: "evaluate", input: true, script: true, mode: in.BrowserMode, timeoutMs: in.TimeoutMs,
		def: DefaultActionTimeout, check: func() error { return checkEvaluate(in) }},
		func(ctx context.Context, p *Page) (EvaluateResult, error) { return p.evaluateFn(ctx, in) })
}

// Console is the browser_console_messages tool: the console messages,
// uncaught exceptions and browser log entries of the conversation's tab's
// current document (a navigation starts afresh; the browser keeps the last
// 1000), oldest first, filtered by level and text.
func (d DevTools) Console(ctx context.Context, inv browserbackend.Invocation, in ConsoleInput) (ConsoleResult, error) {
	return run(d.t, ctx, inv, spec{op: "console_messages", mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultActionTimeout,
		check: func() error { return checkConsole(in) }},
		func(ctx context.Context, p *Page) (ConsoleResult, error) { return p.console(ctx, in) })
}

// Network is the browser_network_requests tool: the requests of the
// conversation's tab's current document as its resource timing records
// them (URL, type, status, protocol, timing, size), oldest first. Request
// methods and bodies are not in resource timing and not reported.
func (d DevTools) Network(ctx context.Context, inv browserbackend.Invocation, in NetworkInput) (NetworkResult, error) {
	return run(d.t, ctx, inv, spec{op: "network_requests", mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultActionTimeout,
		check: func() error { return checkRange("network_requests", "limit", in.Limit, MaxNetworkLimit) }},
		func(ctx context.Context, p *Page) (NetworkResult, error) { return p.network(ctx, in) })
}

// PDF is the browser_pdf tool: it prints the page to a PDF file in the
// screenshot directory and returns its path and SHA-256.
func (d DevTools) PDF(ctx context.Context, inv browserbackend.Invocation, in PDFInput) (PDFResult, error) {
	return run(d.t, ctx, inv, spec{op: "pdf", mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultNavigateTimeout,
		check: func() error { return checkPDF(in) }},
		func(ctx context.Context, p *Page) (PDFResult, error) { return p.pdf(ctx, in) })
}

// Resize is the browser_resize tool: it sets the conversation's viewport
// (Emulation.setDeviceMetricsOverride; 0 × 0 clears it). A DevTools
// session's override ends with the session, so Tools sets it again at the
// start of each later call of the conversation (one command more per call),
// until Close, Detach or a 0 × 0 resize.
func (d DevTools) Resize(ctx context.Context, inv browserbackend.Invocation, in ViewportInput) (ViewportResult, error) {
	res, err := run(d.t, ctx, inv, spec{op: "resize", mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultActionTimeout,
		check: func() error { return checkViewport(in) }},
		func(ctx context.Context, p *Page) (ViewportResult, error) { return p.viewport(ctx, in) })
	if err == nil {
		if in.Width == 0 {
			d.t.viewports.Remove(inv.ConversationID)
		} else {
			d.t.viewports.Add(inv.ConversationID, in)
		}
	}
	return res, err
}

// maxViewports bounds the conversations whose viewport Tools remembers;
// beyond it the least recently used is forgotten.
const maxViewports = 4096

func newViewports() *lru.Cache[string, ViewportInput] {
	c, _ := lru.New[string, ViewportInput](maxViewports) // fails only for a size <= 0
	return c
}

// restoreViewport sets the conversation's viewport on a call's page, best
// effort: a failure here (a dialog is open, the page is gone) is the call's
// own to report.
func (t *Tools) restoreViewport(ctx context.Context, op string, inv browserbackend.Invocation, p *Page) {
	if op == "resize" {
		return
	}
	vp, ok := t.viewports.Get(inv.ConversationID)
	if !ok {
		return
	}
	if err := p.applyViewport(ctx, op, vp); err != nil {
		t.log.Debug("browser tool could not restore the viewport", "op", op, "conversationId", inv.ConversationID, "error", err)
	}
}

// GoBack is the browser_navigate_back tool: one entry back in the tab's
// history, waiting for that page to load; no earlier entry is
// CodeInvalidInput.
func (a ActTools) GoBack(ctx context.Context, inv browserbackend.Invocation, in HistoryInput) (HistoryResult, error) {
	return a.history(ctx, inv, "navigate_back", in, (*Page).back)
}

// GoForward is the browser_navigate_forward tool; see GoBack.
func (a ActTools) GoForward(ctx context.Context, inv browserbackend.Invocation, in HistoryInput) (HistoryResult, error) {
	return a.history(ctx, inv, "navigate_forward", in, (*Page).forward)
}

// Reload is the browser_reload tool: it reloads the tab's document and waits
// for it to load.
func (a ActTools) Reload(ctx context.Context, inv browserbackend.Invocation, in HistoryInput) (HistoryResult, error) {
	return a.history(ctx, inv, "reload", in, (*Page).reload)
}

func (a ActTools) history(ctx context.Context, inv browserbackend.Invocation, op string, in HistoryInput, fn func(*Page, context.Context) (HistoryResult, error)) (HistoryResult, error) {
	return run(a.t, ctx, inv, spec{op: op, mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultNavigateTimeout},
		func(ctx context.Context, p *Page) (HistoryResult, error) { return fn(p, ctx) })
}

// FillForm is the browser_fill_form tool: several text fields, selects,
// check boxes and radio buttons in one call, in order. Under a guard each
// field passes the checks browser_type does.
func (a ActTools) FillForm(ctx context.Context, inv browserbackend.Invocation, in FillFormInput) (FillFormResult, error) {
	return run(a.t, ctx, inv, spec{op: "fill_form", input: true, mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultActionTimeout,
		check: func() error { return checkFillForm(in) }, act: fillFormCheck(in)},
		func(ctx context.Context, p *Page) (FillFormResult, error) { return p.fillForm(ctx, in) })
}

// Drag is the browser_drag tool: it drags one element onto another, as a
// pointer drag or an HTML drag and drop, whichever the page starts.
func (a ActTools) Drag(ctx context.Context, inv browserbackend.Invocation, in DragInput) (DragResult, error) {
	return run(a.t, ctx, inv, spec{op: "drag", input: true, mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultActionTimeout,
		check: func() error { return checkDrag(in) }, act: actionCheck("drag", in.To, false, false)},
		func(ctx context.Context, p *Page) (DragResult, error) { return p.drag(ctx, in) })
}
