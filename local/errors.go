package local

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mxschmitt/playwright-go"

	"github.com/browserchain/browserchain/browserbackend"
)

// Remediation is the hint attached to the launch failures that installing
// Chromium or the Playwright driver fixes (Detail DetailNotInstalled).
const Remediation = "install Chromium and the Playwright driver: run scripts/setup.sh " +
	"(Debian: apt-get install chromium), or set " + EnvExecutable + " to a Chrome/Chromium binary"

// DetailNotInstalled is the Detail of a launch_failed error whose browser
// executable or Playwright driver is missing. Any other launch failure (the
// browser started and exited, its profile is in use or unusable) has no
// Detail and carries the browser's own error as its cause.
const DetailNotInstalled = "not_installed"

// launchFailed returns the transport error of a launch that failed with
// Chromium and the driver in place: it fails over, and its cause (Err)
// carries the browser's own error.
func launchFailed(msg string, cause error) *browserbackend.Error {
	return &browserbackend.Error{
		Class:   browserbackend.ClassTransport,
		Code:    browserbackend.CodeLaunchFailed,
		Backend: browserbackend.KindLocal,
		Message: "local: " + msg,
		Err:     cause,
	}
}

// notInstalled returns the transport error of a launch whose browser
// executable or driver is missing: launchFailed with DetailNotInstalled and
// the remediation hint.
func notInstalled(msg string, cause error) *browserbackend.Error {
	e := launchFailed(msg+" ("+Remediation+")", cause)
	e.Detail = DetailNotInstalled
	return e
}

// The local backend's fault codes (browserbackend.CodePageEvicted,
// CodeTargetCrashed, CodeBrowserGone), under the names its doc uses.
const (
	// CodePageEvicted (ClassClosed): the conversation's page was closed to
	// honour Options.MaxPages while the conversation was idle. Reported
	// once, by the conversation's next command; the command after it opens
	// a fresh page.
	CodePageEvicted = browserbackend.CodePageEvicted
	// CodePageLost (ClassClosed): the conversation's page went away since
	// its last command (its renderer crashed, it was closed by someone
	// else, its browser or driver exited). Reported once, by the
	// conversation's next command other than Page.navigate; a Page.navigate,
	// and the command after the notice, open a fresh page.
	CodePageLost = browserbackend.CodePageLost
	// CodeTargetCrashed (ClassTransport): the page's renderer crashed under
	// the command; the conversation's next command is told CodePageLost.
	CodeTargetCrashed = browserbackend.CodeTargetCrashed
	// CodeBrowserGone (ClassTransport): the browser process or the
	// Playwright driver died under the command; the next use relaunches.
	CodeBrowserGone = browserbackend.CodeBrowserGone
)

// errPageEvicted is the error of the first command of a conversation whose
// page MaxPages evicted.
func errPageEvicted(maxPages int) *browserbackend.Error {
	return &browserbackend.Error{
		Class: browserbackend.ClassClosed, Code: CodePageEvicted, Backend: browserbackend.KindLocal,
		Message: fmt.Sprintf("local: the conversation's page was closed while idle to keep at most %d pages open; "+
			"its URL and content are gone, navigate again", maxPages),
	}
}

// errPageLost is the error of the first command other than Page.navigate
// of a conversation whose page went away under it.
func errPageLost() *browserbackend.Error {
	return &browserbackend.Error{
		Class: browserbackend.ClassClosed, Code: CodePageLost, Backend: browserbackend.KindLocal,
		Message: "local: the conversation's page went away (its renderer crashed or its browser exited); " +
			"its URL and content are gone, navigate again",
	}
}

// errTargetCrashed is the error of a command whose page's renderer crashed.
func errTargetCrashed(method string, dispatched bool) *browserbackend.Error {
	return &browserbackend.Error{
		Class: browserbackend.ClassTransport, Code: CodeTargetCrashed,
		Method: method, Backend: browserbackend.KindLocal, Dispatched: dispatched,
		Message: "local: the page's renderer crashed",
	}
}

// errBrowserGone is the error of a command whose browser or driver died.
func errBrowserGone(method string, dispatched bool) *browserbackend.Error {
	return &browserbackend.Error{
		Class: browserbackend.ClassTransport, Code: CodeBrowserGone,
		Method: method, Backend: browserbackend.KindLocal, Dispatched: dispatched,
		Message: "local: the browser or its Playwright driver exited; the next command relaunches it",
	}
}

func errClosed(method string) *browserbackend.Error {
	return &browserbackend.Error{
		Class: browserbackend.ClassClosed, Code: browserbackend.CodeClosed,
		Method: method, Backend: browserbackend.KindLocal,
		Message: "local: client or browser closed",
	}
}

// errPageGone is the transport error of a command on a page, context or
// browser that has closed.
func errPageGone(method string, cause error) *browserbackend.Error {
	return &browserbackend.Error{
		Class: browserbackend.ClassTransport, Code: browserbackend.CodeTransportError,
		Method: method, Backend: browserbackend.KindLocal, Dispatched: cause != nil,
		Message: "local: the page, context or browser has been closed", Err: cause,
	}
}

// ctxErr classifies ctx's end: ClassAborted/cancelled or ClassTimeout.
func ctxErr(ctx context.Context, method string, dispatched bool) *browserbackend.Error {
	e := browserbackend.ContextError(ctx, method, dispatched)
	e.Backend = browserbackend.KindLocal
	return e
}

