package tools

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
)

// DialogPolicy says what Tools do with a JavaScript dialog (alert, confirm,
// prompt, beforeunload) the conversation's page opens. While a dialog is
// open the page answers nothing else.
type DialogPolicy int

const (
	// DialogReport (the default) leaves the dialog open for the agent: an
	// action that raised it returns with Call.Dialog set, any other call
	// fails with CodeDialogOpen naming it (within a second of its opening,
	// and at once when it was open before the call), until HandleDialog
	// answers it.
	DialogReport DialogPolicy = iota
	// DialogAccept accepts every dialog as it opens (a prompt gets its
	// default text) and goes on; the call reports it in Call.Dialog.
	DialogAccept
	// DialogDismiss dismisses every dialog as it opens and goes on; the
	// call reports it in Call.Dialog.
	DialogDismiss
)

// Handled values of DialogEvent.
const (
	DialogAccepted  = "accepted"
	DialogDismissed = "dismissed"
)

// DialogEvent is a dialog a call met.
type DialogEvent struct {
	browserbackend.Dialog
	// Handled is DialogAccepted or DialogDismissed when the call answered
	// it, "" when it is still open.
	Handled string `json:"handled,omitempty"`
}

type dialogPolicyKey struct{}

// WithDialogPolicy returns a ctx under which tool calls use p instead of
// Options.Dialogs.
func WithDialogPolicy(ctx context.Context, p DialogPolicy) context.Context {
	return context.WithValue(ctx, dialogPolicyKey{}, p)
}

func (t *Tools) dialogPolicy(ctx context.Context) DialogPolicy {
	if p, ok := ctx.Value(dialogPolicyKey{}).(DialogPolicy); ok {
		return p
	}
	return t.dialogs
}

// errDialogOpened is the cancel cause of a call a reported dialog ended.
var errDialogOpened = errors.New("tools: a dialog opened")

// dialogOpenErr is the error of a call that met a dialog it leaves open.
func dialogOpenErr(op string, d browserbackend.Dialog, cause error) *Error {
	return &Error{Op: op, Code: CodeDialogOpen, Dialog: &d,
		Message: "a JavaScript " + d.String() + " is open on the page; accept or dismiss it first", Err: cause}
}

// answerDialog sends Page.handleJavaScriptDialog on s; promptText is used
// by an accepted prompt.
func answerDialog(ctx context.Context, s cdp.Session, accept bool, promptText string) error {
	params := page.HandleJavaScriptDialogParams{Accept: accept, PromptText: promptText}
	_, err := cdp.Call(ctx, s, page.HandleJavaScriptDialog, params)
	return err
}

// withDialogs runs fn under the dialog policy pol on c: a dialog that
// opens while fn runs is answered (accept, dismiss) or ends fn at once
// (report); a dialog open before fn makes the backend refuse fn's first
// command (CodeDialogOpen), and fn runs once more after a policy answered
// it. It returns what the call met, nil when no dialog was seen.
func withDialogs[R any](ctx context.Context, c *browserbackend.Client, pol DialogPolicy, act bool, op string,
	fn func(ctx context.Context) (R, error)) (R, *DialogEvent, error) {
	var zero R
	events, stop := c.Events(browserbackend.MethodDialogOpening)
	defer stop()
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var mu sync.Mutex
	var seen *DialogEvent
	quit := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					return
				}
				var d browserbackend.Dialog
				if json.Unmarshal(ev.Params, &d) != nil {
					continue
				}
				e := &DialogEvent{Dialog: d}
				if pol != DialogReport {
					if answerDialog(ctx, c, pol == DialogAccept, d.DefaultPrompt) == nil {
						e.Handled = handledName(pol == DialogAccept)
					}
				}
				mu.Lock()
				seen = e
				mu.Unlock()
				if e.Handled == "" {
					cancel(errDialogOpened)
					return
				}
			case <-quit:
				return
			}
		}
	}()
	r, err := fn(fctx)
	close(quit)
	<-watched
	mu.Lock()
	met := seen
	mu.Unlock()

	if met == nil && isDialogOpen(err) {
		// The backend refused the call's first command: a dialog was open
		// before the call. A backend that does not watch dialogs itself
		// (its browser client does) cannot say which.
		d, known := c.OpenDialog()
		if pol == DialogReport {
			if !known {
				return zero, nil, &Error{Op: op, Code: CodeDialogOpen,
					Message: "a JavaScript dialog is open on the page; accept or dismiss it first", Err: err}
			}
			return zero, &DialogEvent{Dialog: d}, dialogOpenErr(op, d, err)
		}
		accept := pol == DialogAccept
		if aerr := answerDialog(ctx, c, accept, d.DefaultPrompt); aerr != nil {
			return zero, nil, aerr
		}
		r, err = fn(ctx)
		return r, &DialogEvent{Dialog: d, Handled: handledName(accept)}, err
	}
	if met != nil && met.Handled == "" {
		if act {
			// The action went out and raised the dialog: it did what was
			// asked; the dialog is its outcome.
			return r, met, nil
		}
		return zero, met, dialogOpenErr(op, met.Dialog, nil)
	}
	return r, met, err
}

