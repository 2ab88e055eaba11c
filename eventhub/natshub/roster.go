package natshub

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/browserchain/browserchain/eventhub"
)

// onRegister runs on the local hub's hook goroutine (in registration
// order): it subscribes the client's subjects, replays the awaited events
// its publishers still grant (recorded elsewhere after a foreign
// Last-Event-ID, or held here after one of this replica's own), and puts
// the roster entry.
func (h *Hub) onRegister(info eventhub.ClientInfo) {
	reg := &localReg{clientID: info.ClientID, actor: info.ActorPrincipalID, reg: nuid.Next(),
		replayed: make(map[string]string)}
	reg.asm.max = DefaultMaxTransfer
	reg.mu.Lock()
	defer reg.mu.Unlock()
	tok := token(info.ClientID)
	for _, s := range []struct {
		name string
		f    func(*localReg, *nats.Msg)
	}{{"deliver", h.onDeliver}, {"retract", h.onClientRetract}, {"touch", h.onTouch}, {"ack", h.onClientAck}} {
		f := s.f
		sub, err := h.nc.Subscribe(h.subj("client", tok, s.name), func(m *nats.Msg) { f(reg, m) })
		if err != nil {
			h.log.Warn("natshub: subscribe client subject failed", "clientId", info.ClientID, "error", err)
			continue
		}
		_ = sub.SetPendingLimits(1<<16, 256<<20)
		reg.subs = append(reg.subs, sub)
	}
	ctx, stop := context.WithTimeout(context.Background(), opTimeout)
	defer stop()
	_ = h.nc.FlushWithContext(ctx)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		unsubscribe(reg)
		return
	}
	h.locals[info.ClientID] = reg
	if old := h.view[info.ClientID]; old != nil {
		delete(h.view, info.ClientID)
		old.end()
	}
	lastID := h.lastIDs[info.ClientID]
	delete(h.lastIDs, info.ClientID)
	h.mu.Unlock()
	if lastID != "" {
		if _, seq, err := eventhub.ParseEventID(lastID); err == nil && h.local.OwnsEventID(lastID) {
			h.replayHeld(ctx, reg, seq)
		} else {
			h.replayFromLog(ctx, reg, lastID)
		}
	}
	h.putEntry(ctx, reg, info)
}

func unsubscribe(reg *localReg) {
	for _, s := range reg.subs {
		_ = s.Unsubscribe()
	}
	reg.subs = nil
}

// putEntry writes reg's roster entry; rev keeps its revision for the
// compare-and-swap of refreshes and the delete.
func (h *Hub) putEntry(ctx context.Context, reg *localReg, info eventhub.ClientInfo) {
	kv, _ := h.store()
	val, _ := json.Marshal(rosterValue{Info: info, Replica: h.replica, Reg: reg.reg})
	rev, err := kv.Put(ctx, token(reg.clientID), val)
	if err != nil {
		h.log.Warn("natshub: roster put failed; retried at the next refresh", "clientId", reg.clientID, "error", err)
		return
	}
	reg.rev.Store(rev)
}

// onUnregister unsubscribes the client's subjects and deletes its roster
// entry unless another registration has replaced it (compare-and-swap on
// the revision this replica wrote).
func (h *Hub) onUnregister(info eventhub.ClientInfo, _ eventhub.EndReason) {
	h.flushAcks(info.ClientID)
	h.mu.Lock()
	reg := h.locals[info.ClientID]
	if reg != nil {
		delete(h.locals, info.ClientID)
	}
	h.mu.Unlock()
	if reg == nil {
		return
	}
	reg.mu.Lock()
	unsubscribe(reg)
	rev := reg.rev.Load()
	reg.mu.Unlock()
	if rev == 0 {
		return
	}
	kv, _ := h.store()
	ctx, stop := context.WithTimeout(context.Background(), opTimeout)
	defer stop()
	if err := kv.Delete(ctx, token(info.ClientID), jetstream.LastRevision(rev)); err != nil {
		h.log.Debug("natshub: roster delete skipped", "clientId", info.ClientID, "error", err)
	}
}

func (h *Hub) onTouch(reg *localReg, _ *nats.Msg) {
	h.local.Touch(reg.clientID)
	h.mu.Lock()
	h.dirty = true
	h.mu.Unlock()
}

