package browserbackend

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Class is the failure class of an Error. Only ClassTransport fails
// over under DefaultPolicy.
type Class string

// The failure classes.
const (
	// ClassTransport: no CDP answer was obtained (client gone, socket closed,
	// endpoint unreachable, launch failed).
	ClassTransport Class = "transport"
	// ClassProtocol: the browser, or chrome.debugger in the extension,
	// answered with an error.
	ClassProtocol Class = "protocol"
	// ClassTimeout: the deadline passed while a dispatched command was
	// unanswered; the outcome is unknown.
	ClassTimeout Class = "timeout"
	// ClassAborted: the caller cancelled.
	ClassAborted Class = "aborted"
	// ClassClosed: the client or backend was closed.
	ClassClosed Class = "closed"
	// ClassUnavailable: selection found no backend to try.
	ClassUnavailable Class = "unavailable"
	// ClassPolicy: the request was refused by a rule (invalid mode, a method
	// the backend does not support).
	ClassPolicy Class = "policy"
)

// Machine-readable error codes. Each code belongs to
// exactly one Class. Backends may define more codes of their own; these are
// the shared vocabulary the reference backends produce and the selector,
// status reports and remediation understand.
const (
	// Transport class.
	CodeTransportError  = "transport_error"
	CodeUnreachable     = "unreachable"
	CodeUnresponsive    = "unresponsive" // a transport step (probe, handshake, a bridge's own call) got no answer in time
	CodeNonLoopback     = "non_loopback"
	CodeNonChrome       = "non_chrome"
	CodeInvalidResponse = "invalid_response"
	CodeNoTargets       = "no_targets"
	CodeSessionNotFound = "cdp_session_not_found" // the flat session (its tab) is gone; also Chrome's -32001 reply
	CodeLaunchFailed    = "launch_failed"
	CodeNoClient        = "no_client"
	CodeTargetCrashed   = "target_crashed" // the page's renderer crashed under the command
	CodeBrowserGone     = "browser_gone"   // the browser process, or the driver that owns it, exited
	// Protocol class.
	CodeCDPError          = "cdp_error"
	CodeExtensionRequired = "extension_required"
	CodeDialogOpen        = "dialog_open" // a JavaScript dialog blocks the tab: answer it with Page.handleJavaScriptDialog
	// Timeout class.
	CodeTimeout = "timeout"
	// Aborted class.
	CodeCancelled = "cancelled"
	// Closed class.
	CodeClosed      = "closed"
	CodePageEvicted = "page_evicted" // the conversation's idle page was closed to honour a page cap: navigate again
	// CodePageLost: the conversation's page went away since its last
	// command (its renderer crashed, its browser exited) and nothing was
	// sent; its URL and content are gone. A Page.navigate brings a page
	// back (a crashed tab gets a new renderer, local opens a fresh page), so
	// the next navigation works; any other command would read a blank or
	// dead page, so it gets this error instead.
	CodePageLost = "page_lost"
	// Unavailable class.
	CodeNoCandidates      = "no_candidates"
	CodeTargetUnavailable = "target_unavailable" // the invocation's target client is not connected
	// Protocol class, from a client's plain-text error answer: the tab or
	// target it names does not exist; the browser refuses to debug it (a
	// chrome:// page, another extension's page); anything else; and a result
	// over the server's body cap (the command ran, its answer is lost).
	CodeTargetNotFound  = "target_not_found"
	CodeForbiddenTarget = "forbidden_target"
	CodeClientError     = "client_error"
	CodePayloadTooLarge = "payload_too_large"
	// Policy class.
	CodeNotSupported  = "not_supported"
	CodeInvalidMode   = "invalid_mode"
	CodeInvalidParams = "invalid_params"
	// Skip codes (SkipError.Code), never an Error's.
	CodeCooldown      = "cooldown"
	CodeNotConfigured = "not_configured"
)

// Error is the one error type of the library. Backends classify their
// failures into an *Error where they arise; the selector never inspects error
// text.
//
// An *Error with only some fields set is a pattern for errors.Is: every
// non-zero field among Class, Code and CDPCode must match. The exported
// sentinels below are such patterns, so errors.Is(err, ErrTransport) or
// errors.Is(err, ErrMethodNotFound) work on any error chain.
type Error struct {
	Class Class
	// Code is machine-readable, e.g. CodeUnreachable.
	Code string
	// CDPCode is the JSON-RPC error code of a CDP error reply (-32601 …).
	CDPCode int
	// Method is the CDP method being sent, when there was one.
	Method string
	// Backend is the backend kind that failed, when known.
	Backend Kind
	// Dispatched reports whether the command may have reached a browser.
	Dispatched bool
	// Detail is a finer, backend-specific code of how the backend found its
	// browser, when relevant: cdp-inspect's discovery outcome, shown as the
	// "discovery code" of selection reports.
	Detail string
	// Diagnostics, set on ClassTimeout errors by backends that track their
	// commands, says what the backend was doing when the deadline passed.
	Diagnostics *Diagnostics
	// Message is a human-readable description without the package prefix.
	Message string
	// Err is the underlying cause, if any.
	Err error
}

