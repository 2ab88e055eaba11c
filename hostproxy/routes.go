package hostproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

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

// reject answers a refused post and logs it once at warn with the route,
// the reason code and the client id (WIRE-1); never a credential or a body.
func (p *Proxy) reject(w http.ResponseWriter, r *http.Request, clientID string, status int, code, format string, args ...any) {
	p.log.Warn("host_browser post refused", "route", r.URL.Path, "status", status, "code", code, "clientId", clientID)
	writeError(w, status, code, format, args...)
}

// postingClient is the client id a post names before any check: the
// X-Vellum-Client-Id header, else the one the auth middleware derived from
// the credential (eventhub.ClientIDFrom).
func postingClient(r *http.Request) string {
	if id := r.Header.Get(wire.HeaderClientID); id != "" {
		return id
	}
	id, _ := eventhub.ClientIDFrom(r.Context())
	return id
}

// readBody reads at most p.maxBody bytes; it answers 405/413/400 itself and
// returns ok false then. On 413 data holds the first p.maxBody bytes.
func (p *Proxy) readBody(w http.ResponseWriter, r *http.Request) (data []byte, ok bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		p.reject(w, r, postingClient(r), http.StatusMethodNotAllowed, "method_not_allowed", "use POST")
		return nil, false
	}
	data, err := readAll(http.MaxBytesReader(w, r.Body, p.maxBody), r.ContentLength, p.maxBody)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			p.reject(w, r, postingClient(r), http.StatusRequestEntityTooLarge, "body_too_large",
				"request body exceeds the limit of %d bytes", p.maxBody)
			return data, false
		}
		p.reject(w, r, postingClient(r), http.StatusBadRequest, "bad_body", "reading request body: %v", err)
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
		clientID := postingClient(r)
		if !ok {
			if id := requestIDPrefix(data); id != "" {
				p.failTooLarge(id, clientID, r)
			}
			return
		}
		body, err := p.decodeResultOwned(data) // data is this request's own buffer
		if errors.Is(err, ErrNoRequestID) {
			p.reject(w, r, clientID, http.StatusBadRequest, "missing_request_id", "requestId is required")
			return
		}
		if err != nil {
			p.reject(w, r, clientID, http.StatusBadRequest, "malformed_body", "%v", err)
			return
		}
		actor, _ := eventhub.ActorFrom(r.Context())
		if rej := p.acceptResult(body, clientID, actor, TransportHTTP, data); rej != nil {
			p.reject(w, r, clientID, rej.status, rej.code, "%s", rej.msg)
			return
		}
		writeJSON(w, http.StatusOK, accepted)
	})
}

// failTooLarge fails the request id a refused, oversized result named
// with payload_too_large at once (WIRE-5), after the same client and actor
// checks as any result: the caller learns the command ran but its answer is
// lost, instead of waiting out its timeout.
func (p *Proxy) failTooLarge(id, clientID string, r *http.Request) {
	actor, _ := eventhub.ActorFrom(r.Context())
	p.failTooLargeFor(id, clientID, actor, TransportHTTP)
}

// failTooLargeFor is failTooLarge for a client and actor a transport bound;
// it reports whether a request failed.
func (p *Proxy) failTooLargeFor(id, clientID, actor string, tr Transport) bool {
	content := errorContent(browserbackend.CodePayloadTooLarge,
		fmt.Sprintf("the client's result exceeded the server's limit of %d bytes", p.maxBody))
	if rej := p.acceptResult(ResultBody{RequestID: id, Content: content, IsError: true}, clientID, actor, tr, nil); rej != nil {
		p.log.Debug("oversized result names no request of this client", "requestId", id, "clientId", clientID, "code", rej.code)
		return false
	}
	return true
}

// FailOversizeFrame handles a client socket frame larger than the cap
// (MaxBodyBytes), of which prefix holds the first bytes read: when it is a
// result whose "requestId" comes before the cut (a "type" before it, if
// any, must be "result"), that request fails at once with
// payload_too_large (WIRE-5), after the client and actor checks of any
// result, instead of at its deadline. It returns the failed request's id,
// or "" when the prefix names none of clientID's requests. Like an HTTP
// 413 it is a protocol-class error to the caller. The socket itself is
// the caller's to close (a WebSocket library closes it with 1009). Safe
// for concurrent use.
func (p *Proxy) FailOversizeFrame(clientID, actor string, tr Transport, prefix []byte) string {
	id, typ := requestIDPrefixTyped(prefix)
	if id == "" || (typ != "" && typ != wire.SocketResult) {
		return ""
	}
	if !p.failTooLargeFor(id, clientID, actor, tr) {
		return ""
	}
	p.log.Warn("client socket frame over the body limit; its request failed as payload_too_large",
		"transport", string(tr), "clientId", clientID, "requestId", id, "limit", p.maxBody)
	return id
}

