package natshub

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
)

// Message is what another replica sent this one with Send or Broadcast.
type Message struct {
	// CorrelationID is the one given to Send; "" for a broadcast.
	CorrelationID string
	// Header holds the sender's headers. Names starting with "Bc-" are the
	// hub's own.
	Header nats.Header
	// Data is the payload, a buffer of its own: the handler may keep it.
	Data []byte
}

// Handler receives what other replicas send this one. Each method is
// called on the hub's subscription goroutine, one message at a time per
// kind, so it must not block for long. Implementations must be safe for
// concurrent use (the two kinds run concurrently).
type Handler interface {
	// ServeMessage answers a message sent with Send; the answer is Send's
	// result on the sender.
	ServeMessage(m Message) []byte
	// ServeBroadcast receives a message sent with Broadcast.
	ServeBroadcast(m Message)
}

// ErrNoReplica is returned by Send when no replica of that name serves
// messages: none has that name, it is declared dead, or it has no Handler.
var ErrNoReplica = errors.New("natshub: no such replica")

// handlerBox holds the Handler set with Handle.
type handlerBox struct{ h Handler }

// Peers is the hub's replica-to-replica seam: opaque messages to one
// replica (Send) or all (Broadcast), and the Handler of the messages others
// send this one. Safe for concurrent use.
type Peers struct{ h *Hub }

// Peers returns the hub's replica-to-replica seam.
func (h *Hub) Peers() Peers { return Peers{h} }

// Handle sets the Handler of the messages other replicas send this one;
// until it is called, Send to this replica fails with ErrNoReplica and
// broadcasts are dropped. A later call replaces the handler. Safe for
// concurrent use.
func (p Peers) Handle(hd Handler) { p.h.handler.Store(&handlerBox{hd}) }

func (h *Hub) currentHandler() Handler {
	if b := h.handler.Load(); b != nil {
		return b.h
	}
	return nil
}

// Send sends data with hdr (nil for none) to replica's Handler and returns
// its answer; data larger than the broker's max_payload travels in parts.
// The hub may add headers of its own to hdr ("Bc-" names): hdr is not to be
// reused. Errors: ErrNoReplica, ctx's, or the broker's. A replica not
// declared dead that has no responder yet (it is subscribing again after a
// broker restart) is retried with backoff for up to 2 s.
//
// correlationID, when not "", ties the message to the event published with
// Target.CorrelationID set to it: if this replica holds that event's
// client and still keeps the delivery answer back, the answer travels with
// the message, and the receiving replica releases the Publish waiting for
// it once its Handler has answered (or, when the message did not carry it,
// asks the holder for it).
func (p Peers) Send(ctx context.Context, replica, correlationID string, hdr nats.Header, data []byte) ([]byte, error) {
	h := p.h
	if replica == h.replica || !nameRE.MatchString(replica) {
		return nil, ErrNoReplica
	}
	if correlationID != "" {
		if hdr == nil {
			hdr = nats.Header{}
		}
		hdr.Set(hdrCorrelation, correlationID)
		h.attachAck(correlationID, hdr, len(data))
	}
	subj := h.subj("replica", replica, "msg")
	m, err := request(ctx, h.nc, subj, hdr, data)
	for wait, until := relayRetryMin, time.Now().Add(h.staleWait); errors.Is(err, nats.ErrNoResponders) &&
		h.replicaAlive(replica) && time.Now().Add(wait).Before(until); wait = min(2*wait, relayRetryMax) {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		m, err = request(ctx, h.nc, subj, hdr, data)
	}
	var ce *codeError
	switch {
	case errors.Is(err, nats.ErrNoResponders), errors.As(err, &ce) && ce.code == codeNoHandler:
		return nil, ErrNoReplica
	case err != nil:
		return nil, errf("send to replica %q: %w", replica, err)
	}
	return m.Data, nil
}

// The backoff of a Send that found no responder.
const (
	relayRetryMin = 20 * time.Millisecond
	relayRetryMax = 250 * time.Millisecond
)

// codeNoHandler answers a message sent to a replica without a Handler.
const codeNoHandler = "no_handler"

// replicaAlive reports whether this replica has not declared replica dead
// (it may not have heard it yet).
func (h *Hub) replicaAlive(replica string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.replicas[replica]
	return r == nil || !r.dead
}

// onMessage serves a message sent with Send.
func (h *Hub) onMessage(m *nats.Msg) {
	m, ok := h.relayAsm.add(m)
	if !ok {
		return
	}
	hd := h.currentHandler()
	if hd == nil {
		respondError(m, codeNoHandler, "no handler on this replica")
		return
	}
	cid := m.Header.Get(hdrCorrelation)
	out := hd.ServeMessage(Message{CorrelationID: cid, Header: m.Header, Data: m.Data})
	if cid != "" {
		h.settleAwaited(cid, m.Header) // after the handler: the caller finds its reply
	}
	_ = m.Respond(out)
}

// Broadcast sends data with hdr (nil for none) to every other replica's
// Handler, without an answer. It never waits for a replica. Data larger
// than the broker's max_payload (less 8 KiB for headers) is refused with an
// error. The hub may add headers of its own to hdr.
func (p Peers) Broadcast(hdr nats.Header, data []byte) error {
	h := p.h
	if len(data) > int(h.nc.MaxPayload())-headerRoom {
		return errf("broadcast of %d bytes exceeds the broker's max_payload", len(data))
	}
	if hdr == nil {
		hdr = nats.Header{}
	}
	hdr.Set(hdrReplica, h.replica)
	if err := h.nc.PublishMsg(&nats.Msg{Subject: h.subj("events"), Header: hdr, Data: data}); err != nil {
		return errf("broadcast: %w", err)
	}
	return nil
}

// onBroadcastMessage serves a message sent with Broadcast.
func (h *Hub) onBroadcastMessage(m *nats.Msg) {
	if m.Header.Get(hdrReplica) == h.replica {
		return
	}
	if hd := h.currentHandler(); hd != nil {
		hd.ServeBroadcast(Message{Header: m.Header, Data: m.Data})
	}
}