// Diagnostics describes a backend's state when one of its commands timed out,
// so that a person can act on the timeout. Durations are rounded to the
// millisecond; a zero duration means unknown.
type Diagnostics struct {
	// InFlight is how many commands were waiting on the backend, the timed
	// out one included.
	InFlight int `json:"inFlight"`
	// OldestInFlight is the age of the oldest of them.
	OldestInFlight time.Duration `json:"oldestInFlight"`
	// SinceLastAnswer is how long ago the backend last answered any command;
	// equal to Uptime when it never answered.
	SinceLastAnswer time.Duration `json:"sinceLastAnswer"`
	// Uptime is how long the backend (its connection or browser) has existed.
	Uptime time.Duration `json:"uptime"`
}

// String renders the diagnostics for error text and reports: "N in flight",
// then the oldest one's age when N > 0, the time since the last answer when
// known, and the uptime, or "not up" when it is zero (a timeout while the
// backend was still starting, e.g. a relaunch).
func (d Diagnostics) String() string {
	r := func(x time.Duration) time.Duration { return x.Round(time.Millisecond) }
	var b strings.Builder
	fmt.Fprintf(&b, "%d in flight", d.InFlight)
	if d.InFlight > 0 {
		fmt.Fprintf(&b, ", oldest %v", r(d.OldestInFlight))
	}
	if d.SinceLastAnswer > 0 {
		fmt.Fprintf(&b, ", last answer %v ago", r(d.SinceLastAnswer))
	}
	if d.Uptime > 0 {
		fmt.Fprintf(&b, ", up %v", r(d.Uptime))
	} else {
		b.WriteString(", not up")
	}
	return b.String()
}

// Error renders "browserbackend: <backend> <method> <class>[/code] (cdp):
// message[ (diagnostics)]: cause", once: a cause that is an *Error adds only
// what the outer error does not already say, a class that equals its code is
// written once, and a cause whose text the message already contains (or that
// contains the message) is not repeated.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("browserbackend: ")
	e.render(&b, nil)
	return b.String()
}

func (e *Error) render(b *strings.Builder, outer *Error) {
	head := ""
	if e.Backend != "" && (outer == nil || outer.Backend != e.Backend) {
		head = string(e.Backend)
	}
	if e.Method != "" && (outer == nil || outer.Method != e.Method) {
		head = strings.TrimSpace(head + " " + e.Method)
	}
	if head != "" {
		b.WriteString(head)
		b.WriteString(" ")
	}
	class := string(e.Class)
	if e.Code != "" && e.Code != class {
		if class != "" {
			class += "/"
		}
		class += e.Code
	}
	if class == "" {
		class = "error"
	}
	b.WriteString(class)
	if e.CDPCode != 0 {
		fmt.Fprintf(b, " (%d)", e.CDPCode)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Diagnostics != nil {
		b.WriteString(" (")
		b.WriteString(e.Diagnostics.String())
		b.WriteString(")")
	}
	e.renderCause(b)
}

func (e *Error) renderCause(b *strings.Builder) {
	if e.Err == nil {
		return
	}
	var inner *Error
	if errors.As(e.Err, &inner) {
		if inner.redundantUnder(e) {
			// The inner error says what e says: only its cause is news.
			(&Error{Message: e.Message, Err: inner.Err}).renderCause(b)
			return
		}
		b.WriteString(": ")
		inner.render(b, e)
		return
	}
	cause := strings.TrimPrefix(e.Err.Error(), "browserbackend: ")
	if e.Message != "" && (strings.Contains(e.Message, cause) || strings.Contains(cause, e.Message)) {
		return
	}
	b.WriteString(": ")
	b.WriteString(cause)
}

// redundantUnder reports whether e's own fields say nothing that outer does
// not already say (its cause may still be news).
func (e *Error) redundantUnder(outer *Error) bool {
	return (e.Class == "" || e.Class == outer.Class) && (e.Code == "" || e.Code == outer.Code) &&
		(e.CDPCode == 0 || e.CDPCode == outer.CDPCode) && (e.Message == "" || e.Message == outer.Message) &&
		e.Diagnostics == nil
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches target when target is an *Error whose non-zero Class, Code and
// CDPCode all equal e's. A target with none of them set matches nothing.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok || (t.Class == "" && t.Code == "" && t.CDPCode == 0) {
		return false
	}
	return (t.Class == "" || t.Class == e.Class) &&
		(t.Code == "" || t.Code == e.Code) &&
		(t.CDPCode == 0 || t.CDPCode == e.CDPCode)
}

