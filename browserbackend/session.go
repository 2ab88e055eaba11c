package browserbackend

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// SessionView is a view of a Client bound to one flat CDP session (SEL-14):
// every command it sends carries the session id, and its event subscriptions
// see only that session's events. Once the backend reports the session gone
// (Target.detachedFromTarget), its commands fail with ErrSessionNotFound.
// It satisfies ScopedClient and cdp.Session; Close does nothing (the Client
// owns the backend). Safe for concurrent use.
type SessionView struct {
	c         *Client
	sessionID string
}

var (
	_ ScopedClient = (*SessionView)(nil)
	_ cdp.Session  = (*SessionView)(nil)
)

// Session returns a view bound to the flat session sessionID (from
// Target.attachToTarget with flatten: true).
func (c *Client) Session(sessionID string) *SessionView {
	return &SessionView{c: c, sessionID: sessionID}
}

// SessionID returns the bound session id.
func (v *SessionView) SessionID() string { return v.sessionID }

// Send sends cmd on the bound session, overriding cmd.SessionID.
func (v *SessionView) Send(ctx context.Context, cmd Command) (json.RawMessage, error) {
	cmd.SessionID = v.sessionID
	return v.c.Send(ctx, cmd)
}

// Close does nothing; close the Client.
func (v *SessionView) Close() error { return nil }

// Call implements cdp.Session on the bound session.
func (v *SessionView) Call(ctx context.Context, method string, params, result any) error {
	return call(ctx, v.c, Command{Method: method, SessionID: v.sessionID}, params, result)
}

// Subscribe implements cdp.Session: events of method on the bound session.
func (v *SessionView) Subscribe(method string) (<-chan jsonv2.Value, func()) {
	return rawEvents(v.c, method, v.sessionID)
}

// call marshals params, sends, and unmarshals the result (cdp.Session.Call).
func call(ctx context.Context, c *Client, cmd Command, params, result any) error {
	if params != nil {
		if _, empty := params.(cdp.Empty); !empty {
			raw, err := jsonv2.Marshal(params)
			if err != nil {
				return &Error{Class: ClassPolicy, Code: CodeInvalidResponse, Method: cmd.Method,
					Message: "cannot encode params", Err: err}
			}
			if string(raw) != "{}" && string(raw) != "null" {
				cmd.Params = raw
			}
		}
	}
	res, err := c.Send(ctx, cmd)
	if err != nil {
		return err
	}
	if result == nil || len(res) == 0 {
		return nil
	}
	if _, empty := result.(*cdp.Empty); empty {
		return nil
	}
	if err := jsonv2.Unmarshal(res, result); err != nil {
		return &Error{Class: ClassProtocol, Code: CodeInvalidResponse, Method: cmd.Method, Backend: c.Kind(),
			Message: fmt.Sprintf("cannot decode result of %s", cmd.Method), Err: err}
	}
	return nil
}

// rawEvents adapts Client.Events to cdp.Session's Subscribe: it forwards the
// params of matching events (optionally only one session's) to a buffered
// channel, dropping when the reader lags, until cancel or Close.
func rawEvents(c *Client, method, sessionID string) (<-chan jsonv2.Value, func()) {
	in, cancel := c.Events(method)
	out := make(chan jsonv2.Value, DefaultEventBuffer)
	go func() {
		defer close(out)
		for ev := range in {
			if sessionID != "" && ev.SessionID != sessionID {
				continue
			}
			params := jsonv2.Value(ev.Params)
			if len(params) == 0 {
				params = jsonv2.Value("{}")
			}
			select {
			case out <- params:
			default:
			}
		}
	}()
	return out, cancel
}