// withMethod fills the method of a *browserbackend.Error built before the
// command was known.
func withMethod(err error, method string) error {
	var e *browserbackend.Error
	if errors.As(err, &e) && e.Method == "" {
		c := *e
		c.Method = method
		return &c
	}
	return err
}

// classifyOpenError classifies a failure to open a page or its CDPSession:
// always a transport error (no page means no answer; failing over is right).
// A failure that is not Playwright's own error means the driver connection is
// lost, and a closed context (contextGoneError) a browser gone: st is marked
// dead at once, so the next use relaunches.
func classifyOpenError(st *state, err error) *browserbackend.Error {
	var pe *playwright.Error
	var gone contextGoneError
	if (!errors.As(err, &pe) || errors.As(err, &gone)) && st != nil {
		st.markDead()
	}
	return &browserbackend.Error{
		Class: browserbackend.ClassTransport, Code: browserbackend.CodeTransportError,
		Backend: browserbackend.KindLocal,
		Message: "local: cannot open a page", Err: err,
	}
}

// classifySendError classifies a failed CDPSession.Send:
//   - the page, context or browser closed (playwright.ErrTargetClosed, the
//     page or browser known to be gone, or the driver connection lost) →
//     ClassTransport;
//   - a CDP error reply → ClassProtocol with the CDP code (see
//     parseProtocolError);
//   - any other Playwright error (e.g. the driver rejecting the call) →
//     ClassProtocol without a CDP code.
func classifySendError(method string, err error, p *pageEntry) *browserbackend.Error {
	var pe *playwright.Error
	isPW := errors.As(err, &pe)
	switch {
	case !isPW:
		// Not a *playwright.Error: the driver connection failed ("Connection
		// closed", "could not send message: transport closed"). Mark the
		// browser dead now, not when the driver's exit is noticed, so that
		// the very next use relaunches instead of failing the same way.
		if p != nil {
			p.st.markDead()
		}
		e := errBrowserGone(method, true)
		e.Err = err
		return e
	case p != nil && p.crashed.Load():
		e := errTargetCrashed(method, true)
		e.Err = err
		return e
	case p != nil && p.st.isDead():
		e := errBrowserGone(method, true)
		e.Err = err
		return e
	case errors.Is(err, playwright.ErrTargetClosed), p != nil && p.isGone():
		return errPageGone(method, err)
	}
	if m, code, text, ok := parseProtocolError(pe.Message); ok {
		if code == 0 {
			if strings.HasPrefix(text, "Target crashed") {
				if p != nil {
					// The reply may come before Playwright's crash event:
					// the page must not serve the conversation's next call.
					p.markCrashed()
				}
				e := errTargetCrashed(method, true)
				e.Err = err
				return e
			}
			// "Session closed" and "Target closed": the page is unusable.
			return errPageGone(method, err)
		}
		e := browserbackend.ProtocolError(code, text)
		if m != "" && m != method {
			e.Message = text + " (" + m + ")"
		}
		e.Method, e.Backend, e.Dispatched, e.Err = method, browserbackend.KindLocal, true, err
		return e
	}
	return &browserbackend.Error{
		Class: browserbackend.ClassProtocol, Code: browserbackend.CodeCDPError,
		Method: method, Backend: browserbackend.KindLocal, Dispatched: true,
		Message: "local: " + pe.Message, Err: err,
	}
}

// parseProtocolError reads a CDP error out of the text of a Playwright error.
//
// This is the one place where the local backend looks at error text, because
// nothing better exists: Playwright's driver turns the browser's JSON-RPC
// error {code, message} into a JavaScript Error whose message is
// "Protocol error (<method>): <message>", and drops the numeric code before
// playwright-go sees it. The code is recovered from Chromium's fixed messages
// for the JSON-RPC codes (CDP's DispatchResponse):
//
//	"'<method>' wasn't found"          → -32601 (method not found)
//	"Invalid parameters…"               → -32602 (invalid params)
//	"Invalid request…"/"Message must…"  → -32600 (invalid request)
//	"Session with given id not found…"  → -32001 (session not found)
//	anything else                       → -32000 (server error: the code
//	                                      Chromium uses for domain errors)
//
// "Target crashed" and "Session closed…" (Playwright's words for a dead page)
// return code 0: they are not protocol errors. ok is false when msg is not a
// protocol error at all. method is the method named in the prefix.
func parseProtocolError(msg string) (method string, code int, text string, ok bool) {
	const prefix = "Protocol error ("
	i := strings.Index(msg, prefix)
	if i < 0 {
		return "", 0, "", false
	}
	rest := msg[i+len(prefix):]
	j := strings.Index(rest, "): ")
	if j < 0 {
		return "", 0, "", false
	}
	method, text = rest[:j], rest[j+3:]
	if k := strings.IndexByte(text, '\n'); k >= 0 { // call log lines follow
		text = text[:k]
	}
	switch {
	case strings.HasPrefix(text, "Target crashed"), strings.HasPrefix(text, "Session closed"),
		strings.HasPrefix(text, "Target closed"):
		code = 0
	case text == "'"+method+"' wasn't found" || strings.HasSuffix(text, "' wasn't found"):
		code = -32601
	case strings.HasPrefix(text, "Invalid parameters"):
		code = -32602
	case strings.HasPrefix(text, "Invalid request"), strings.HasPrefix(text, "Message must"):
		code = -32600
	case strings.HasPrefix(text, "Session with given id not found"):
		code = -32001
	default:
		code = -32000
	}
	return method, code, text, true
}
