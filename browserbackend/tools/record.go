package tools

import (
	"context"
	"errors"

	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/recorder"
)

// recorderFor returns the recorder of a call: the one in ctx
// (recorder.NewContext) when there is one, else Options.Recorder. nil
// means the call is not recorded.
func (t *Tools) recorderFor(ctx context.Context) *recorder.Recorder {
	if r, ok := recorder.FromContext(ctx); ok {
		return r
	}
	return t.rec
}

// Recorder returns Options.Recorder (nil when the tools do not record).
func (t *Tools) Recorder() *recorder.Recorder { return t.rec }

// recordServed records how the call was served: its selection (none when
// kept, a Client an earlier call selected) and the dialog it met. A nil rc
// records nothing.
func recordServed(rc *recorder.Call, call Call, kept bool) {
	if rc == nil {
		return
	}
	attempts := call.Attempts
	if kept {
		attempts = nil
	}
	rc.Served(call.Backend, call.TabID, attempts)
	if d := call.Dialog; d != nil {
		rc.Event(recorder.PageEvent{Type: "dialog", Detail: d.Type + ": " + d.Message, URL: d.URL, Handled: d.Handled})
	}
}

// recordEnd records the call's outcome and the guard's decision on it: a
// refusal (the *guard.Error in err), or allowed when a guard was on and the
// call succeeded.
func recordEnd(rc *recorder.Call, guarded bool, err error) {
	var ge *guard.Error
	switch {
	case errors.As(err, &ge):
		rc.Guard(recorder.GuardDecision{Code: ge.Code, Param: ge.Param, Rule: ge.Rule, URL: ge.URL, Message: ge.Message})
	case guarded && err == nil:
		rc.Guard(recorder.GuardDecision{Allowed: true})
	}
	code := ""
	var te *Error
	if errors.As(err, &te) {
		code = te.Code
	}
	rc.End(code, err)
}

// recordedResult is a tool result with more to record than its Call: a
// screenshot, an action's effects.
type recordedResult interface {
	record(rc *recorder.Call)
}

// recordResult records what a successful call's result holds beyond its
// Call; a nil rc records nothing.
func recordResult(rc *recorder.Call, res any) {
	if r, ok := res.(recordedResult); ok && rc != nil {
		r.record(rc)
	}
}

func (r *ScreenshotResult) record(rc *recorder.Call) {
	rc.Screenshot(recorder.Shot{Path: r.Path, SHA256: r.SHA256, MediaType: r.MediaType,
		Width: r.Width, Height: r.Height, Size: r.Size, URL: r.URL})
}

// record records the windows an action opened, the navigation it started
// and the downloads.
func (e *Effects) record(rc *recorder.Call) {
	for _, u := range e.Opened {
		rc.Event(recorder.PageEvent{Type: "popup", URL: u})
	}
	if n := e.Navigated; n != nil {
		rc.Event(recorder.PageEvent{Type: "navigation", URL: n.URL, Detail: n.Title})
	}
	for _, d := range e.Downloads {
		detail := d.FileName + " (" + d.State + ")"
		if d.Path != "" {
			detail += ", saved as " + d.Path + ", sha256 " + d.SHA256
		}
		rc.Event(recorder.PageEvent{Type: "download", URL: d.URL, Detail: detail})
	}
}

// record references the PDF file (its bytes are not kept).
func (r *PDFResult) record(rc *recorder.Call) {
	rc.Event(recorder.PageEvent{Type: "pdf", URL: r.URL, Detail: r.Path + ", sha256 " + r.SHA256})
}