func handledName(accept bool) string {
	if accept {
		return DialogAccepted
	}
	return DialogDismissed
}

func isDialogOpen(err error) bool {
	var be *browserbackend.Error
	return errors.As(err, &be) && be.Code == browserbackend.CodeDialogOpen
}

// HandleDialogInput is the input of HandleDialog.
type HandleDialogInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// Accept accepts the dialog (OK); false dismisses it (Cancel).
	Accept bool `json:"accept"`
	// PromptText is the answer an accepted prompt returns; "" leaves the
	// prompt's default.
	PromptText string `json:"prompt_text,omitempty"`
}

// HandleDialogResult is the result of HandleDialog; Call.Dialog is the
// dialog answered, when the backend reports it.
type HandleDialogResult struct {
	Call
}

// HandleDialog answers the JavaScript dialog open on the page
// (Page.handleJavaScriptDialog). No dialog open is CodeNoDialog.
func (p *Page) HandleDialog(ctx context.Context, in HandleDialogInput) (HandleDialogResult, error) {
	const op = "handle_dialog"
	text := in.PromptText
	if !in.Accept {
		text = ""
	}
	if err := answerDialog(ctx, p.s, in.Accept, text); err != nil {
		var be *browserbackend.Error
		if errors.As(err, &be) && be.Class == browserbackend.ClassProtocol {
			return HandleDialogResult{}, &Error{Op: op, Code: CodeNoDialog, Message: "no dialog is open on the page", Err: err}
		}
		return HandleDialogResult{}, wrap(op, err)
	}
	return HandleDialogResult{}, nil
}

// HandleDialog is the browser_handle_dialog tool: it answers the dialog open
// on the conversation's page; see Page.HandleDialog. The result's
// Call.Dialog names the dialog when the call's Client knew it before
// answering (a kept Client on a backend with browserbackend.CapDialogs).
func (a ActTools) HandleDialog(ctx context.Context, inv browserbackend.Invocation, in HandleDialogInput) (HandleDialogResult, error) {
	return run(a.t, ctx, inv, spec{op: "handle_dialog", mode: in.BrowserMode, timeoutMs: in.TimeoutMs,
		def: DefaultActionTimeout, dialogOK: true, secret: true},
		func(ctx context.Context, p *Page) (HandleDialogResult, error) {
			c, _ := p.base.(*browserbackend.Client)
			var open browserbackend.Dialog
			known := false
			if c != nil {
				open, known = c.OpenDialog() // a kept Client's backend is selected already
			}
			res, err := p.HandleDialog(ctx, in)
			if err == nil && known {
				res.Dialog = &DialogEvent{Dialog: open, Handled: handledName(in.Accept)}
			}
			return res, err
		})
}