// logEntry is one record of the replay stream.
type logEntry struct {
	id, actor, conv, publisher string
	until                      time.Time
	data                       []byte
}

// readLog returns the replay stream's records for one client, oldest
// first, through an ephemeral ordered consumer.
func (h *Hub) readLog(ctx context.Context, clientID string) ([]logEntry, error) {
	_, st := h.store()
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{h.subj("log", token(clientID))}, InactiveThreshold: 10 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, err
	}
	n := int(info.NumPending)
	var out []logEntry
	for len(out) < n {
		batch, err := cons.Fetch(n-len(out), jetstream.FetchMaxWait(opTimeout))
		if err != nil {
			return out, err
		}
		got := 0
		for m := range batch.Messages() {
			got++
			e := logEntry{id: m.Headers().Get(hdrID), actor: m.Headers().Get(hdrActor),
				conv: m.Headers().Get(hdrConv), publisher: m.Headers().Get(hdrReplica), data: m.Data()}
			if u := m.Headers().Get(hdrUntil); u != "" {
				e.until, _ = time.Parse(time.RFC3339Nano, u)
			}
			out = append(out, e)
		}
		if got == 0 {
			return out, batch.Error()
		}
	}
	return out, nil
}

// replayFromLog publishes to reg's new stream the recorded events after
// lastID that are still eligible: of the registration's actor, before their
// ReplayUntil, and, for an awaited event, granted by its publisher (not
// retracted, see claim). An unknown lastID replays nothing. Called
// with reg.mu held, so a held-check's answer sees the outcome.
func (h *Hub) replayFromLog(ctx context.Context, reg *localReg, lastID string) {
	entries, err := h.readLog(ctx, reg.clientID)
	if err != nil {
		h.log.Warn("natshub: reading the replay stream failed", "clientId", reg.clientID, "error", err)
		return
	}
	at := slices.IndexFunc(entries, func(e logEntry) bool { return e.id == lastID })
	if at < 0 {
		h.log.Info("natshub: Last-Event-ID not in the replay stream; nothing to replay", "clientId", reg.clientID)
		return
	}
	// Records are in append order, which may differ from delivery order
	// (appends from several replicas, delayed ones of awaited events): one
	// issued by the stream the client resumes from at or before lastID is
	// one it has.
	lastEpoch, lastSeq, _ := eventhub.ParseEventID(lastID)
	now := time.Now()
	entries = slices.DeleteFunc(entries[at+1:], func(e logEntry) bool {
		if epoch, seq, err := eventhub.ParseEventID(e.id); err == nil && epoch == lastEpoch && seq <= lastSeq {
			return true
		}
		return e.id == "" || (!e.until.IsZero() && !e.until.After(now)) || e.actor != reg.actor
	})
	ask := map[string][]string{}
	for _, e := range entries {
		if !e.until.IsZero() {
			ask[e.publisher] = append(ask[e.publisher], e.id)
		}
	}
	granted := h.claim(ctx, reg.clientID, ask)
	for _, e := range entries {
		t := eventhub.Target{ClientID: reg.clientID, ReplayUntil: e.until}
		var lid string
		var err error
		switch {
		case e.until.IsZero():
			lid, err = h.local.Publish(ctx, t, e.conv, json.RawMessage(e.data))
		case granted[e.publisher][e.id]:
			lid, err = h.deliverAwaited(ctx, t, e.publisher, e.id, e.conv, e.data)
		default:
			continue // retracted, expired, or its publisher is gone
		}
		if err != nil {
			h.log.Warn("natshub: replay publish failed", "clientId", reg.clientID, "error", err)
			return
		}
		reg.replayed[e.id] = lid
	}
}

