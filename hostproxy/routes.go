package hostproxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
)

// Mount registers the three client routes on mux (PXY-4):
// POST /v1/host-browser-result, POST /v1/host-browser-event and
// POST /v1/host-browser-session-invalidated. The host app wraps mux (or
// these handlers) with its auth middleware, which must put the authenticated
// actor into the request context with eventhub.WithActor.
func (p *Proxy) Mount(mux *http.ServeMux) {
	mux.Handle("POST "+wire.PathHostBrowserResult, p.ResultHandler())
	mux.Handle("POST "+wire.PathHostBrowserEvent, p.EventHandler())
	mux.Handle("POST "+wire.PathHostBrowserSessionInvalidated, p.SessionInvalidatedHandler())
}

// routeError is the JSON body of every non-2xx answer:
// {"error":{"code":"...","message":"..."}}.
type routeError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, format string, args ...any) {
	var e routeError
	e.Error.Code = code
	e.Error.Message = fmt.Sprintf(format, args...)
	writeJSON(w, status, e)
}

var accepted = map[string]bool{"accepted": true}

// readBody reads at most p.maxBody bytes; it answers 405/413/400 itself and
// returns ok false then.
func (p *Proxy) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use POST")
		return nil, false
	}
	data, err := readAll(http.MaxBytesReader(w, r.Body, p.maxBody), r.ContentLength, p.maxBody)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "body_too_large",
				"request body exceeds the limit of %d bytes", p.maxBody)
			return nil, false
		}
		writeError(w, http.StatusBadRequest, "bad_body", "reading request body: %v", err)
		return nil, false
	}
	return data, true
}

// readAll reads rd to the end. With a known length (Content-Length, at most
// limit) it reads into one buffer of that size plus one byte, instead of
// io.ReadAll's doubling, which allocates about twice the body for a large
// screenshot; rd still enforces the limit.
func readAll(rd io.Reader, length, limit int64) ([]byte, error) {
	if length <= 0 || length > limit {
		return io.ReadAll(rd)
	}
	buf := make([]byte, 0, length+1) // +1: EOF is seen without growing
	for {
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
		if len(buf) == cap(buf) { // longer than announced
			rest, err := io.ReadAll(rd)
			return append(buf, rest...), err
		}
	}
}

// ResultHandler serves POST /v1/host-browser-result (PXY-4). Body
// {"requestId","content","isError"}; header X-Vellum-Client-Id. Answers:
//   - 200 {"accepted":true}: the result reached its request;
//   - 400: malformed JSON, no requestId, or no client header on a targeted
//     request;
//   - 403: the header names another client, or the authenticated actor
//     (eventhub.ActorFrom) is not the target client's actor;
//   - 404: unknown or already answered request id;
//   - 409: the pending interaction is not host_browser;
//   - 413: body larger than Options.MaxBodyBytes.
//
// A rejected post leaves the request pending. A request this Proxy has no
// caller waiting for (one the host app registered with Register, or another
// Proxy's request) is answered 404 and, if pending here, left pending. An accepted post counts as
// activity of the client (Hub.Touch, HUB-5). ResultSocketHandler runs the
// same checks on results sent over a WebSocket.
func (p *Proxy) ResultHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := p.readBody(w, r)
		if !ok {
			return
		}
		body, err := DecodeResult(data)
		if errors.Is(err, ErrNoRequestID) {
			writeError(w, http.StatusBadRequest, "missing_request_id", "requestId is required")
			return
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, "malformed_body", "%v", err)
			return
		}
		actor, _ := eventhub.ActorFrom(r.Context())
		if rej := p.acceptResult(body, r.Header.Get(wire.HeaderClientID), actor, TransportHTTP, data); rej != nil {
			writeError(w, rej.status, rej.code, "%s", rej.msg)
			return
		}
		writeJSON(w, http.StatusOK, accepted)
	})
}

