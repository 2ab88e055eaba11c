package natshub

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/hostproxy"
)

// Deferred delivery answers (DHUB-2, DHUB-3).
//
// A host_browser_request published on replica A to a client on replica B is
// a core request: B queues it to the client's stream and answers with the
// envelope id and registration A needs for Retract. Sent at once, that
// answer crosses the broker while the client is working on the request, and
// its handling on both replicas competes for the CPU with the client's
// round trip. B therefore holds the answer back, for at most ackDelay, and
// sends it just before the client's result, which comes back to B in the
// common case: the answer then rides in the relayed result's headers (one
// message, and A's waiting publish is released by the relay handler, after
// the result is delivered), or, for a result sent in parts, leaves just
// before it. When the result is posted to a third replica, A asks B for the
// answer at once (subject "<prefix>.client.<id>.ack"). A publish whose
// client's roster entry ends while the answer is outstanding returns
// without it (see Publish), so a crashed holder costs no more than its
// detection bound.
//
// Only awaited requests (Target.ReplayUntil set) of type
// host_browser_request with a request id are deferred; every other publish
// is answered at once.

// ackDelay bounds how long the replica holding a client keeps the answer to
// a delivered request while no result came for it (a variable for tests).
var ackDelay = 10 * time.Millisecond

// awaitEntry is a publish waiting for its holder's answer; answer ends the
// wait with a cause (a *carriedAnswer or errGone).
type awaitEntry struct {
	clientID string
	answer   context.CancelCauseFunc
}

// carriedAnswer is a holder's answer that came in a relayed result's
// headers: the delivery answer's headers.
type carriedAnswer struct{ hdr nats.Header }

func (*carriedAnswer) Error() string { return "natshub: delivery answer carried by the result" }

// Headers of a relayed result carrying the delivery answer.
const (
	hdrAckID      = "Bc-Ack-Id"
	hdrAckReplica = "Bc-Ack-Replica"
	hdrAckReg     = "Bc-Ack-Reg"
)

// deferredAck is an answer to a delivery held back by the holder.
type deferredAck struct {
	clientID string
	m        *nats.Msg // the delivery request
	r        *nats.Msg // its answer
	timer    *time.Timer
}

// requestIDOf returns the request id of a host_browser_request message, or
// "".
func requestIDOf(message any) string {
	switch m := message.(type) {
	case hostproxy.RequestMessage:
		if m.Type == wire.TypeHostBrowserRequest {
			return m.RequestID
		}
	case *hostproxy.RequestMessage:
		if m != nil && m.Type == wire.TypeHostBrowserRequest {
			return m.RequestID
		}
	}
	return ""
}

// deferAck holds the answer r to delivery m of request rid until the
// client's result passes this replica, A asks for it, the client leaves,
// or ackDelay.
func (h *Hub) deferAck(rid, clientID string, m, r *nats.Msg) {
	h.mu.Lock()
	if h.closed || h.acks[rid] != nil {
		h.mu.Unlock()
		_ = m.RespondMsg(r)
		return
	}
	a := &deferredAck{clientID: clientID, m: m, r: r}
	h.acks[rid] = a
	a.timer = time.AfterFunc(ackDelay, func() { h.sendAck(rid) })
	h.mu.Unlock()
}

// takeAck removes and returns the answer held back for request rid, or nil.
func (h *Hub) takeAck(rid string) *deferredAck {
	if rid == "" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	a := h.acks[rid]
	if a != nil {
		delete(h.acks, rid)
		a.timer.Stop()
	}
	return a
}

// sendAck sends the answer held back for request rid, if any, and reports
// whether there was one.
func (h *Hub) sendAck(rid string) bool {
	a := h.takeAck(rid)
	if a == nil {
		return false
	}
	_ = a.m.RespondMsg(a.r)
	return true
}

// carryAck moves the answer held back for request rid into hdr, the
// headers of its relayed result, and reports whether there was one.
func (h *Hub) carryAck(rid string, hdr nats.Header) bool {
	a := h.takeAck(rid)
	if a == nil {
		return false
	}
	hdr.Set(hdrAckID, a.r.Header.Get(hdrID))
	hdr.Set(hdrAckReplica, a.r.Header.Get(hdrReplica))
	hdr.Set(hdrAckReg, a.r.Header.Get(hdrReg))
	return true
}

// answerCarried releases the publish of request rid waiting for its answer
// with the one a relayed result carried (m's headers).
func (h *Hub) answerCarried(rid string, m *nats.Msg) {
	h.mu.Lock()
	e := h.awaiting[rid]
	h.mu.Unlock()
	if e == nil {
		return
	}
	hdr := nats.Header{}
	hdr.Set(hdrID, m.Header.Get(hdrAckID))
	hdr.Set(hdrReplica, m.Header.Get(hdrAckReplica))
	hdr.Set(hdrReg, m.Header.Get(hdrAckReg))
	e.answer(&carriedAnswer{hdr: hdr})
}

// flushAcks sends every answer held back for clientID ("" for all).
func (h *Hub) flushAcks(clientID string) {
	var out []*deferredAck
	h.mu.Lock()
	for rid, a := range h.acks {
		if clientID == "" || a.clientID == clientID {
			delete(h.acks, rid)
			a.timer.Stop()
			out = append(out, a)
		}
	}
	h.mu.Unlock()
	for _, a := range out {
		_ = a.m.RespondMsg(a.r)
	}
}

// onClientAck serves A's ask for the answer to a delivery whose result
// reached A through another replica.
func (h *Hub) onClientAck(_ *localReg, m *nats.Msg) { h.sendAck(string(m.Data)) }

// askAck is run on the publisher when a relayed result for request rid
// arrived while its publish still waits for the holder's answer, and the
// relaying replica did not send that answer itself: it asks the holder for
// it.
func (h *Hub) askAck(rid string) {
	h.mu.Lock()
	e := h.awaiting[rid]
	h.mu.Unlock()
	if e != nil {
		_ = h.nc.Publish(h.subj("client", token(e.clientID), "ack"), []byte(rid))
	}
}
