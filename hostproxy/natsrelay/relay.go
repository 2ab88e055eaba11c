package natsrelay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"unsafe"

	"github.com/nats-io/nats.go"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub/natshub"
	"github.com/browserchain/browserchain/hostproxy"
)

// NewProxy returns the hostproxy.Proxy of hub's replica: opts with Hub set
// to hub, request ids prefixed with the replica name ("<replica>.<id>") and
// a relay over the hub's Send and Broadcast, so a result posted to any
// replica reaches the caller waiting here, and a client's events reach this
// replica's backends. It installs the relay as hub's Handler: call it once
// per hub (a later call takes the relayed results and events over).
func NewProxy(hub *natshub.Hub, opts hostproxy.Options) *hostproxy.Proxy {
	next := opts.NewRequestID
	if next == nil {
		next = func() string {
			var b [16]byte
			_, _ = rand.Read(b[:])
			return hex.EncodeToString(b[:])
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	r := &relay{hub: hub, log: log}
	opts.Hub = hub
	opts.Relay = r
	opts.NewRequestID = func() string { return hub.Replica() + "." + next() }
	r.proxy = hostproxy.New(opts)
	hub.Peers().Handle(r)
	return r.proxy
}

// Headers of a relayed result; its request id is the Send's correlation id
// and its content the payload as is.
const (
	hdrIsError   = "Relay-Is-Error"
	hdrClientID  = "Relay-Client-Id"
	hdrActor     = "Relay-Actor"
	hdrTransport = "Relay-Transport"
)

// relay is the hostproxy.Relay and natshub.Handler of one replica.
type relay struct {
	hub   *natshub.Hub
	proxy *hostproxy.Proxy // set before the relay is installed as Handler
	log   *slog.Logger
}

var (
	_ hostproxy.Relay = (*relay)(nil)
	_ natshub.Handler = (*relay)(nil)
)

// errRelayFailed is the verdict when the replica where the caller waits
// did not answer.
var errRelayFailed = hostproxy.RelayVerdict{Status: http.StatusServiceUnavailable, Code: "relay_failed",
	Message: "the replica waiting for this result did not answer"}

// RelayResult implements hostproxy.Relay: the request id names the replica
// where the caller waits. The content travels as the message payload (no
// JSON round trip of a 10 MB screenshot), the rest in headers.
func (r *relay) RelayResult(ctx context.Context, rr hostproxy.RelayedResult) (hostproxy.RelayVerdict, bool) {
	owner, _, ok := strings.Cut(rr.Body.RequestID, ".")
	if !ok || owner == r.hub.Replica() {
		return hostproxy.RelayVerdict{}, false
	}
	// The broker client only reads the payload: it may share the string's
	// bytes instead of copying a screenshot.
	data := unsafe.Slice(unsafe.StringData(rr.Body.Content), len(rr.Body.Content))
	hdr := nats.Header{}
	if rr.Body.IsError {
		hdr.Set(hdrIsError, "1")
	}
	hdr.Set(hdrClientID, rr.ClientID)
	hdr.Set(hdrActor, rr.Actor)
	hdr.Set(hdrTransport, string(rr.Transport))
	out, err := r.hub.Peers().Send(ctx, owner, rr.Body.RequestID, hdr, data)
	if errors.Is(err, natshub.ErrNoReplica) {
		return hostproxy.RelayVerdict{}, false
	}
	var v hostproxy.RelayVerdict
	if err != nil || json.Unmarshal(out, &v) != nil {
		r.log.Warn("natsrelay: result relay failed", "requestId", rr.Body.RequestID, "owner", owner, "error", err)
		return errRelayFailed, true
	}
	return v, true
}

// ServeMessage implements natshub.Handler: a result relayed by another
// replica, answered with the proxy's verdict as JSON.
func (r *relay) ServeMessage(m natshub.Message) []byte {
	var v hostproxy.RelayVerdict
	if m.CorrelationID == "" {
		v = hostproxy.RelayVerdict{Status: http.StatusBadRequest, Code: "malformed_body", Message: "relayed result has no request id"}
	} else {
		// m.Data is the message's own buffer and nothing else refers to
		// it, so the content may share it.
		body := hostproxy.ResultBody{RequestID: m.CorrelationID, Content: unsafe.String(unsafe.SliceData(m.Data), len(m.Data)),
			IsError: m.Header.Get(hdrIsError) == "1"}
		v = r.proxy.RelayInbox().AcceptResult(hostproxy.RelayedResult{Body: body, ClientID: m.Header.Get(hdrClientID),
			Actor: m.Header.Get(hdrActor), Transport: hostproxy.Transport(m.Header.Get(hdrTransport))})
	}
	out, _ := json.Marshal(v)
	return out
}

type relayedEvent struct {
	ClientID string               `json:"clientId"`
	Event    browserbackend.Event `json:"event"`
}

// RelayEvent implements hostproxy.Relay: one broadcast every replica
// receives; an event over the broker's max_payload is dropped and logged.
func (r *relay) RelayEvent(clientID string, ev browserbackend.Event) {
	data, err := json.Marshal(relayedEvent{ClientID: clientID, Event: ev})
	if err == nil {
		err = r.hub.Peers().Broadcast(nil, data)
	}
	if err != nil {
		r.log.Warn("natsrelay: event not relayed", "clientId", clientID, "method", ev.Method, "bytes", len(data), "error", err)
	}
}

// ServeBroadcast implements natshub.Handler: an event another replica
// received from a client, for this replica's backends.
func (r *relay) ServeBroadcast(m natshub.Message) {
	var e relayedEvent
	if json.Unmarshal(m.Data, &e) == nil {
		r.proxy.RelayInbox().DeliverEvent(e.ClientID, e.Event)
	}
}
