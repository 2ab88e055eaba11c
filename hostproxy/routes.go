package hostproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
)

// Mount registers the three client routes on mux; each answers 405 to
// another method than POST, 413 to a body over Options.MaxBodyBytes and
// {"error":{"code","message"}} to every refusal:
//
//   - POST /v1/host-browser-result, body ResultBody, the client named by the
//     X-Vellum-Client-Id header: 200 {"accepted":true} when the result
//     reached its request; 400 malformed, no requestId, or no client on a
//     targeted request; 403 another client or actor than the request's
//     target; 404 not pending or nobody waits for it here; 409 not a
//     host_browser interaction. A refused result leaves its request
//     pending; a 413 fails the request it names with payload_too_large.
//   - POST /v1/host-browser-event, body EventBody, and POST
//     /v1/host-browser-session-invalidated, body InvalidationBody
//     (delivered as Target.detachedFromTarget): the client named by the
//     header, else by the credential (eventhub.ClientIDFrom), else, for an
//     invalidation, by the body; delivered to the backends bound to that
//     client that own its tab. 200 {"accepted":true}; 400 no client,
//     malformed, no method; 403 another actor's client or a body naming
//     another client; 404 client not connected; 429 events_shed over the
//     client's event budget (events only).
//
// Accepted posts count as activity of the client (Hub.Touch). The host app
// wraps mux (or these routes) with its auth middleware, which must put the
// authenticated actor into the request context with eventhub.WithActor.
// The result socket (ResultSocketHandler) is mounted separately.
func (p *Proxy) Mount(mux *http.ServeMux) {
	mux.Handle("POST "+wire.PathHostBrowserResult, p.resultRoute())
	mux.Handle("POST "+wire.PathHostBrowserEvent, p.eventRoute(true, decodeEventRoute))
	mux.Handle("POST "+wire.PathHostBrowserSessionInvalidated, p.eventRoute(false, decodeInvalidationRoute))
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
// the reason code and the client id; never a credential or a body.
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

// clientFor checks the posting client of the event routes. The
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

// eventRoute is the shared shape of the two event routes: read the capped
// body, decode, check the posting client, deliver.
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
		if rej := p.events.accept(clientID, ev, tab, budgeted, r.URL.Path); rej != nil {
			writeError(w, rej.status, rej.code, "%s", rej.msg) // logged, at most once a second, by accept
			return
		}
		writeJSON(w, http.StatusOK, accepted)
	})
}

// decodeEventRoute decodes the body of the event route.
func decodeEventRoute(data []byte) (browserbackend.Event, string, string, error) {
	body, err := DecodeEvent(data)
	return browserbackend.Event{Method: body.Method, Params: body.Params, SessionID: body.Session()}, "", body.Tab(), err
}

// decodeInvalidationRoute decodes the body of the session-invalidated route
// into the Target.detachedFromTarget event it is delivered as, with params
// {"sessionId","targetId","reason"}, and the clientId it names.
func decodeInvalidationRoute(data []byte) (browserbackend.Event, string, string, error) {
	body, err := DecodeInvalidation(data)
	if err != nil {
		return browserbackend.Event{}, "", "", err
	}
	params, _ := json.Marshal(InvalidationBody{SessionID: body.SessionID, TargetID: body.TargetID, Reason: body.Reason})
	return browserbackend.Event{Method: browserbackend.MethodTargetDetached, Params: params, SessionID: body.SessionID}, body.ClientID, "", nil
}

// resultRoute serves POST /v1/host-browser-result (see Mount).
func (p *Proxy) resultRoute() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := p.readBody(w, r)
		clientID := postingClient(r)
		actor, _ := eventhub.ActorFrom(r.Context())
		if !ok {
			if id := requestIDPrefix(data); id != "" {
				p.failTooLarge(id, clientID, actor, TransportHTTP)
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
		if rej := p.acceptResult(body, clientID, actor, TransportHTTP, data); rej != nil {
			p.reject(w, r, clientID, rej.status, rej.code, "%s", rej.msg)
			return
		}
		writeJSON(w, http.StatusOK, accepted)
	})
}

// ClientFrames is the Proxy's client socket adapter: a transport of the host
// app that carries a client's frames on a socket of its own (a remote
// device's) hands each frame to it. Safe for concurrent use.
type ClientFrames struct{ p *Proxy }

// ClientFrames returns the Proxy's client socket adapter.
func (p *Proxy) ClientFrames() ClientFrames { return ClientFrames{p} }

// MaxBodyBytes returns the largest result body or client socket message the
// Proxy accepts, in bytes (Options.MaxBodyBytes, default
// DefaultMaxBodyBytes). A transport of the host app caps its frames at it
// and tells its clients.
func (f ClientFrames) MaxBodyBytes() int64 { return f.p.maxBody }