// clientFor checks the posting client of the event routes: the header is
// required (400), the client must be connected (404), and the authenticated
// actor must be the client's actor (403).
func (p *Proxy) clientFor(w http.ResponseWriter, r *http.Request) (string, bool) {
	clientID := r.Header.Get(wire.HeaderClientID)
	if clientID == "" {
		writeError(w, http.StatusBadRequest, "missing_client_id", "%s header is required", wire.HeaderClientID)
		return "", false
	}
	info, ok := p.hub.Client(clientID)
	if !ok {
		writeError(w, http.StatusNotFound, "unknown_client", "client %q is not connected", clientID)
		return "", false
	}
	if info.ActorPrincipalID != "" {
		actor, _ := eventhub.ActorFrom(r.Context())
		if actor != info.ActorPrincipalID {
			writeError(w, http.StatusForbidden, "wrong_actor", "client %q belongs to another actor", clientID)
			return "", false
		}
	}
	return clientID, true
}

// EventHandler serves POST /v1/host-browser-event (PXY-4, SEL-14): body
// {"method","params","sessionId"?}, header X-Vellum-Client-Id. The event is
// delivered to the subscribers of every backend bound to that client.
// Answers 200 {"accepted":true}, 400 (no header, malformed body, no method),
// 403 (another actor's client), 404 (client not connected), 413.
func (p *Proxy) EventHandler() http.Handler {
	return p.eventRoute(func(data []byte) (browserbackend.Event, error) {
		body, err := DecodeEvent(data)
		return browserbackend.Event{Method: body.Method, Params: body.Params, SessionID: body.SessionID}, err
	})
}

// SessionInvalidatedHandler serves POST /v1/host-browser-session-invalidated
// (PXY-4, SEL-14): body {"sessionId"?,"targetId"?,"reason"?}, header
// X-Vellum-Client-Id. It is delivered as a Target.detachedFromTarget event
// with that sessionId (params {"sessionId","targetId","reason"}), so a client
// fails later commands bound to the session. Answers as EventHandler.
func (p *Proxy) SessionInvalidatedHandler() http.Handler {
	return p.eventRoute(func(data []byte) (browserbackend.Event, error) {
		body, err := DecodeInvalidation(data)
		if err != nil {
			return browserbackend.Event{}, err
		}
		params, _ := json.Marshal(body)
		return browserbackend.Event{Method: browserbackend.MethodTargetDetached, Params: params, SessionID: body.SessionID}, nil
	})
}

// eventRoute is the shared shape of the two event routes: read the capped
// body, check the posting client, decode, count as activity, deliver.
func (p *Proxy) eventRoute(decode func([]byte) (browserbackend.Event, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := p.readBody(w, r)
		if !ok {
			return
		}
		clientID, ok := p.clientFor(w, r)
		if !ok {
			return
		}
		ev, err := decode(data)
		if err != nil {
			writeError(w, http.StatusBadRequest, "malformed_body", "%v", err)
			return
		}
		p.hub.Touch(clientID)
		p.publishEvent(clientID, ev)
		if p.relay != nil {
			p.relay.RelayEvent(clientID, ev)
		}
		writeJSON(w, http.StatusOK, accepted)
	})
}

// listen delivers the events of clientID to bus until the returned func is
// called.
func (p *Proxy) listen(clientID string, bus *browserbackend.EventBus) func() {
	p.mu.Lock()
	set := p.listeners[clientID]
	if set == nil {
		set = make(map[*browserbackend.EventBus]struct{})
		p.listeners[clientID] = set
	}
	set[bus] = struct{}{}
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if set := p.listeners[clientID]; set != nil {
			delete(set, bus)
			if len(set) == 0 {
				delete(p.listeners, clientID)
			}
		}
	}
}

func (p *Proxy) publishEvent(clientID string, ev browserbackend.Event) {
	p.mu.Lock()
	buses := make([]*browserbackend.EventBus, 0, len(p.listeners[clientID]))
	for b := range p.listeners[clientID] {
		buses = append(buses, b)
	}
	p.mu.Unlock()
	for _, b := range buses {
		b.Publish(ev) // never blocks
	}
}