// Class sentinels, for errors.Is. ErrAborted is also "cancelled by the
// caller" (its only code is CodeCancelled).
var (
	ErrTransport   = &Error{Class: ClassTransport}
	ErrProtocol    = &Error{Class: ClassProtocol}
	ErrTimeout     = &Error{Class: ClassTimeout}
	ErrAborted     = &Error{Class: ClassAborted}
	ErrClosed      = &Error{Class: ClassClosed}
	ErrUnavailable = &Error{Class: ClassUnavailable}
	ErrPolicy      = &Error{Class: ClassPolicy}
)

// Code sentinels, for errors.Is. ErrSessionNotFound matches both a session
// the backend reported gone and Chrome's own -32001 reply.
var (
	ErrUnreachable       = &Error{Code: CodeUnreachable}
	ErrNonLoopback       = &Error{Code: CodeNonLoopback}
	ErrNonChrome         = &Error{Code: CodeNonChrome}
	ErrInvalidResponse   = &Error{Code: CodeInvalidResponse}
	ErrNoTargets         = &Error{Code: CodeNoTargets}
	ErrSessionNotFound   = &Error{Code: CodeSessionNotFound}
	ErrTargetCrashed     = &Error{Code: CodeTargetCrashed}
	ErrPageLost          = &Error{Code: CodePageLost}
	ErrPageEvicted       = &Error{Code: CodePageEvicted}
	ErrExtensionRequired = &Error{Code: CodeExtensionRequired}
	ErrNotSupported      = &Error{Code: CodeNotSupported}
)

// CDP (JSON-RPC) error-code sentinels, for errors.Is on CDP error replies.
var (
	ErrParseError     = &Error{CDPCode: -32700}
	ErrInvalidRequest = &Error{CDPCode: -32600}
	ErrMethodNotFound = &Error{CDPCode: -32601}
	ErrInvalidParams  = &Error{CDPCode: -32602}
	ErrInternalError  = &Error{CDPCode: -32603}
	ErrServerError    = &Error{CDPCode: -32000}
)

// cdpSessionNotFound is Chrome's reply code for a sessionId it does not know.
const cdpSessionNotFound = -32001

// TransportError returns a ClassTransport *Error. cause may be nil.
func TransportError(code, msg string, cause error) *Error {
	return &Error{Class: ClassTransport, Code: code, Message: msg, Err: cause}
}

// ProtocolError classifies a CDP error reply with the given JSON-RPC code and
// message: a ClassProtocol *Error with code CodeCDPError, except Chrome's
// -32001 ("Session with given id not found"), which means the command's
// session (its tab) is gone: that is ErrSessionNotFound, ClassTransport, as
// when a backend reports the session gone itself.
func ProtocolError(cdpCode int, msg string) *Error {
	if cdpCode == cdpSessionNotFound {
		return &Error{Class: ClassTransport, Code: CodeSessionNotFound, CDPCode: cdpCode, Message: msg, Dispatched: true}
	}
	return &Error{Class: ClassProtocol, Code: CodeCDPError, CDPCode: cdpCode, Message: msg}
}

// Classify returns err as an *Error, classifying it once if it is not one
// already: context cancellation → ClassAborted/CodeCancelled, a passed
// deadline → ClassTimeout (dispatched as given), anything else →
// ClassTransport/CodeTransportError. An existing *Error in the chain is
// returned as is (the same pointer). Classify(nil) is nil.
func Classify(err error, dispatched bool) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	switch {
	case errors.Is(err, context.Canceled):
		return &Error{Class: ClassAborted, Code: CodeCancelled, Dispatched: dispatched, Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Class: ClassTimeout, Code: CodeTimeout, Dispatched: dispatched, Err: err}
	}
	return &Error{Class: ClassTransport, Code: CodeTransportError, Dispatched: dispatched, Err: err}
}

// Stage is where an attempt ended.
type Stage string

// The stages of an attempt, in the order an attempt passes them.
const (
	StageCandidateSelection Stage = "candidate_selection"
	StageConstruction       Stage = "construction"
	StageSend               Stage = "send"
	StageSuccess            Stage = "success"
)

