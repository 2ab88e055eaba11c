package eventhub

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/browserchain/browserchain/eventhub/wire"

	sse "github.com/tmaxmax/go-sse"
)

// InProcess is the default Hub: an in-memory registry of streams
// with bounded per-stream queues, a replay ring and liveness
// tracking. Create it with New; serve streams with EventsHandler and
// pings with PingHandler; stop it with Close. All methods are safe for
// concurrent use. Publish never blocks on a subscriber.
type InProcess struct {
	cfg    config
	logger *slog.Logger
	hooks  *serializer
	epoch  string

	mu         sync.Mutex
	closed     bool
	seq        uint64
	nextSerial uint64
	streams    map[*stream]struct{}
	clients    map[string]*stream
	changed    chan struct{}
	ring       ring

	// byID indexes the ring's entries by envelope id for Retract, plus
	// entries that left the ring before their ReplayUntil passed (so
	// Retract can still report whether the target holds them). Pruned by
	// sweep once it has grown to sweepAt.
	byID    map[string]*ringEntry
	sweepAt int
}

var _ Hub = (*InProcess)(nil)

// closedChan is returned by Gone for clients that are not connected.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// New returns a running in-process hub. Call Close to stop it.
func New(opts ...Option) *InProcess {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.unhealthyAfter <= 0 {
		cfg.unhealthyAfter = 3 * cfg.heartbeat
	}
	logger := cfg.logger
	if logger == nil {
		logger = slog.Default()
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	h := &InProcess{
		cfg:     cfg,
		logger:  logger,
		epoch:   hex.EncodeToString(b[:]),
		streams: make(map[*stream]struct{}),
		clients: make(map[string]*stream),
		changed: make(chan struct{}),
		ring:    ring{limits: cfg.replay},
		byID:    make(map[string]*ringEntry),
		sweepAt: minSweep,
	}
	h.ring.onEvict = h.evictedLocked
	h.hooks = newSerializer(cfg.hookBacklog, logger)
	return h
}

// stream is one open SSE subscription; registered when it carries a client id.
type stream struct {
	serial       uint64
	registered   bool
	info         ClientInfo // LastActive, Healthy guarded by hub.mu
	conversation string
	actor        string
	openedAt     time.Time
	queue        chan *frame
	done         chan struct{}
	replay       []*frame
	// liveFrom is the hub's seq when the stream registered: every later
	// event aimed at its client id was queued to it live.
	liveFrom uint64
	// resumeSeq is the seq of a Last-Event-ID of this hub instance the
	// stream resumed after (0 for none): the client has read up to it.
	resumeSeq uint64

	// guarded by hub.mu
	ended     bool
	endReason EndReason
	unhealthy bool
	hbTokens  [2]string

	delivered  atomic.Uint64
	heartbeats atomic.Uint64

	// wmu guards the writer abort plumbing.
	wmu     sync.Mutex
	abortFn func()
	aborted bool
}

// frame is one rendered SSE event, shared by every recipient and the ring.
// Besides the SSE bytes it keeps what an in-process Subscription returns,
// so the hub never parses a frame it rendered: the message is the slice
// data[msgStart:msgEnd].
type frame struct {
	id       string
	seq      uint64
	data     []byte
	conv     string
	at       time.Time
	msgStart int
	msgEnd   int
}

// envelope returns the frame's envelope without parsing it; Message
// shares the frame's bytes and must not be modified.
func (f *frame) envelope() Envelope {
	return Envelope{ID: f.id, ConversationID: f.conv, EmittedAt: f.at, Seq: f.seq,
		Message: json.RawMessage(f.data[f.msgStart:f.msgEnd:f.msgEnd])}
}

// SubscribeRequest describes a stream to open. ClientID empty means a plain
// subscriber (conversation events only, never targeted by client,
// capability or interface).
type SubscribeRequest struct {
	ClientID    string
	InterfaceID string
	MachineName string
	// Actor is the authenticated actor principal (from ActorFrom), "" when
	// the host app runs without authentication.
	Actor string
	// ConversationID filters conversation events; "" receives all.
	ConversationID string
	// LastEventID is the client's Last-Event-ID; events after it that match
	// the new stream are replayed before live ones.
	LastEventID string
}

// subscribe opens a stream. Errors: ErrClosed, ErrCapacity, ErrActorMismatch.
// The stream's replay is read only by the goroutine that called subscribe,
// after it returns.
func (h *InProcess) subscribe(req SubscribeRequest) (*stream, error) {
	return h.register(req)
}

// register does the locked part of subscribe: replacement, shedding,
// registration, and the unfiltered replay.
func (h *InProcess) register(req SubscribeRequest) (*stream, error) {
	now := h.cfg.clock.Now()
	lastEpoch, lastSeq, idErr := "", uint64(0), error(nil)
	if req.LastEventID != "" {
		lastEpoch, lastSeq, idErr = ParseEventID(req.LastEventID)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if h.cfg.maxSubscribers == 0 {
		return nil, ErrCapacity
	}
	if req.ClientID != "" {
		if old := h.clients[req.ClientID]; old != nil {
			if old.actor != req.Actor {
				return nil, ErrActorMismatch
			}
			h.endLocked(old, EndReplaced, "")
		}
	}
	for h.cfg.maxSubscribers > 0 && len(h.streams) >= h.cfg.maxSubscribers {
		var oldest *stream
		for s := range h.streams {
			if oldest == nil || s.serial < oldest.serial {
				oldest = s
			}
		}
		h.endLocked(oldest, EndReason(ShedEvicted), ShedEvicted)
	}
	h.nextSerial++
	s := &stream{
		serial:       h.nextSerial,
		registered:   req.ClientID != "",
		conversation: req.ConversationID,
		actor:        req.Actor,
		openedAt:     now,
		queue:        make(chan *frame, h.cfg.queueSize),
		done:         make(chan struct{}),
		liveFrom:     h.seq,
	}
	if s.registered {
		s.info = ClientInfo{
			ClientID:         req.ClientID,
			InterfaceID:      req.InterfaceID,
			Capabilities:     Capabilities(req.InterfaceID),
			ActorPrincipalID: req.Actor,
			MachineName:      req.MachineName,
			ConnectedAt:      now,
			LastActive:       now,
			Healthy:          true,
		}
	}
	h.streams[s] = struct{}{}
	if s.registered {
		h.clients[req.ClientID] = s
		h.fireChangedLocked()
		info := s.info
		info.Capabilities = slices.Clone(info.Capabilities)
		h.schedule(func() {
			h.logger.Info("eventhub: client registered", "clientId", info.ClientID, "interfaceId", info.InterfaceID)
			if f := h.cfg.hooks.OnRegister; f != nil {
				f(info)
			}
		})
	}
	switch {
	case req.LastEventID == "":
	case idErr != nil:
		h.logger.Debug("eventhub: ignoring Last-Event-ID", "clientId", req.ClientID, "err", idErr)
	case lastEpoch != h.epoch:
		h.logger.Info("eventhub: Last-Event-ID from another hub instance; nothing to replay", "clientId", req.ClientID)
	default:
		var gap bool
		s.resumeSeq = lastSeq
		s.replay, gap = h.ring.since(lastSeq, now, func(e *ringEntry) bool {
			if !e.matches(s) || !e.replayable(now) {
				return false
			}
			e.replayedTo = s.serial
			return true
		})
		if gap {
			h.logger.Warn("eventhub: replay gap: events after Last-Event-ID already left the ring",
				"clientId", req.ClientID, "lastEventId", req.LastEventID)
		}
	}
	return s, nil
}

// schedule runs f on the hook goroutine.
func (h *InProcess) schedule(f func()) { h.hooks.Schedule(f) }

func (h *InProcess) fireChangedLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// endLocked ends s once: removes it, closes its done channel (Gone), aborts a
// blocked writer, and reports through log and hooks. shed is non-empty for a
// shed.
func (h *InProcess) endLocked(s *stream, reason EndReason, shed ShedReason) {
	if s.ended {
		return
	}
	s.ended = true
	s.endReason = reason
	delete(h.streams, s)
	if s.registered && h.clients[s.info.ClientID] == s {
		delete(h.clients, s.info.ClientID)
		h.fireChangedLocked()
	}
	close(s.done)
	if reason != EndDisconnected {
		s.abort()
	}
	info := s.info
	info.Capabilities = slices.Clone(info.Capabilities)
	if shed != "" {
		si := ShedInfo{
			Reason:          shed,
			ClientID:        info.ClientID,
			InterfaceID:     info.InterfaceID,
			ConversationID:  s.conversation,
			StreamAge:       h.cfg.clock.Now().Sub(s.openedAt),
			EventsDelivered: s.delivered.Load(),
			HeartbeatsSent:  s.heartbeats.Load(),
			QueueLen:        len(s.queue),
		}
		h.schedule(func() {
			h.logger.Warn("eventhub: subscriber shed",
				"reason", string(si.Reason), "clientId", si.ClientID, "interfaceId", si.InterfaceID,
				"conversationId", si.ConversationID, "streamAge", si.StreamAge,
				"eventsDelivered", si.EventsDelivered, "heartbeatsSent", si.HeartbeatsSent, "queueLen", si.QueueLen)
			if f := h.cfg.hooks.OnShed; f != nil {
				f(si)
			}
		})
	}
	if s.registered {
		h.schedule(func() {
			h.logger.Info("eventhub: client unregistered", "clientId", info.ClientID, "reason", string(reason))
			if f := h.cfg.hooks.OnUnregister; f != nil {
				f(info, reason)
			}
		})
	}
}

// end ends s with reason (no-op when already ended).
func (h *InProcess) end(s *stream, reason EndReason, shed ShedReason) {
	h.mu.Lock()
	h.endLocked(s, reason, shed)
	h.mu.Unlock()
}

// wasShed reports whether s ended by a shed. Call only after <-s.done.
func (s *stream) wasShed() bool {
	switch ShedReason(s.endReason) {
	case ShedQueueFull, ShedWriteTimeout, ShedEvicted:
		return true
	}
	return false
}

// abort unblocks a writer stuck in a network write by moving its write
// deadline to now.
func (s *stream) abort() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.aborted = true
	if s.abortFn != nil {
		s.abortFn()
	}
}

// setWriter installs (f != nil) or removes (f == nil) the abort function of
// the goroutine writing s. It reports false when s was already aborted.
func (s *stream) setWriter(f func()) bool {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.abortFn = f
	return !s.aborted
}

// Publish implements Hub. The message is marshalled with encoding/json
// (errors wrap the marshal error); ctx is only checked before publishing,
// since Publish never waits. A recipient whose queue is full is shed
// (ShedQueueFull) and the publish still succeeds for the others. Every
// published event is recorded in the replay ring.
func (h *InProcess) Publish(ctx context.Context, target Target, conversationID string, message any) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if target.ClientID == "" && target.Capability == "" && target.InterfaceID == "" && target.ConversationID == "" {
		return "", ErrEmptyTarget
	}
	raw, err := json.Marshal(message)
	if err != nil {
		return "", fmt.Errorf("eventhub: marshal message: %w", err)
	}
	var conv []byte
	if conversationID != "" {
		conv, _ = json.Marshal(conversationID)
	}
	now := h.cfg.clock.Now()

	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return "", ErrClosed
	}
	var candidates []*stream
	clientActor := ""
	if target.ClientID != "" {
		s := h.clients[target.ClientID]
		if s == nil {
			return "", fmt.Errorf("%w: %q", ErrNotConnected, target.ClientID)
		}
		clientActor = s.actor
		candidates = []*stream{s}
	}
	entry := &ringEntry{target: target, clientActor: clientActor, at: now, until: target.ReplayUntil}
	if candidates == nil {
		for s := range h.streams {
			if entry.matches(s) {
				candidates = append(candidates, s)
			}
		}
	} else if !entry.matches(candidates[0]) {
		candidates = nil
	}
	if len(candidates) == 0 && target.ConversationID == "" {
		return "", fmt.Errorf("%w: %+v", ErrNoRecipients, target)
	}
	h.seq++
	f := renderFrame(h.epoch, h.seq, conversationID, conv, now, raw)
	entry.frame = f
	h.byID[f.id] = entry
	h.ring.add(entry)
	if len(h.byID) >= h.sweepAt {
		h.sweepLocked(now)
	}
	for _, s := range candidates {
		select {
		case s.queue <- f:
		default:
			h.endLocked(s, EndReason(ShedQueueFull), ShedQueueFull)
		}
	}
	return f.id, nil
}