// MaxBodyBytes returns the largest result body or client socket frame the
// Proxy accepts (Options.MaxBodyBytes, default DefaultMaxBodyBytes), in
// bytes. A transport of the host app caps its frames at it and tells its
// clients, as the result socket's ready reply does (WIRE-5). Safe for
// concurrent use.
func (p *Proxy) MaxBodyBytes() int64 { return p.maxBody }

func errorContent(code, msg string) string {
	raw, _ := json.Marshal(ErrorContent{Code: json.RawMessage(strconv.Quote(code)), Message: msg})
	return string(raw)
}

// requestIDPrefix returns the requestId of a result body from its first
// bytes (a body cut at the cap), or "" when it does not come before the
// cut. Both real clients write requestId first.
func requestIDPrefix(data []byte) string {
	id, _ := requestIDPrefixTyped(data)
	return id
}

// requestIDPrefixTyped is requestIDPrefix that also returns the "type"
// member read before the requestId ("" when none came first).
func requestIDPrefixTyped(data []byte) (id, typ string) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", ""
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return "", ""
		}
		if k == "requestId" || k == "type" {
			v, err := dec.Token()
			s, ok := v.(string)
			if !ok || err != nil {
				return "", ""
			}
			if k == "requestId" {
				return s, typ
			}
			typ = s
			continue
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return "", ""
		}
	}
	return "", ""
}

// clientFor checks the posting client of the event routes (WIRE-1). The
// client is the X-Vellum-Client-Id header, else the client the credential
// identifies (the token's binding, eventhub.ClientIDFrom), else bodyClient
// (the clientId an invalidation carries). A body naming another client than
// the header or credential is 403 client_mismatch; no client at all is 400;
// the client must be connected (404), and the authenticated actor must be
// the client's actor (403). It answers and logs a refusal itself.
func (p *Proxy) clientFor(w http.ResponseWriter, r *http.Request, bodyClient string) (string, bool) {
	clientID := postingClient(r)
	switch {
	case clientID == "" && bodyClient == "":
		p.reject(w, r, "", http.StatusBadRequest, "missing_client_id",
			"the client is unknown: send %s, or open the events stream with this token first", wire.HeaderClientID)
		return "", false
	case clientID == "":
		clientID = bodyClient
	case bodyClient != "" && bodyClient != clientID:
		p.reject(w, r, clientID, http.StatusForbidden, "client_mismatch", "body names client %q", bodyClient)
		return "", false
	}
	info, ok := p.hub.Client(clientID)
	if !ok {
		p.reject(w, r, clientID, http.StatusNotFound, "unknown_client", "client %q is not connected", clientID)
		return "", false
	}
	if info.ActorPrincipalID != "" {
		actor, _ := eventhub.ActorFrom(r.Context())
		if actor != info.ActorPrincipalID {
			p.reject(w, r, clientID, http.StatusForbidden, "wrong_actor", "client %q belongs to another actor", clientID)
			return "", false
		}
	}
	return clientID, true
}

// EventHandler serves POST /v1/host-browser-event (PXY-4, SEL-14, WIRE-1):
// body EventBody; the posting client is named by the X-Vellum-Client-Id
// header or, as the real extension does it, only by its bearer token (see
// clientFor). The event is delivered to the subscribers of the backends
// bound to that client that own its tab (WIRE-4, "Events and tabs" in the
// package doc).
// Answers 200 {"accepted":true}, 400 (unknown client, malformed body, no
// method), 403 (another actor's client), 404 (client not connected), 413.
//
// Each client's posts are charged to its own event budget
// (Options.EventRate): beyond it they are answered 429 events_shed and
// dropped, counted by EventsShed and logged at most once a second (WIRE-5).
func (p *Proxy) EventHandler() http.Handler {
	return p.eventRoute(true, func(data []byte) (browserbackend.Event, string, string, error) {
		body, err := DecodeEvent(data)
		return browserbackend.Event{Method: body.Method, Params: body.Params, SessionID: body.Session()}, "", body.Tab(), err
	})
}

