package browserbackend

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Class is the failure class of an Error (SEL-10). Only ClassTransport fails
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

// Machine-readable error codes (SEL-10, INS-1, PXY-6). Backends may define
// more; these are the ones the library itself produces or classifies.
const (
	CodeTransportError    = "transport_error"
	CodeUnreachable       = "unreachable"
	CodeTimeout           = "timeout"
	CodeNonLoopback       = "non_loopback"
	CodeNonChrome         = "non_chrome"
	CodeInvalidResponse   = "invalid_response"
	CodeNoTargets         = "no_targets"
	CodeSessionNotFound   = "cdp_session_not_found"
	CodeCancelled         = "cancelled"
	CodeExtensionRequired = "extension_required"
	CodeLaunchFailed      = "launch_failed"
	CodeNoClient          = "no_client"
	CodeCDPError          = "cdp_error"
	CodeClosed            = "closed"
	CodeCooldown          = "cooldown"
	CodeNotConfigured     = "not_configured"
	CodeNotSupported      = "not_supported"
	CodeInvalidMode       = "invalid_mode"
	CodeInvalidParams     = "invalid_params"
	CodeNoCandidates      = "no_candidates"
	// CodeTargetNotFound, CodeForbiddenTarget and CodeClientError are the
	// protocol-class codes of a client's plain-text error answer (WIRE-2):
	// the tab or target it names does not exist; the browser refuses to
	// debug it (a chrome:// page, another extension's page); anything else.
	CodeTargetNotFound  = "target_not_found"
	CodeForbiddenTarget = "forbidden_target"
	CodeClientError     = "client_error"
	// CodePayloadTooLarge: the client's result exceeded the server's body
	// cap (WIRE-5); the command ran, its answer is lost.
	CodePayloadTooLarge = "payload_too_large"
)

// Error is the one error type of the library (SEL-10). Backends classify their
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
	// CDPCode is the JSON-RPC error code of a protocol error (-32601 …).
	CDPCode int
	// Method is the CDP method being sent, when there was one.
	Method string
	// Backend is the backend kind that failed, when known.
	Backend Kind
	// Dispatched reports whether the command may have reached a browser.
	Dispatched bool
	// DiscoveryCode is the cdp-inspect discovery outcome, when relevant.
	DiscoveryCode string
	// Message is a human-readable description without the package prefix.
	Message string
	// Err is the underlying cause, if any.
	Err error
}

// Error formats the error as "browserbackend: <backend> <method>: <class>[/code]: message: cause".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("browserbackend: ")
	if e.Backend != "" {
		b.WriteString(string(e.Backend))
		b.WriteString(" ")
	}
	if e.Method != "" {
		b.WriteString(e.Method)
		b.WriteString(" ")
	}
	b.WriteString(string(e.Class))
	if e.Code != "" {
		b.WriteString("/")
		b.WriteString(e.Code)
	}
	if e.CDPCode != 0 {
		fmt.Fprintf(&b, " (%d)", e.CDPCode)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
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

// Class sentinels, for errors.Is.
var (
	ErrTransport   = &Error{Class: ClassTransport}
	ErrProtocol    = &Error{Class: ClassProtocol}
	ErrTimeout     = &Error{Class: ClassTimeout}
	ErrAborted     = &Error{Class: ClassAborted}
	ErrClosed      = &Error{Class: ClassClosed}
	ErrUnavailable = &Error{Class: ClassUnavailable}
	ErrPolicy      = &Error{Class: ClassPolicy}
)

// Code sentinels, for errors.Is.
var (
	ErrUnreachable       = &Error{Code: CodeUnreachable}
	ErrNonLoopback       = &Error{Code: CodeNonLoopback}
	ErrNonChrome         = &Error{Code: CodeNonChrome}
	ErrInvalidResponse   = &Error{Code: CodeInvalidResponse}
	ErrNoTargets         = &Error{Code: CodeNoTargets}
	ErrSessionNotFound   = &Error{Code: CodeSessionNotFound}
	ErrCancelled         = &Error{Code: CodeCancelled}
	ErrExtensionRequired = &Error{Code: CodeExtensionRequired}
	ErrNotSupported      = &Error{Code: CodeNotSupported}
)

// CDP (JSON-RPC) error-code sentinels, for errors.Is on protocol errors.
var (
	ErrParseError     = &Error{CDPCode: -32700}
	ErrInvalidRequest = &Error{CDPCode: -32600}
	ErrMethodNotFound = &Error{CDPCode: -32601}
	ErrInvalidParams  = &Error{CDPCode: -32602}
	ErrInternalError  = &Error{CDPCode: -32603}
	ErrServerError    = &Error{CDPCode: -32000}
	// ErrCDPSessionNotFound matches Chrome's "Session with given id not found"
	// reply (-32001).
	ErrCDPSessionNotFound = &Error{CDPCode: -32001}
)

// TransportError returns a ClassTransport *Error. cause may be nil.
func TransportError(code, msg string, cause error) *Error {
	return &Error{Class: ClassTransport, Code: code, Message: msg, Err: cause}
}

// ProtocolError returns a ClassProtocol *Error for a CDP error reply with the
// given JSON-RPC code and message (code CodeCDPError).
func ProtocolError(cdpCode int, msg string) *Error {
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

// Stage is where an attempt ended (SEL-7).
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
	Kind          Kind   `json:"kind"`
	Reason        string `json:"reason,omitempty"`
	Stage         Stage  `json:"stage"`
	Class         Class  `json:"class,omitempty"`
	Code          string `json:"code,omitempty"`
	Message       string `json:"message,omitempty"`
	DiscoveryCode string `json:"discoveryCode,omitempty"`
	// Remembered marks a try of the conversation's remembered kind (SEL-9),
	// made before the auto list; the same kind may appear again later.
	Remembered bool `json:"remembered,omitempty"`
	// Err is the failure, nil for a success.
	Err error `json:"-"`
}

// SelectionError is returned when no candidate served the first command of
// an invocation, or selection itself failed (SEL-7, SEL-10). It lists every
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
		if a.DiscoveryCode != "" {
			fmt.Fprintf(&b, ", discovery %s", a.DiscoveryCode)
		}
		if a.Message != "" {
			fmt.Fprintf(&b, ": %s", a.Message)
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