// watchLoop keeps the roster view: a key-value watcher, recreated after a
// broker reconnect (a watcher does not survive a server restart), whose
// initial values replace the view (resync).
func (h *Hub) watchLoop() {
	defer h.wg.Done()
	backoff := 50 * time.Millisecond
	for {
		select {
		case <-h.done:
			return
		default:
		}
		err := h.watchOnce()
		if err == nil {
			backoff = 50 * time.Millisecond
			continue
		}
		h.log.Debug("natshub: roster watch restarting", "error", err)
		select {
		case <-h.done:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

var errResync = errors.New("natshub: resync")

func (h *Hub) watchOnce() error {
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	if err := h.setupStore(ctx); err != nil { // the broker may have lost its store
		return err
	}
	kv, _ := h.store()
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	initial := map[string]rosterValue{}
	synced := false
	for {
		select {
		case <-h.done:
			return nil
		case st := <-h.status:
			h.onStatus(st)
			if st == nats.CONNECTED {
				return errResync
			}
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("natshub: watcher stopped")
			}
			if e == nil {
				synced = true
				h.replaceView(initial)
				h.reputLocal()
				continue
			}
			clientID, ok := untoken(e.Key())
			if !ok {
				continue
			}
			var v rosterValue
			put := e.Operation() == jetstream.KeyValuePut && json.Unmarshal(e.Value(), &v) == nil
			if !synced {
				if put {
					initial[clientID] = v
				}
				continue
			}
			h.applyEntry(clientID, v, put, e.Revision())
		}
	}
}

func (h *Hub) onStatus(st nats.Status) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.connected = st == nats.CONNECTED
	if h.connected { // silence while the broker was away is not a crash
		now := time.Now()
		for _, r := range h.replicas {
			r.lastSeen = now
		}
	}
}

// replaceView makes the view the bucket's current values: entries gone or
// replaced close their Gone channels; entries of this replica that it no
// longer holds are deleted from the bucket.
func (h *Hub) replaceView(m map[string]rosterValue) {
	var stale []string
	h.mu.Lock()
	for id, r := range h.view {
		if v, ok := m[id]; !ok || v.Reg != r.val.Reg {
			delete(h.view, id)
			r.end()
		}
	}
	for id, v := range m {
		if v.Replica == h.replica {
			if reg := h.locals[id]; reg == nil || reg.reg != v.Reg {
				stale = append(stale, id)
			}
			continue
		}
		// The bucket names another replica for a client held here whose
		// entry this replica had written: the other put came later (see
		// applyEntry).
		if reg := h.locals[id]; reg != nil && reg.rev.Load() != 0 {
			h.supersedeLocked(reg)
		}
		h.seenLocked(v.Replica)
		if r := h.view[id]; r != nil {
			r.val = v
		} else if !h.replicas[v.Replica].dead {
			h.view[id] = newRemoteReg(v)
		}
	}
	h.fireChangedLocked()
	h.mu.Unlock()
	kv, _ := h.store()
	for _, id := range stale {
		ctx, stop := context.WithTimeout(context.Background(), opTimeout)
		if e, err := kv.Get(ctx, token(id)); err == nil {
			var v rosterValue
			if json.Unmarshal(e.Value(), &v) == nil && v.Replica == h.replica {
				_ = kv.Delete(ctx, token(id), jetstream.LastRevision(e.Revision()))
			}
		}
		stop()
	}
}

// reputLocal writes every local client's entry again (after a resync the
// bucket may have lost them).
func (h *Hub) reputLocal() {
	h.mu.Lock()
	regs := make([]*localReg, 0, len(h.locals))
	for _, r := range h.locals {
		regs = append(regs, r)
	}
	h.mu.Unlock()
	for _, reg := range regs {
		info, ok := h.local.Client(reg.clientID)
		if !ok {
			continue
		}
		ctx, stop := context.WithTimeout(context.Background(), opTimeout)
		reg.mu.Lock()
		h.putEntry(ctx, reg, info)
		reg.mu.Unlock()
		stop()
	}
}

// applyEntry applies one watched change, the entry's revision rev, to the
// view. A put by another replica newer than this replica's own entry for a
// client it holds means the client registered there since (it reconnected
// elsewhere while its old stream here is still open): the registration
// here is ended as replaced, or both streams would receive every command
// sent to the client.
func (h *Hub) applyEntry(clientID string, v rosterValue, put bool, rev uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if put && v.Replica != h.replica {
		if reg := h.locals[clientID]; reg != nil && reg.rev.Load() != 0 && rev > reg.rev.Load() {
			h.supersedeLocked(reg)
		}
	}
	old := h.view[clientID]
	if !put {
		if old != nil {
			delete(h.view, clientID)
			old.end()
			h.fireChangedLocked()
		}
		return
	}
	if v.Replica == h.replica {
		if old != nil { // this replica holds the client now
			delete(h.view, clientID)
			old.end()
			h.fireChangedLocked()
		}
		return
	}
	h.seenLocked(v.Replica)
	switch {
	case old != nil && old.val.Reg == v.Reg:
		old.val = v
	case h.replicas[v.Replica].dead:
		return
	default:
		h.view[clientID] = newRemoteReg(v)
		if old != nil { // the new registration is in place first
			old.end()
		}
	}
	h.fireChangedLocked()
}

// supersedeLocked ends the local registration reg, which another replica's
// has replaced (EndReplaced; onUnregister then unsubscribes its subjects and
// leaves the newer roster entry alone). The local hub runs its hooks on
// their own goroutine, so h.mu may be held. A registration of the same
// client id made here in the moment before can be ended with it; its
// client reconnects.
func (h *Hub) supersedeLocked(reg *localReg) {
	h.log.Info("natshub: client registered on another replica; ending its registration here", "clientId", reg.clientID)
	h.local.Supersede(reg.clientID)
}

func (h *Hub) seenLocked(replica string) {
	if h.replicas[replica] == nil {
		h.replicas[replica] = &replicaState{lastSeen: time.Now()}
	}
}

func (h *Hub) onHeartbeat(m *nats.Msg) {
	name := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	if name == h.replica {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.replicas[name]
	if r == nil {
		r = &replicaState{}
		h.replicas[name] = r
	}
	r.lastSeen = time.Now()
	r.dead = false
}

// heartbeatLoop publishes this replica's heartbeat and marks replicas
// silent for DeadAfter periods as crashed: their clients leave the view and
// their Gone channels close. Nothing is marked while this replica
// is cut off from the broker.
func (h *Hub) heartbeatLoop() {
	defer h.wg.Done()
	t := time.NewTicker(h.cfg.heartbeat)
	defer t.Stop()
	subj := h.subj("hb", h.replica)
	_ = h.nc.Publish(subj, nil)
	for {
		select {
		case <-h.done:
			return
		case <-t.C:
		}
		_ = h.nc.Publish(subj, nil)
		now := time.Now()
		h.mu.Lock()
		if h.connected && h.nc.IsConnected() {
			for name, r := range h.replicas {
				if r.dead || now.Sub(r.lastSeen) <= DeadAfter*h.cfg.heartbeat {
					continue
				}
				r.dead = true
				h.log.Warn("natshub: replica silent; its clients are gone", "deadReplica", name,
					"silentFor", now.Sub(r.lastSeen))
				for id, reg := range h.view {
					if reg.val.Replica == name {
						delete(h.view, id)
						reg.end()
					}
				}
				h.fireChangedLocked()
			}
		}
		h.mu.Unlock()
	}
}

// refreshLoop re-puts local entries every RosterTTL/3 (the bucket TTL
// cannot be extended per key) and, between refreshes, when activity
// changed, at most once per TouchFlush.
func (h *Hub) refreshLoop() {
	defer h.wg.Done()
	t := time.NewTicker(h.cfg.touchFlush)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-h.done:
			return
		case <-t.C:
		}
		h.mu.Lock()
		due := h.dirty || time.Since(last) >= h.cfg.rosterTTL/3
		h.dirty = false
		regs := make([]*localReg, 0, len(h.locals))
		for _, r := range h.locals {
			regs = append(regs, r)
		}
		h.mu.Unlock()
		if !due {
			continue
		}
		last = time.Now()
		kv, _ := h.store()
		for _, reg := range regs {
			info, ok := h.local.Client(reg.clientID)
			if !ok {
				continue
			}
			ctx, stop := context.WithTimeout(h.ctx, opTimeout)
			reg.mu.Lock()
			val, _ := json.Marshal(rosterValue{Info: info, Replica: h.replica, Reg: reg.reg})
			if reg.rev.Load() == 0 {
				h.putEntry(ctx, reg, info)
			} else if rev, err := kv.Update(ctx, token(reg.clientID), val, reg.rev.Load()); err == nil {
				reg.rev.Store(rev)
			} else {
				h.log.Debug("natshub: roster refresh skipped", "clientId", reg.clientID, "error", err)
			}
			reg.mu.Unlock()
			stop()
		}
	}
}