// renderFrame builds the envelope JSON by hand (the message is already
// compact JSON; re-marshalling it would validate it twice) and frames it
// with go-sse.
func renderFrame(epoch string, seq uint64, conversationID string, conv []byte, at time.Time, raw []byte) *frame {
	id := formatEventID(epoch, seq)
	var env bytes.Buffer
	env.Grow(len(raw) + len(conv) + 128)
	env.WriteString(`{"id":"`)
	env.WriteString(id)
	env.WriteString(`"`)
	if conv != nil {
		env.WriteString(`,"conversationId":`)
		env.Write(conv)
	}
	env.WriteString(`,"emittedAt":`)
	ts, _ := at.MarshalJSON()
	env.Write(ts)
	env.WriteString(`,"seq":`)
	env.WriteString(strconv.FormatUint(seq, 10))
	env.WriteString(`,"message":`)
	msgAt := env.Len()
	env.Write(raw)
	env.WriteString(`}`)
	msg := &sse.Message{ID: sse.ID(id), Type: sse.Type(wire.EventTypeAssistant)}
	msg.AppendData(env.String())
	var out bytes.Buffer
	out.Grow(env.Len() + len(id) + 48)
	_, _ = msg.WriteTo(&out)
	data := out.Bytes()
	// The envelope is compact JSON (no raw line breaks), so go-sse writes it
	// as one data line, verbatim: find it to keep the message's offsets.
	envAt := bytes.Index(data, env.Bytes())
	if !utf8.ValidString(conversationID) {
		conversationID = string([]rune(conversationID)) // as the JSON carries it
	}
	return &frame{id: id, seq: seq, data: data, conv: conversationID, at: at,
		msgStart: envAt + msgAt, msgEnd: envAt + msgAt + len(raw)}
}

