package tools

import (
	"context"
	"encoding/json"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// SessionOf adapts any browserbackend.ScopedClient to cdproto's cdp.Session,
// so a Page can run on a backend used without a Selector; it is
// browserbackend.AsSession. A *browserbackend.Client already is a
// cdp.Session; pass it to NewPage directly.
func SessionOf(sc browserbackend.ScopedClient, sessionID string) cdp.Session {
	return browserbackend.AsSession(sc, sessionID)
}

// decodeValue decodes a Runtime RemoteObject value (raw JSON) into out.
func decodeValue(raw jsonv2.Value, out any) error {
	if out == nil {
		return nil
	}
	if len(raw) == 0 {
		raw = jsonv2.Value("null")
	}
	return json.Unmarshal(raw, out)
}

// tabSession runs a call's commands in the conversation's extension tab:
// each names the tab in cdpSessionId (its id in decimal digits, WIRE-3), so
// it runs there whatever tab the user or another conversation made active.
// Events are the client's own; Navigate matches them by frame and loader
// (WIRE-4).
type tabSession struct {
	c         *browserbackend.Client
	sessionID string
}

func (s tabSession) Call(ctx context.Context, method string, params, result any) error {
	return s.c.Session(s.sessionID).Call(ctx, method, params, result)
}

func (s tabSession) Subscribe(method string) (<-chan jsonv2.Value, func()) {
	return s.c.Subscribe(method)
}
