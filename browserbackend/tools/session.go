package tools

import (
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