// Roster implements Hub: registered clients, healthy ones first, each group
// most recently active first (ties by client id).
func (h *InProcess) Roster() []ClientInfo { return h.RosterWhere(nil) }

// RosterWhere is Roster restricted to the clients keep accepts (all when
// keep is nil). Only the kept clients are copied, so a caller that wants a
// few clients of a large roster (hostproxy choosing the client of one
// actor) pays for those alone. keep runs under the hub's lock: it must be
// quick, must not call the hub, and must not retain its argument (whose
// Capabilities are the hub's own and whose Healthy is not yet computed).
// Safe for concurrent use.
func (h *InProcess) RosterWhere(keep func(ClientInfo) bool) []ClientInfo {
	now := h.cfg.clock.Now()
	h.mu.Lock()
	n := len(h.clients)
	if keep != nil {
		n = 0
	}
	out := make([]ClientInfo, 0, n)
	for _, s := range h.clients {
		if keep == nil || keep(s.info) {
			out = append(out, h.snapshotLocked(s, now))
		}
	}
	h.mu.Unlock()
	slices.SortFunc(out, func(a, b ClientInfo) int {
		if a.Healthy != b.Healthy {
			if a.Healthy {
				return -1
			}
			return 1
		}
		if c := b.LastActive.Compare(a.LastActive); c != 0 {
			return c
		}
		return cmp.Compare(a.ClientID, b.ClientID)
	})
	return out
}

