package browserbackend

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
)

// Command is one CDP command. Params is the JSON object of the
// command's parameters (nil or empty for none); SessionID, when set, routes
// the command to a flat-mode CDP session (Target.attachToTarget with
// flatten: true).
type Command struct {
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
}

// BrowserSessionID is the Command.SessionID that addresses the browser
// target itself rather than a page: the command runs on the root session of
// the backend's browser-level connection (CDP sends it without a sessionId),
// and the events that session receives (Target.attachedToTarget of an
// auto-attach, for example) come with the page's own events. cdp-inspect and
// the desktop bridge (host-bridge, which runs commands as cdp-inspect does)
// serve it; the local and extension backends refuse it (local: ClassPolicy,
// not_supported; chrome.debugger cannot attach at browser level). The
// guards use it to hold the windows a page opens before they load.
const BrowserSessionID = "browser"

// CheckParams checks a command's params before anything is sent: they must be
// absent, null, or one JSON object (CDP's params member). Anything else is a
// ClassPolicy *Error with code CodeInvalidParams; a browser or a client would
// otherwise drop or refuse the command. The Client checks every command; a
// backend used without a Client can call it too.
func CheckParams(method string, params json.RawMessage) *Error {
	t := bytes.TrimSpace(params)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil
	}
	if t[0] != '{' || !json.Valid(t) {
		return &Error{Class: ClassPolicy, Code: CodeInvalidParams, Method: method,
			Message: "params must be one JSON object"}
	}
	return nil
}

// LogValue implements slog.LogValuer: params are never logged, only their
// size, since they may hold typed text or cookies.
func (c Command) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("method", c.Method),
		slog.String("sessionId", c.SessionID),
		slog.Int("paramsBytes", len(c.Params)),
	)
}

// ScopedClient sends CDP commands to one browser. It is the contract
// between the selector and every backend, and also what the per-invocation
// Client offers to tools.
//
// Send sends one command and returns the raw JSON "result" object of the CDP
// reply. The result is read-only: a backend may share its memory with the
// decoded answer (a multi-MB screenshot is not copied), so a caller that
// wants to change it copies it first. Send must return within ctx's deadline. A failure is an *Error (or is
// classified into one by Classify): ClassTransport when no CDP answer was
// obtained, ClassProtocol when the browser answered with an error,
// ClassTimeout when the deadline passed after dispatch, ClassAborted when ctx
// was cancelled, ClassClosed after Close.
//
// Implementations are safe for concurrent use. Close releases what the client
// holds, is idempotent, and makes later and in-flight Sends fail with
// ClassClosed.
type ScopedClient interface {
	Send(ctx context.Context, cmd Command) (json.RawMessage, error)
	Close() error
}

// SendFunc adapts a function to a ScopedClient whose Close does nothing,
// so fakes and middleware are one-liners.
type SendFunc func(ctx context.Context, cmd Command) (json.RawMessage, error)

// Send calls f.
func (f SendFunc) Send(ctx context.Context, cmd Command) (json.RawMessage, error) {
	return f(ctx, cmd)
}

// Close does nothing and returns nil.
func (f SendFunc) Close() error { return nil }

// Event is one CDP event from a backend. SessionID is the flat
// session it arrived on, empty for browser-level or page-level (non-flat)
// events.
type Event struct {
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
}

// EventSource is implemented by backends that deliver CDP events.
//
// Subscribe returns a channel of the events whose method equals method (every
// event when method is empty) and a cancel func. Delivery never blocks the
// backend: a subscriber that falls more than its buffer behind loses events
// (see EventBus). The channel is closed by cancel or when the backend closes.
//
// A backend reports that a flat session went away (its tab closed, the target
// detached) by delivering a Target.detachedFromTarget event with that
// sessionId; the per-invocation Client then fails commands bound to it with
// ErrSessionNotFound instead of letting them run elsewhere.
type EventSource interface {
	Subscribe(method string) (events <-chan Event, cancel func())
}

// BufferedEventSource is an EventSource that sizes a subscription's buffer:
// SubscribeBuffer is Subscribe with a channel of capacity buffer (0 or less
// means the source's default). The per-invocation Client uses it for its own
// watch of MethodTargetDetached, which sees few events, so that an idle
// conversation does not hold a full-size buffer per backend.
// EventBus implements it.
type BufferedEventSource interface {
	EventSource
	SubscribeBuffer(method string, buffer int) (events <-chan Event, cancel func())
}

// MethodTargetDetached is the CDP event that invalidates a flat session
// (CDP domain Target).
const MethodTargetDetached = "Target.detachedFromTarget"
