package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// eventBuffer is the capacity of the channels SessionOf hands out.
const eventBuffer = 256

// SessionOf adapts any browserbackend.ScopedClient to cdproto's cdp.Session,
// so a Page can run on a backend used without a Selector. Commands carry
// sessionID when it is non-empty. Subscribe delivers events only when sc also
// implements browserbackend.EventSource (else the channel stays open and
// empty until cancel), filtered to sessionID when it is non-empty. A
// *browserbackend.Client already is a cdp.Session; pass it to NewPage
// directly.
func SessionOf(sc browserbackend.ScopedClient, sessionID string) cdp.Session {
	return scopedSession{sc: sc, sessionID: sessionID}
}

type scopedSession struct {
	sc        browserbackend.ScopedClient
	sessionID string
}

func (s scopedSession) Call(ctx context.Context, method string, params, result any) error {
	cmd := browserbackend.Command{Method: method, SessionID: s.sessionID}
	if params != nil {
		if _, empty := params.(cdp.Empty); !empty {
			raw, err := jsonv2.Marshal(params)
			if err != nil {
				return fmt.Errorf("tools: encode %s params: %w", method, err)
			}
			if string(raw) != "{}" && string(raw) != "null" {
				cmd.Params = raw
			}
		}
	}
	res, err := s.sc.Send(ctx, cmd)
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
		return &browserbackend.Error{Class: browserbackend.ClassProtocol, Code: browserbackend.CodeInvalidResponse,
			Method: method, Message: "cannot decode result", Err: err}
	}
	return nil
}

func (s scopedSession) Subscribe(method string) (<-chan jsonv2.Value, func()) {
	out := make(chan jsonv2.Value, eventBuffer)
	es, ok := s.sc.(browserbackend.EventSource)
	if !ok {
		return out, sync.OnceFunc(func() { close(out) })
	}
	in, cancel := es.Subscribe(method)
	go func() {
		defer close(out)
		for ev := range in {
			if s.sessionID != "" && ev.SessionID != s.sessionID {
				continue
			}
			p := jsonv2.Value(ev.Params)
			if len(p) == 0 {
				p = jsonv2.Value("{}")
			}
			select {
			case out <- p:
			default: // a reader that lags loses events rather than block the backend
			}
		}
	}()
	return out, cancel
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