func (h *InProcess) snapshotLocked(s *stream, now time.Time) ClientInfo {
	info := s.info
	info.Capabilities = slices.Clone(info.Capabilities)
	info.Healthy = now.Sub(info.LastActive) <= h.cfg.unhealthyAfter
	return info
}

// Client implements Hub.
func (h *InProcess) Client(clientID string) (ClientInfo, bool) {
	now := h.cfg.clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.clients[clientID]
	if s == nil {
		return ClientInfo{}, false
	}
	return h.snapshotLocked(s, now), true
}

// Touch implements Hub: LastActive = now; an unhealthy client turns healthy
// (and Changed fires). Unknown client ids are ignored.
func (h *InProcess) Touch(clientID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.clients[clientID]; s != nil {
		h.touchLocked(s)
	}
}

func (h *InProcess) touchLocked(s *stream) {
	s.info.LastActive = h.cfg.clock.Now()
	h.updateHealthLocked(s, s.info.LastActive)
}

// updateHealthLocked records a health transition of s at now: fires Changed
// and the OnHealth hook.
func (h *InProcess) updateHealthLocked(s *stream, now time.Time) {
	if s.ended || !s.registered {
		return
	}
	unhealthy := now.Sub(s.info.LastActive) > h.cfg.unhealthyAfter
	if unhealthy == s.unhealthy {
		return
	}
	s.unhealthy = unhealthy
	h.fireChangedLocked()
	info := h.snapshotLocked(s, now)
	h.schedule(func() {
		if info.Healthy {
			h.logger.Info("eventhub: client healthy again", "clientId", info.ClientID)
		} else {
			h.logger.Warn("eventhub: client unhealthy: no activity", "clientId", info.ClientID,
				"lastActive", info.LastActive, "unhealthyAfter", h.cfg.unhealthyAfter)
		}
		if f := h.cfg.hooks.OnHealth; f != nil {
			f(info)
		}
	})
}

