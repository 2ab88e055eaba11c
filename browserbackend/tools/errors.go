package tools

import (
	"errors"
	"strings"

	"github.com/browserchain/browserchain/browserbackend"
)

// Error codes of the tools package. Backend failures keep their
// browserbackend codes in the wrapped error; these name what went wrong at the
// level of a tool call.
const (
	// CodeInvalidMode: browser_mode is not an accepted value. The
	// wrapped error is browserbackend's ClassPolicy / CodeInvalidMode error.
	CodeInvalidMode = "invalid_mode"
	// CodeInvalidInput: a required field is missing or a value is out of
	// range. Nothing was sent to a browser.
	CodeInvalidInput = "invalid_input"
	// CodeNotFound: no element matches the ref or selector (or the ref is
	// stale: its node is gone).
	CodeNotFound = "not_found"
	// CodeNavigationFailed: the browser refused or failed the navigation
	// (Page.navigate answered with errorText, e.g. net::ERR_CONNECTION_REFUSED).
	CodeNavigationFailed = "navigation_failed"
	// CodeTimeout: the operation's deadline passed (a wait that never became
	// true, a load event that never came). The wrapped error, when a command
	// was in flight, is browserbackend's ClassTimeout error.
	CodeTimeout = "timeout"
	// CodePageError: a script the tool ran in the page threw.
	CodePageError = "page_error"
	// CodeBackend: the backend failed; the wrapped error is a
	// *browserbackend.Error or *browserbackend.SelectionError.
	CodeBackend = "backend_error"
	// CodeIO: the screenshot file could not be written.
	CodeIO = "io_error"
	// CodeDialogOpen: a JavaScript dialog is open on the page (Error.Dialog
	// says which); nothing else runs there until HandleDialog answers it.
	CodeDialogOpen = "dialog_open"
	// CodeNoDialog: HandleDialog found no dialog open.
	CodeNoDialog = "no_dialog"
)

// Error is the error of every operation in this package. Op is the tool
// operation ("navigate", "click", …), Code one of the Code* constants, and
// Err the cause (often a *browserbackend.Error or *browserbackend.SelectionError,
// so errors.Is(err, browserbackend.ErrTransport) and errors.As work through
// it).
//
// An *Error with only Code set is a pattern for errors.Is: ErrNotFound,
// ErrTimeout, … match any *Error with that code.
type Error struct {
	Op      string
	Code    string
	Message string
	// Backend is the backend that served the call when it failed after
	// selection ("" when selection itself failed or nothing was sent).
	Backend browserbackend.Kind
	// Dialog is the open dialog of a CodeDialogOpen error.
	Dialog *browserbackend.Dialog
	Err    error
}

// Error formats "tools: <op>: <code>: message: cause".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("tools: ")
	e.render(&b, "")
	return b.String()
}

// render writes e once: the op only when the outer error did not name it, the
// code only when the cause does not already say it (a backend timeout under
// CodeTimeout), the message only when the cause does not contain it.
func (e *Error) render(b *strings.Builder, outerOp string) {
	if e.Op != "" && e.Op != outerOp {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	var inner *Error
	if errors.As(e.Err, &inner) {
		parts := e.heads(inner.Code == e.Code, inner.Message == e.Message)
		writeParts(b, parts, true)
		inner.render(b, e.Op)
		return
	}
	cause := ""
	saysCode := false
	if e.Err != nil {
		cause = e.Err.Error()
		var be *browserbackend.Error
		saysCode = errors.As(e.Err, &be) && (string(be.Class) == e.Code || be.Code == e.Code)
	}
	parts := e.heads(saysCode, strings.Contains(cause, e.Message))
	if len(parts) == 0 && cause == "" {
		parts = []string{e.Code}
	}
	writeParts(b, parts, cause != "")
	b.WriteString(cause)
}

// heads returns the code and message e adds, leaving out what its cause says.
func (e *Error) heads(causeSaysCode, causeSaysMessage bool) []string {
	var parts []string
	if !causeSaysCode {
		parts = append(parts, e.Code)
	}
	if e.Message != "" && !causeSaysMessage {
		parts = append(parts, e.Message)
	}
	return parts
}

func writeParts(b *strings.Builder, parts []string, more bool) {
	b.WriteString(strings.Join(parts, ": "))
	if more && len(parts) > 0 {
		b.WriteString(": ")
	}
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches a pattern *Error whose Code equals e.Code (and whose Op, when
// set, equals e.Op).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok || t.Code == "" {
		return false
	}
	return t.Code == e.Code && (t.Op == "" || t.Op == e.Op)
}

// Code sentinels, for errors.Is.
var (
	ErrInvalidMode      = &Error{Code: CodeInvalidMode}
	ErrInvalidInput     = &Error{Code: CodeInvalidInput}
	ErrNotFound         = &Error{Code: CodeNotFound}
	ErrNavigationFailed = &Error{Code: CodeNavigationFailed}
	ErrTimeout          = &Error{Code: CodeTimeout}
	ErrPageError        = &Error{Code: CodePageError}
	ErrBackend          = &Error{Code: CodeBackend}
	ErrDialogOpen       = &Error{Code: CodeDialogOpen}
	ErrNoDialog         = &Error{Code: CodeNoDialog}
)

func invalidInput(op, msg string) error {
	return &Error{Op: op, Code: CodeInvalidInput, Message: msg}
}

// wrap turns a failure during op into an *Error, keeping an existing one. A
// browserbackend timeout becomes CodeTimeout; everything else from a backend
// is CodeBackend.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var te *Error
	if errors.As(err, &te) {
		if te.Op == "" {
			cp := *te
			cp.Op = op
			return &cp
		}
		return err
	}
	if errors.Is(err, browserbackend.ErrTimeout) {
		return &Error{Op: op, Code: CodeTimeout, Err: err}
	}
	return &Error{Op: op, Code: CodeBackend, Err: err}
}