// SessionInvalidatedHandler serves POST /v1/host-browser-session-invalidated
// (PXY-4, SEL-14, WIRE-1): body {"sessionId"?,"targetId"?,"reason"?,
// "clientId"?}; the client is named as for EventHandler or by the body's
// clientId. It is delivered as a Target.detachedFromTarget event with that
// sessionId (params {"sessionId","targetId","reason"}), so a client fails
// later commands bound to the session. Answers as EventHandler.
func (p *Proxy) SessionInvalidatedHandler() http.Handler {
	return p.eventRoute(false, func(data []byte) (browserbackend.Event, string, string, error) {
		body, err := DecodeInvalidation(data)
		if err != nil {
			return browserbackend.Event{}, "", "", err
		}
		params, _ := json.Marshal(InvalidationBody{SessionID: body.SessionID, TargetID: body.TargetID, Reason: body.Reason})
		return browserbackend.Event{Method: browserbackend.MethodTargetDetached, Params: params, SessionID: body.SessionID}, body.ClientID, "", nil
	})
}

// eventRoute is the shared shape of the two event routes: read the capped
// body, decode, check the posting client, count as activity, deliver.
func (p *Proxy) eventRoute(budgeted bool, decode func([]byte) (ev browserbackend.Event, bodyClient, tab string, err error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := p.readBody(w, r)
		if !ok {
			return
		}
		ev, bodyClient, tab, err := decode(data)
		if err != nil {
			p.reject(w, r, postingClient(r), http.StatusBadRequest, "malformed_body", "%v", err)
			return
		}
		clientID, ok := p.clientFor(w, r, bodyClient)
		if !ok {
			return
		}
		if budgeted {
			if ok, logNow, n := p.events.allow(clientID); !ok {
				if logNow {
					p.log.Warn("host_browser events shed over the client's event budget",
						"route", r.URL.Path, "clientId", clientID, "shed", n, "shedTotal", p.events.shed.Load())
				}
				writeError(w, http.StatusTooManyRequests, "events_shed", "event budget exceeded; the event was dropped")
				return
			}
		}
		p.hub.Touch(clientID)
		if tab != "" && ev.SessionID != tab {
			// A child session's event that also names its tab.
			p.attr.set(clientID, attrSession, ev.SessionID, tab)
		}
		p.publishEvent(clientID, ev)
		if p.relay != nil {
			p.relay.RelayEvent(clientID, ev)
		}
		writeJSON(w, http.StatusOK, accepted)
	})
}

// listen makes bus a listener of clientID's events for a backend serving
// conversation, until the returned func is called.
func (p *Proxy) listen(clientID, conversation string, bus *browserbackend.EventBus) (*listener, func()) {
	l := &listener{bus: bus, conversation: conversation}
	p.mu.Lock()
	set := p.listeners[clientID]
	if set == nil {
		set = make(map[*listener]struct{})
		p.listeners[clientID] = set
	}
	set[l] = struct{}{}
	p.mu.Unlock()
	return l, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if set := p.listeners[clientID]; set != nil {
			delete(set, l)
			if len(set) == 0 {
				delete(p.listeners, clientID)
			}
		}
	}
}

// publishEvent delivers ev to the listeners of clientID it belongs to
// (WIRE-4, see routeEvent) and learns the ids it ties to its tab.
func (p *Proxy) publishEvent(clientID string, ev browserbackend.Event) {
	var ids eventIDs
	if len(ev.Params) > 0 {
		_ = json.Unmarshal(ev.Params, &ids) // DecodeEvent checked it is JSON
	}
	p.attr.set(clientID, attrSeen, "-", "yes")
	if ev.SessionID == "" {
		p.attr.set(clientID, attrAnon, "-", "yes")
	}
	owners, attributed := p.attr.attribute(clientID, ev, &ids)
	if attributed {
		p.attr.learnEvent(clientID, owners[0], ev, &ids)
	}
	p.mu.Lock()
	ls := make([]*listener, 0, len(p.listeners[clientID]))
	for l := range p.listeners[clientID] {
		ls = append(ls, l)
	}
	p.mu.Unlock()
	to, withheld := routeEvent(ls, owners, attributed)
	if withheld {
		p.unattributed.Add(1)
	}
	for _, l := range to {
		l.bus.Publish(ev) // never blocks
	}
}
