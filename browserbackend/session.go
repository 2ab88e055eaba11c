package browserbackend

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// SessionView is a view of a Client bound to one flat CDP session:
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
	return rawEvents(v.c.Events, method, v.sessionID, &v.c.rawDropped)
}

// AsSession adapts any ScopedClient to cdproto's cdp.Session, so typed
// cdproto commands run on a backend used without a Selector. Commands carry
// sessionID when it is non-empty. Subscribe delivers events only when sc also
// implements EventSource (otherwise the channel stays open and empty until
// cancel), filtered to sessionID when it is non-empty. A *Client and a
// *SessionView already are cdp.Sessions.
func AsSession(sc ScopedClient, sessionID string) cdp.Session {
	s := scopedSession{sc: sc, sessionID: sessionID}
	if es, ok := sc.(EventSource); ok {
		s.events = es.Subscribe
	}
	return s
}

type scopedSession struct {
	sc        ScopedClient
	sessionID string
	events    func(method string) (<-chan Event, func())
}

func (s scopedSession) Call(ctx context.Context, method string, params, result any) error {
	return call(ctx, s.sc, Command{Method: method, SessionID: s.sessionID}, params, result)
}

func (s scopedSession) Subscribe(method string) (<-chan jsonv2.Value, func()) {
	if s.events == nil {
		out := make(chan jsonv2.Value)
		return out, sync.OnceFunc(func() { close(out) })
	}
	return rawEvents(s.events, method, s.sessionID, nil)
}

// call marshals params, sends, and unmarshals the result (cdp.Session.Call).
func call(ctx context.Context, sc ScopedClient, cmd Command, params, result any) error {
	if params != nil {
		if _, empty := params.(cdp.Empty); !empty {
			raw, err := jsonv2.Marshal(params)
			if err != nil {
				return &Error{Class: ClassPolicy, Code: CodeInvalidParams, Method: cmd.Method,
					Message: "cannot encode params", Err: err}
			}
			if string(raw) != "{}" && string(raw) != "null" {
				cmd.Params = raw
			}
		}
	}
	res, err := sc.Send(ctx, cmd)
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
		e := &Error{Class: ClassProtocol, Code: CodeInvalidResponse, Method: cmd.Method,
			Message: fmt.Sprintf("cannot decode result of %s", cmd.Method), Err: err}
		if c, ok := sc.(interface{ Kind() Kind }); ok {
			e.Backend = c.Kind()
		}
		return e
	}
	return nil
}

// rawEvents adapts an event subscription to cdp.Session's Subscribe: it
// forwards the params of matching events (optionally only one session's) to a
// buffered channel, dropping when the reader lags, until cancel or the source
// closes.
// rawEvents adapts an Event subscription to cdp.Session's raw params. An
// event that finds out's buffer full is dropped and counted in dropped (when
// non-nil): delivery never blocks the backend.
func rawEvents(subscribe func(string) (<-chan Event, func()), method, sessionID string, dropped *atomic.Int64) (<-chan jsonv2.Value, func()) {
	in, cancel := subscribe(method)
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
				if dropped != nil {
					dropped.Add(1)
				}
			}
		}
	}()
	return out, cancel
}
