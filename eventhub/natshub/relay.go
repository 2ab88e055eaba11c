package natshub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
	"unsafe"

	"github.com/nats-io/nats.go"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/hostproxy"
)

// NewProxy returns the hostproxy.Proxy of this replica (DHUB-3): opts with
// Hub set to h, request ids prefixed with the replica name ("<replica>.<id>")
// and a hostproxy.Relay, so a result posted to any replica reaches the
// caller waiting here, and a client's events reach this replica's backends.
// Call it once per hub; the last proxy created receives relayed results.
func (h *Hub) NewProxy(opts hostproxy.Options) *hostproxy.Proxy {
	next := opts.NewRequestID
	if next == nil {
		next = func() string {
			var b [16]byte
			_, _ = rand.Read(b[:])
			return hex.EncodeToString(b[:])
		}
	}
	opts.Hub = h
	opts.Relay = relay{h}
	opts.NewRequestID = func() string { return h.replica + "." + next() }
	p := hostproxy.New(opts)
	h.mu.Lock()
	h.proxy = p
	h.mu.Unlock()
	return p
}

func (h *Hub) currentProxy() *hostproxy.Proxy {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.proxy
}

type relay struct{ h *Hub }

// RelayResult implements hostproxy.Relay: the request id names the replica
// where the caller waits. The result's content is the message payload as
// is (no JSON round trip of a 10 MB screenshot); the request id, error
// flag and, when this replica delivered the request, its held-back delivery
// answer (ack.go) travel in headers.
func (r relay) RelayResult(ctx context.Context, rr hostproxy.RelayedResult) (hostproxy.RelayVerdict, bool) {
	h := r.h
	owner, _, ok := strings.Cut(rr.Body.RequestID, ".")
	if !ok || owner == h.replica || !nameRE.MatchString(owner) {
		return hostproxy.RelayVerdict{}, false
	}
	// The broker client only reads the payload: it may share the string's
	// bytes instead of copying a screenshot.
	data := unsafe.Slice(unsafe.StringData(rr.Body.Content), len(rr.Body.Content))
	hdr := nats.Header{}
	hdr.Set(hdrRequestID, rr.Body.RequestID)
	if rr.Body.IsError {
		hdr.Set(hdrIsError, "1")
	}
	hdr.Set(hdrClientID, rr.ClientID)
	hdr.Set(hdrActor, rr.Actor)
	hdr.Set(hdrTransport, string(rr.Transport))
	// The delivery answer held back for this request rides in the result's
	// headers, or, for a result sent in parts, leaves just before it.
	if len(data) <= int(h.nc.MaxPayload())-headerRoom {
		if h.carryAck(rr.Body.RequestID, hdr) {
			hdr.Set(hdrAcked, "1")
		}
	} else if h.sendAck(rr.Body.RequestID) {
		hdr.Set(hdrAcked, "1")
	}
	m, err := request(ctx, h.nc, h.subj("replica", owner, "relay"), hdr, data)
	// No responder for a replica not declared dead: the broker may not know
	// its subscription yet — replicas subscribe again as they reconnect
	// after a broker restart, and a result posted in that moment found
	// none, was refused as unknown, and its caller waited out its deadline.
	// It is sent again, with backoff, for up to staleWait. (A replica heard
	// of only by its request ids counts: a new replica hears the others at
	// their next heartbeat.)
	for wait, until := relayRetryMin, time.Now().Add(staleWait); errors.Is(err, nats.ErrNoResponders) &&
		h.replicaAlive(owner) && time.Now().Add(wait).Before(until); wait = min(2*wait, relayRetryMax) {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return hostproxy.RelayVerdict{Status: http.StatusServiceUnavailable, Code: "relay_failed",
				Message: "the replica waiting for this result did not answer"}, true
		case <-t.C:
		}
		m, err = request(ctx, h.nc, h.subj("replica", owner, "relay"), hdr, data)
	}
	if errors.Is(err, nats.ErrNoResponders) {
		return hostproxy.RelayVerdict{}, false
	}
	var v hostproxy.RelayVerdict
	if err != nil || json.Unmarshal(m.Data, &v) != nil {
		h.log.Warn("natshub: result relay failed", "requestId", rr.Body.RequestID, "owner", owner, "error", err)
		return hostproxy.RelayVerdict{Status: http.StatusServiceUnavailable, Code: "relay_failed",
			Message: "the replica waiting for this result did not answer"}, true
	}
	return v, true
}

// The backoff of a result relay that found no responder (see RelayResult).
const (
	relayRetryMin = 20 * time.Millisecond
	relayRetryMax = 250 * time.Millisecond
)

// replicaAlive reports whether this replica has not declared replica dead
// (it may not have heard it yet).
func (h *Hub) replicaAlive(replica string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.replicas[replica]
	return r == nil || !r.dead
}

func (h *Hub) onRelay(m *nats.Msg) {
	m, ok := h.relayAsm.add(m)
	if !ok {
		return
	}
	p := h.currentProxy()
	var v hostproxy.RelayVerdict
	// m.Data is this message's own buffer (the client copies each payload;
	// the assembler allocates a joined one) and nothing else refers to it,
	// so the content may share it.
	body := hostproxy.ResultBody{RequestID: m.Header.Get(hdrRequestID), Content: unsafe.String(unsafe.SliceData(m.Data), len(m.Data)),
		IsError: m.Header.Get(hdrIsError) == "1"}
	switch {
	case p == nil:
		v = hostproxy.RelayVerdict{Status: http.StatusNotFound, Code: "unknown_request", Message: "no proxy on this replica"}
	case body.RequestID == "":
		v = hostproxy.RelayVerdict{Status: http.StatusBadRequest, Code: "malformed_body", Message: "relayed result has no request id"}
	default:
		v = p.AcceptRelayed(hostproxy.RelayedResult{Body: body, ClientID: m.Header.Get(hdrClientID),
			Actor: m.Header.Get(hdrActor), Transport: hostproxy.Transport(m.Header.Get(hdrTransport))})
		switch {
		case m.Header.Get(hdrAckID) != "":
			h.answerCarried(body.RequestID, m) // after the result is in: the caller finds it
		case v.Status == http.StatusOK && m.Header.Get(hdrAcked) == "":
			h.askAck(body.RequestID)
		}
	}
	out, _ := json.Marshal(v)
	_ = m.Respond(out)
}

type relayedEvent struct {
	ClientID string               `json:"clientId"`
	Event    browserbackend.Event `json:"event"`
}

// RelayEvent implements hostproxy.Relay: one core publish every replica
// receives; an event over the broker's max_payload is dropped and logged.
func (r relay) RelayEvent(clientID string, ev browserbackend.Event) {
	h := r.h
	data, err := json.Marshal(relayedEvent{ClientID: clientID, Event: ev})
	if err != nil || len(data) > int(h.nc.MaxPayload())-headerRoom {
		h.log.Warn("natshub: event not relayed", "clientId", clientID, "method", ev.Method, "bytes", len(data))
		return
	}
	m := nats.NewMsg(h.subj("events"))
	m.Header.Set(hdrReplica, h.replica)
	m.Data = data
	_ = h.nc.PublishMsg(m)
}

func (h *Hub) onEvent(m *nats.Msg) {
	if m.Header.Get(hdrReplica) == h.replica {
		return
	}
	var e relayedEvent
	if json.Unmarshal(m.Data, &e) != nil {
		return
	}
	if p := h.currentProxy(); p != nil {
		p.DeliverRelayedEvent(e.ClientID, e.Event)
	}
}
