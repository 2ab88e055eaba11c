package hostproxy

import (
	"fmt"
	"net/http"

	"github.com/browserchain/browserchain/browserbackend"
)

// TransportRemote labels results that reached the Proxy over a remote device
// socket (package hostproxy/remote, REM-4).
const TransportRemote Transport = "remote"

// RefusalError is why DeliverResult or DeliverEvent refused a message: the
// HTTP status and route error code the matching POST route would have
// answered (400, 403, 404, 409, 429), and a message that names no
// credential.
type RefusalError struct {
	Status  int
	Code    string
	Message string
}

func (e *RefusalError) Error() string {
	return fmt.Sprintf("hostproxy: %s: %s", e.Code, e.Message)
}

// DeliverResult runs the PXY-4 checks of POST /v1/host-browser-result on a
// result that a transport of the host app received from clientID, which it
// authenticated as acting for actor, and hands it to the waiting request.
// It is how a transport other than the built-in routes (a remote device
// socket, REM-4) carries results: the client id and actor are the
// transport's binding, never ids the client reports about itself. raw is
// the message as received (for Options.OnResult; may be nil). A refusal is
// a *RefusalError and leaves the request pending. Safe for concurrent use.
func (p *Proxy) DeliverResult(body ResultBody, clientID, actor string, tr Transport, raw []byte) error {
	if body.RequestID == "" {
		return &RefusalError{Status: http.StatusBadRequest, Code: "missing_request_id", Message: "requestId is required"}
	}
	if rej := p.acceptResult(body, clientID, actor, tr, raw); rej != nil {
		return &RefusalError{Status: rej.status, Code: rej.code, Message: rej.msg}
	}
	return nil
}

// DeliverEvent hands a CDP event (or, with Method
// browserbackend.MethodTargetDetached, a session invalidation) observed by
// clientID to the backends bound to that client, as POST
// /v1/host-browser-event does: the client must be connected under actor
// (else *RefusalError 404 unknown_client or 403 wrong_actor); with budgeted
// the post is charged to the client's event budget (WIRE-5) and refused 429
// events_shed over it. The event counts as activity of the client (HUB-5).
// Safe for concurrent use.
func (p *Proxy) DeliverEvent(clientID, actor string, ev browserbackend.Event, budgeted bool) error {
	return p.deliverEvent(clientID, actor, ev, "", budgeted, string(TransportRemote))
}

// deliverEvent is DeliverEvent with the tab the event names (decimal
// digits, or ""; see EventBody.Tab) and the transport named in the shed
// warning.
func (p *Proxy) deliverEvent(clientID, actor string, ev browserbackend.Event, tab string, budgeted bool, route string) error {
	info, ok := p.hub.Client(clientID)
	if !ok {
		return &RefusalError{Status: http.StatusNotFound, Code: "unknown_client", Message: fmt.Sprintf("client %q is not connected", clientID)}
	}
	if info.ActorPrincipalID != "" && info.ActorPrincipalID != actor {
		return &RefusalError{Status: http.StatusForbidden, Code: "wrong_actor", Message: fmt.Sprintf("client %q belongs to another actor", clientID)}
	}
	if budgeted {
		if ok, logNow, n := p.events.allow(clientID); !ok {
			if logNow {
				p.log.Warn("host_browser events shed over the client's event budget",
					"route", route, "clientId", clientID, "shed", n, "shedTotal", p.events.shed.Load())
			}
			return &RefusalError{Status: http.StatusTooManyRequests, Code: "events_shed", Message: "event budget exceeded; the event was dropped"}
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
	return nil
}