// Attempt records one candidate considered for an invocation: skipped at
// selection, failed at construction or send, or succeeded.
type Attempt struct {
	Kind    Kind   `json:"kind"`
	Reason  string `json:"reason,omitempty"`
	Stage   Stage  `json:"stage"`
	Class   Class  `json:"class,omitempty"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// Detail is the failure's Error.Detail (cdp-inspect's discovery code).
	Detail string `json:"detail,omitempty"`
	// Yielded marks a skip whose provider stood aside for another
	// candidate (see Yield): nothing for a person to fix.
	Yielded bool `json:"yielded,omitempty"`
	// Diagnostics is the failure's Error.Diagnostics.
	Diagnostics *Diagnostics `json:"diagnostics,omitempty"`
	// Remembered marks a try of the conversation's remembered kind (Memo),
	// made before the auto list; the same kind may appear again later.
	Remembered bool `json:"remembered,omitempty"`
	// Elapsed is how long the attempt took, from building the candidate to
	// its first answer or failure; 0 for a skip. JSON: nanoseconds.
	Elapsed time.Duration `json:"elapsed,omitempty"`
	// Err is the failure, nil for a success.
	Err error `json:"-"`
}

// SelectionError is returned when no candidate served the first command of
// an invocation, or selection itself failed. It lists every
// attempt in order and a remediation checklist; errors.Is/As see through it to
// every attempt's error, and to the deciding error first.
type SelectionError struct {
	// Mode is the requested mode (canonical name).
	Mode Mode
	// Pinned is true when the mode pinned one backend (or a target client).
	Pinned bool
	// TargetClientID is the client the invocation was aimed at, if any.
	TargetClientID string
	// Attempts are the candidates considered, in order.
	Attempts []Attempt
	// Remediation is a checklist for a person, chosen by backend, code and
	// transport.
	Remediation []string
	// Err is the deciding error: the last failure, or the selection failure.
	Err error
}

// Error summarises the requested mode and the attempt sequence.
func (e *SelectionError) Error() string {
	var b strings.Builder
	if e.TargetClientID != "" {
		fmt.Fprintf(&b, "browserbackend: requested target client %q is unavailable", e.TargetClientID)
	} else if e.Pinned {
		fmt.Fprintf(&b, "browserbackend: requested browser_mode %q is unavailable", e.Mode)
	} else {
		fmt.Fprintf(&b, "browserbackend: no browser backend available (mode %q)", e.Mode)
	}
	for i, a := range e.Attempts {
		if i == 0 {
			b.WriteString("; attempts: ")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s@%s", a.Kind, a.Stage)
		if a.Code != "" {
			fmt.Fprintf(&b, "[%s]", a.Code)
		}
	}
	if e.Err != nil && len(e.Attempts) == 0 {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the deciding error followed by every attempt's error.
func (e *SelectionError) Unwrap() []error {
	errs := make([]error, 0, len(e.Attempts)+1)
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	for _, a := range e.Attempts {
		if a.Err != nil && a.Err != e.Err {
			errs = append(errs, a.Err)
		}
	}
	return errs
}

// Report renders the failure for a person: the requested mode, each attempt
// with stage, code, message and discovery code, and the remediation list.
func (e *SelectionError) Report() string {
	var b strings.Builder
	if e.TargetClientID != "" {
		fmt.Fprintf(&b, "Requested target client %q (browser_mode %q) is unavailable.\n", e.TargetClientID, e.Mode)
	} else if e.Pinned {
		fmt.Fprintf(&b, "Requested browser_mode %q is unavailable.\n", e.Mode)
	} else {
		fmt.Fprintf(&b, "No browser backend was available (browser_mode %q).\n", e.Mode)
	}
	b.WriteString("Attempted backends:\n")
	if len(e.Attempts) == 0 {
		b.WriteString("  (none)\n")
	}
	for i, a := range e.Attempts {
		fmt.Fprintf(&b, "  %d. %s — stage %s", i+1, a.Kind, a.Stage)
		if a.Code != "" {
			fmt.Fprintf(&b, ", code %s", a.Code)
		}
		if a.Detail != "" {
			fmt.Fprintf(&b, ", discovery %s", a.Detail)
		}
		if a.Message != "" {
			fmt.Fprintf(&b, ": %s", a.Message)
		}
		if a.Diagnostics != nil {
			fmt.Fprintf(&b, " (%s)", a.Diagnostics)
		}
		b.WriteString("\n")
	}
	if len(e.Remediation) > 0 {
		b.WriteString("To fix:\n")
		for _, r := range e.Remediation {
			fmt.Fprintf(&b, "  - %s\n", r)
		}
	}
	return b.String()
}
