package hostproxy

import (
	"context"
	"net/http"
	"time"

	"github.com/browserchain/browserchain/browserbackend"
)

// Relay carries what a client posts to this replica for a request or backend
// on another replica. A distributed hub provides it; a Proxy without one
// (Options.Relay nil) behaves as a single process. Implementations must be
// safe for concurrent use.
type Relay interface {
	// RelayResult hands a result whose request is not pending in this Proxy
	// to the replica where its caller waits; that replica runs the result
	// checks (RelayInbox.AcceptResult) and its verdict is the answer of the route. ok
	// is false when no replica claims the request (the route then answers
	// 404 as without a relay). ctx bounds the hand-over.
	RelayResult(ctx context.Context, r RelayedResult) (v RelayVerdict, ok bool)
	// RelayEvent hands a client's CDP event (or session invalidation) to the
	// other replicas, whose backends bound to that client deliver it
	// (RelayInbox.DeliverEvent). It must not block on a slow replica.
	RelayEvent(clientID string, ev browserbackend.Event)
}

// RelayedResult is a result posted to one replica for another: the decoded
// body, the posting client's id header, its authenticated actor and the
// transport it came on.
type RelayedResult struct {
	Body      ResultBody
	ClientID  string
	Actor     string
	Transport Transport
}

// RelayVerdict is the outcome of the result checks on the replica where the
// request waits: Status 200 (accepted) or the refusal's status, route error
// code and message.
type RelayVerdict struct {
	Status  int    `json:"status"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// relayTimeout bounds one result hand-over to another replica.
const relayTimeout = 30 * time.Second

// RelayInbox is the receiving end of a Relay: what another replica hands to
// this Proxy. Safe for concurrent use.
type RelayInbox struct{ p *Proxy }

// RelayInbox returns the Proxy's receiving end of a Relay.
func (p *Proxy) RelayInbox() RelayInbox { return RelayInbox{p} }

// AcceptResult is the receiving end of Relay.RelayResult: it runs the
// result checks on a result another replica received for a request pending
// in this Proxy, and delivers it. It never relays again: an id not pending
// here is 404. The client's activity is recorded by the replica that
// received the result, once the verdict is 200.
func (in RelayInbox) AcceptResult(r RelayedResult) RelayVerdict {
	p := in.p
	if rej := p.acceptChecked(r.Body, r.ClientID, r.Actor, r.Transport, nil, false); rej != nil {
		return RelayVerdict{Status: rej.status, Code: rej.code, Message: rej.msg}
	}
	return RelayVerdict{Status: http.StatusOK}
}

// DeliverEvent is the receiving end of Relay.RelayEvent: it delivers
// an event another replica received from clientID to this Proxy's backends
// bound to that client. It never blocks.
func (in RelayInbox) DeliverEvent(clientID string, ev browserbackend.Event) {
	p := in.p
	p.events.publish(clientID, ev)
}

// relayResult asks the relay about a result not pending here; nil rej with
// ok false means nobody claimed it.
func (p *Proxy) relayResult(body ResultBody, clientID, actor string, tr Transport) (*refusal, bool) {
	ctx, stop := context.WithTimeout(context.Background(), relayTimeout)
	defer stop()
	v, ok := p.relay.RelayResult(ctx, RelayedResult{Body: body, ClientID: clientID, Actor: actor, Transport: tr})
	if !ok {
		return nil, false
	}
	if v.Status == http.StatusOK {
		if clientID != "" {
			p.hub.Touch(clientID)
		}
		return nil, true
	}
	return &refusal{status: v.Status, code: v.Code, msg: v.Message}, true
}
