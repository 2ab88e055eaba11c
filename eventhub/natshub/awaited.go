package natshub

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/browserchain/browserchain/eventhub"
)

// Replay eligibility across replicas.
//
// The publisher of an awaited event (one with Target.ReplayUntil) is the
// only replica that knows whether its caller still waits, so it alone
// decides whether the event may be replayed: a replica about to replay an
// awaited event — from the replay stream after a foreign Last-Event-ID, or
// from its own list after one of its own ids — first claims it from the
// publisher, which grants the claim only while the event is not retracted
// and before its ReplayUntil. Retract therefore only flips the publisher's
// record (no broker round trip when the client still holds the
// registration that received the event live); a claim and a retraction are
// ordered by the publisher's lock, so a replay is decided wholly before or
// wholly after a retraction. When a claim was granted, Retract asks the
// replica holding the client whether its registration holds the event.
//
// Awaited events delivered here for another replica's publisher (or
// replayed here) go into the local ring with a past ReplayUntil, so the
// ring never replays them on its own; the replica keeps them in held for
// its own reconnects instead. A publisher that is gone (crashed, closed)
// answers no claim, and its events are not replayed: nobody waits for them.

// pastUntil is the ReplayUntil given to awaited events in the local ring:
// live delivery only, never a ring replay.
var pastUntil = time.Unix(1, 0)

// heldEvent is an awaited event this replica queued to one of its clients
// outside the ring's replay (see above).
type heldEvent struct {
	seq       uint64 // in the local hub's sequence
	pubID     string // the id its publisher knows
	publisher string
	actor     string
	conv      string
	data      []byte
	until     time.Time
}

// heldBytes bounds the held events of one client, in payload bytes, as the
// local ring's default.
const heldBytes = eventhub.DefaultReplayBytes

// deliverAwaited queues an awaited event (pubID of publisher, eligible
// until) to this replica's client as a live delivery only and keeps it in
// held for a later reconnect here. An empty pubID means the local id.
func (h *Hub) deliverAwaited(ctx context.Context, t eventhub.Target, publisher, pubID, conv string, data []byte) (string, error) {
	until := t.ReplayUntil
	t.ReplayUntil = pastUntil
	id, err := h.local.Publish(ctx, t, conv, json.RawMessage(data))
	if err != nil {
		return "", err
	}
	_, seq, perr := eventhub.ParseEventID(id)
	if perr != nil {
		return id, nil
	}
	fresh := pubID == "" // a live delivery: its id is new to held
	if fresh {
		pubID = id
	}
	actor := t.ActorPrincipalID
	if info, ok := h.local.Client(t.ClientID); ok {
		actor = info.ActorPrincipalID
	}
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	list := h.held[t.ClientID]
	if fresh {
		// Only the expired head is dropped here (no scan per delivery); the
		// bounds below and the sweep take care of the rest.
		for len(list) > 0 && !list[0].until.After(now) {
			list = list[1:]
		}
	} else {
		list = slices.DeleteFunc(list, func(e *heldEvent) bool {
			return e.pubID == pubID || !e.until.After(now)
		})
	}
	list = append(list, &heldEvent{seq: seq, pubID: pubID, publisher: publisher, actor: actor, conv: conv, data: data, until: until})
	total := 0
	for i := len(list) - 1; i >= 0; i-- {
		total += len(list[i].data)
		if total > heldBytes || len(list)-i > ReplayPerClient {
			list = slices.Delete(list, 0, i+1)
			break
		}
	}
	h.held[t.ClientID] = list
	if len(h.held) >= h.heldSweepAt {
		for k, l := range h.held {
			if l = slices.DeleteFunc(l, func(e *heldEvent) bool { return !e.until.After(now) }); len(l) == 0 {
				delete(h.held, k)
			} else {
				h.held[k] = l
			}
		}
		h.heldSweepAt = max(2*len(h.held), 1024)
	}
	return id, nil
}

// claimRequest is the body of a claim sent to a publisher.
type claimRequest struct {
	ClientID string   `json:"clientId"`
	IDs      []string `json:"ids"`
}

// claimLocal grants the claims on this replica's records: each id still
// awaited for clientID is marked claimed and returned.
func (h *Hub) claimLocal(clientID string, ids []string) []string {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	var ok []string
	for _, id := range ids {
		rec := h.published[id]
		if rec == nil || rec.clientID != clientID || rec.retracted || !rec.until.After(now) {
			continue
		}
		rec.claimed = true
		ok = append(ok, id)
	}
	return ok
}

func (h *Hub) onClaim(m *nats.Msg) {
	var req claimRequest
	if json.Unmarshal(m.Data, &req) != nil {
		respondError(m, "bad_request", "malformed claim")
		return
	}
	out, _ := json.Marshal(h.claimLocal(req.ClientID, req.IDs))
	_ = m.Respond(out)
}

// claim asks each publisher which of its events (by publisher, then id) are
// still awaited for clientID, and returns the granted ones as
// publisher → id → true. A publisher that does not answer grants nothing.
func (h *Hub) claim(ctx context.Context, clientID string, byPublisher map[string][]string) map[string]map[string]bool {
	out := make(map[string]map[string]bool, len(byPublisher))
	for pub, ids := range byPublisher {
		var granted []string
		if pub == h.replica {
			granted = h.claimLocal(clientID, ids)
		} else if nameRE.MatchString(pub) {
			body, _ := json.Marshal(claimRequest{ClientID: clientID, IDs: ids})
			reply, err := request(ctx, h.nc, h.subj("replica", pub, "claim"), nats.Header{}, body)
			if err != nil || json.Unmarshal(reply.Data, &granted) != nil {
				h.log.Debug("natshub: claim not granted; not replayed", "clientId", clientID, "publisher", pub, "error", err)
				continue
			}
		}
		set := make(map[string]bool, len(granted))
		for _, id := range granted {
			set[id] = true
		}
		out[pub] = set
	}
	return out
}

// replayHeld replays to reg's new stream, after one of this replica's own
// Last-Event-IDs (lastSeq), the held events after it that their publishers
// still await. Called with reg.mu held, as replayFromLog.
func (h *Hub) replayHeld(ctx context.Context, reg *localReg, lastSeq uint64) {
	now := time.Now()
	h.mu.Lock()
	var cands []*heldEvent
	for _, e := range h.held[reg.clientID] {
		if e.seq > lastSeq && e.until.After(now) && e.actor == reg.actor {
			cands = append(cands, e)
		}
	}
	h.mu.Unlock()
	if len(cands) == 0 {
		return
	}
	ask := map[string][]string{}
	for _, e := range cands {
		ask[e.publisher] = append(ask[e.publisher], e.pubID)
	}
	granted := h.claim(ctx, reg.clientID, ask)
	for _, e := range cands {
		if !granted[e.publisher][e.pubID] {
			continue
		}
		lid, err := h.deliverAwaited(ctx, eventhub.Target{ClientID: reg.clientID, ReplayUntil: e.until}, e.publisher, e.pubID, e.conv, e.data)
		if err != nil {
			h.log.Warn("natshub: replay publish failed", "clientId", reg.clientID, "error", err)
			return
		}
		reg.replayed[e.pubID] = lid
	}
}
