package natshub

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
)

// Deferred delivery answers. A Publish to a client on another replica with
// Target.ReplayUntil and Target.CorrelationID set waits for the holder's
// answer (the envelope id Retract needs). The holder keeps that answer back
// for at most ackDelay and sends it with the first Send under the same
// correlation id that leaves it (in its headers, or just before a message
// sent in parts); a Send reaching the publisher without it makes the
// publisher ask the holder at once ("<prefix>.client.<id>.ack"). The wait
// also ends when the client's roster entry does.

// defaultAckDelay bounds how long a holder keeps a delivery answer back.
const defaultAckDelay = 10 * time.Millisecond

// awaitEntry is a publish waiting for its holder's answer; answer ends the
// wait with a cause (a *carriedAnswer or errGone).
type awaitEntry struct {
	clientID string
	answer   context.CancelCauseFunc
}

// carriedAnswer is a holder's answer that came in a Send's headers.
type carriedAnswer struct{ hdr nats.Header }

func (*carriedAnswer) Error() string { return "natshub: delivery answer carried by a message" }

// Headers of a Send carrying the delivery answer, and of one whose sender
// sent the answer just before it.
const (
	hdrAckID      = "Bc-Ack-Id"
	hdrAckReplica = "Bc-Ack-Replica"
	hdrAckReg     = "Bc-Ack-Reg"
	hdrAcked      = "Bc-Acked"
)

// deferredAck is an answer to a delivery held back by the holder.
type deferredAck struct {
	clientID string
	m        *nats.Msg // the delivery request
	r        *nats.Msg // its answer
	timer    *time.Timer
}

// deferAck holds the answer r to delivery m correlated by cid until a Send
// under cid leaves this replica, the publisher asks for it, the client
// leaves, or ackDelay.
func (h *Hub) deferAck(cid, clientID string, m, r *nats.Msg) {
	h.mu.Lock()
	if h.closed || h.acks[cid] != nil {
		h.mu.Unlock()
		_ = m.RespondMsg(r)
		return
	}
	a := &deferredAck{clientID: clientID, m: m, r: r}
	h.acks[cid] = a
	a.timer = time.AfterFunc(h.ackDelay, func() { h.sendAck(cid) })
	h.mu.Unlock()
}

// takeAck removes and returns the answer held back for cid, or nil.
func (h *Hub) takeAck(cid string) *deferredAck {
	h.mu.Lock()
	defer h.mu.Unlock()
	a := h.acks[cid]
	if a != nil {
		delete(h.acks, cid)
		a.timer.Stop()
	}
	return a
}

// sendAck sends the answer held back for cid, if any, and reports whether
// there was one.
func (h *Hub) sendAck(cid string) bool {
	a := h.takeAck(cid)
	if a == nil {
		return false
	}
	_ = a.m.RespondMsg(a.r)
	return true
}

// attachAck moves the answer held back for cid into hdr, the headers of a
// Send of size bytes, or, when the Send goes in parts, sends it first.
func (h *Hub) attachAck(cid string, hdr nats.Header, size int) {
	if size > int(h.nc.MaxPayload())-headerRoom {
		if h.sendAck(cid) {
			hdr.Set(hdrAcked, "1")
		}
		return
	}
	a := h.takeAck(cid)
	if a == nil {
		return
	}
	hdr.Set(hdrAckID, a.r.Header.Get(hdrID))
	hdr.Set(hdrAckReplica, a.r.Header.Get(hdrReplica))
	hdr.Set(hdrAckReg, a.r.Header.Get(hdrReg))
	hdr.Set(hdrAcked, "1")
}

// settleAwaited ends the wait of the publish correlated by cid, if any,
// after a Send under cid arrived with headers hdr: with the answer it
// carried, or by asking the holder when its sender had none.
func (h *Hub) settleAwaited(cid string, hdr nats.Header) {
	h.mu.Lock()
	e := h.awaiting[cid]
	h.mu.Unlock()
	switch {
	case e == nil:
	case hdr.Get(hdrAckID) != "":
		ans := nats.Header{}
		ans.Set(hdrID, hdr.Get(hdrAckID))
		ans.Set(hdrReplica, hdr.Get(hdrAckReplica))
		ans.Set(hdrReg, hdr.Get(hdrAckReg))
		e.answer(&carriedAnswer{hdr: ans})
	case hdr.Get(hdrAcked) == "":
		_ = h.nc.Publish(h.subj("client", token(e.clientID), "ack"), []byte(cid))
	}
}

// flushAcks sends every answer held back for clientID ("" for all).
func (h *Hub) flushAcks(clientID string) {
	var out []*deferredAck
	h.mu.Lock()
	for cid, a := range h.acks {
		if clientID == "" || a.clientID == clientID {
			delete(h.acks, cid)
			a.timer.Stop()
			out = append(out, a)
		}
	}
	h.mu.Unlock()
	for _, a := range out {
		_ = a.m.RespondMsg(a.r)
	}
}

// onClientAck serves a publisher's ask for the answer held back for the
// correlation id in m's data.
func (h *Hub) onClientAck(_ *localReg, m *nats.Msg) { h.sendAck(string(m.Data)) }