// Changed implements Hub. It fires on register, unregister, shed, and a
// client's health transition.
func (h *InProcess) Changed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed
}

// Gone implements Hub.
func (h *InProcess) Gone(clientID string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.clients[clientID]; s != nil {
		return s.done
	}
	return closedChan
}

// Retract implements Hub. It holds the hub's lock, as registration does, so
// a registration's replay is computed entirely before or entirely after it.
// After Close it reports false.
func (h *InProcess) Retract(ctx context.Context, envelopeID string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.byID[envelopeID]
	if e == nil || h.closed {
		return false, nil
	}
	e.retracted = true
	if e.target.ClientID == "" {
		return false, nil
	}
	s := h.clients[e.target.ClientID]
	if s == nil || !e.matches(s) {
		return false, nil
	}
	seq := e.frame.seq
	return seq > s.liveFrom || seq <= s.resumeSeq || e.replayedTo == s.serial, nil
}

// minSweep is the smallest byID size that triggers a sweep.
const minSweep = 64

// evictedLocked is the ring's eviction callback: an entry that can no longer
// be awaited leaves byID at once, one with a future ReplayUntil stays for
// Retract until the sweep finds its ReplayUntil passed.
func (h *InProcess) evictedLocked(e *ringEntry) {
	if e.until.IsZero() || !e.until.After(h.cfg.clock.Now()) {
		delete(h.byID, e.frame.id)
	}
}

// sweepLocked drops evicted entries whose ReplayUntil has passed, and sets
// the next sweep at twice the remaining size (amortised O(1) per publish).
func (h *InProcess) sweepLocked(now time.Time) {
	for id, e := range h.byID {
		if e.evicted && !e.until.After(now) {
			delete(h.byID, id)
		}
	}
	h.sweepAt = max(2*len(h.byID), minSweep)
}

// Unregister ends the client's registration and closes its stream.
// It reports whether the client was connected.
func (h *InProcess) Unregister(clientID string) bool {
	return h.endClient(clientID, EndUnregistered)
}

// endClient ends the client's registration with reason; false when it was
// not connected.
func (h *InProcess) endClient(clientID string, reason EndReason) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.clients[clientID]
	if s == nil {
		return false
	}
	h.endLocked(s, reason, "")
	return true
}

// Supersede ends the client's registration as replaced (EndReplaced, as
// when the same client id registers here again) and closes its stream. A
// hub spread over several processes calls it when the client has
// registered on another replica since: its old stream here must stop
// receiving what is now delivered there (natshub). It reports whether the
// client was connected.
func (h *InProcess) Supersede(clientID string) bool {
	return h.endClient(clientID, EndReplaced)
}

// Close ends every stream (EndHubClosed), waits for pending hook calls and
// stops the hook goroutine. Later Publish and subscribe calls fail with
// ErrClosed. Close is idempotent. Stream handlers return promptly; a host
// app still shuts its http.Server down itself.
func (h *InProcess) Close() error {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		for s := range h.streams {
			h.endLocked(s, EndHubClosed, "")
		}
	}
	h.mu.Unlock()
	h.hooks.Close()
	return nil
}

// heartbeatToken records and returns a fresh heartbeat token for s.
func (h *InProcess) heartbeatToken(s *stream) string {
	tok := rand.Text()[:16]
	h.mu.Lock()
	s.hbTokens[1], s.hbTokens[0] = s.hbTokens[0], tok
	h.mu.Unlock()
	return tok
}

// checkHealth is called by the stream writer on every heartbeat tick.
func (h *InProcess) checkHealth(s *stream) {
	now := h.cfg.clock.Now()
	h.mu.Lock()
	h.updateHealthLocked(s, now)
	h.mu.Unlock()
}
