package natshub

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/wire"
)

// Defaults of the options of New.
const (
	// DefaultPrefix is the first token of every subject and the prefix of
	// the bucket and stream names.
	DefaultPrefix = "browserchain"
	// DefaultHeartbeat is the period of each replica's heartbeat. A replica
	// silent for DeadAfter heartbeats is considered crashed.
	DefaultHeartbeat = time.Second
	// DeadAfter is how many heartbeat periods of silence mark a replica as
	// crashed: the detection bound is DeadAfter+1 periods (one more for the
	// check's own tick).
	DeadAfter = 3
	// DefaultRosterTTL is the roster bucket's TTL: an entry not re-put by
	// its replica within it expires. Replicas re-put every TTL/3.
	DefaultRosterTTL = 15 * time.Second
	// DefaultTouchFlush is how often activity (Touch) is written to the
	// roster: coalesced, never once per heartbeat or post.
	DefaultTouchFlush = 500 * time.Millisecond
	// DefaultMaxTransfer bounds one message sent in parts (a delivery or a
	// Send larger than the broker's max_payload), in bytes: 65 MiB.
	DefaultMaxTransfer = 65 << 20
	// ReplayPerClient bounds the per-client replay stream, in events.
	ReplayPerClient = 256
	// ReplayAge bounds how long an event stays in the replay stream.
	ReplayAge = eventhub.DefaultReplayAge
)

// defaultStaleWait bounds how long a publish waits for a replica that
// subscribed the client's subject but no longer holds its stream (a
// reconnect moving the client between replicas).
const defaultStaleWait = 2 * time.Second

// opTimeout bounds one broker operation of the hub's own (roster writes,
// claims, retractions).
const opTimeout = 5 * time.Second

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Hub is an eventhub.Hub spanning replicas over NATS. Each replica
// keeps its own SSE streams in a local eventhub.InProcess (served by
// EventsHandler and PingHandler); the broker carries the rest:
//   - targeted delivery, cancels and held-checks: core NATS requests on a
//     subject per client ("<prefix>.client.<id>.deliver"), subscribed by the
//     replica holding the client's stream, so a client connected nowhere
//     fails at once with eventhub.ErrNotConnected (no responders); the
//     holder's answer to a delivery with a Target.CorrelationID is held
//     back until a Send under that id passes it, and then rides in its
//     headers, so a request/reply round trip is two broker messages;
//   - the roster: a JetStream key-value bucket with a TTL, re-put by each
//     replica every TTL/3 and when activity changed (coalesced), watched by
//     every replica; the watcher is recreated and the roster re-put after a
//     broker reconnect;
//   - crash detection: a heartbeat subject per replica; a replica silent for
//     DeadAfter heartbeats is dropped from the roster view and its clients'
//     Gone channels close, so requests to them fail within
//     (DeadAfter+1)·Heartbeat plus the broker's latency;
//   - replay across replicas: events targeted at one client are appended to
//     a bounded JetStream stream ("<prefix>_log", ReplayPerClient events per
//     client, ReplayAge), so a client that reconnects to another replica
//     with Last-Event-ID gets the eligible events after it; an
//     awaited event (Target.ReplayUntil) is written only if still awaited
//     after logDelay (20 ms), and replayed only after its publisher grants
//     a claim, so Retract needs no broker write (see Retract);
//   - payloads over the broker's max_payload are sent in parts, every
//     partsInFlight-th one confirmed by the receiver;
//   - messages between replicas for the host (Send, Broadcast, Handle):
//     opaque payloads with headers.
//
// Events for a Capability, InterfaceID or ConversationID target are fanned
// out to every replica live and replayed only by the replica that issued
// them. All methods are safe for concurrent use.
type Hub struct {
	cfg     config
	nc      *nats.Conn
	js      jetstream.JetStream
	local   *eventhub.InProcess
	log     *slog.Logger
	prefix  string
	replica string

	kv     jetstream.KeyValue
	stream jetstream.Stream

	done     chan struct{}
	ctx      context.Context // cancelled by Close: bounds the loops' broker calls
	cancel   context.CancelFunc
	sweepAt  int
	wg       sync.WaitGroup
	resyncCh chan struct{}
	status   chan nats.Status
	relayAsm assembler
	subs     []*nats.Subscription

	handler   atomic.Pointer[handlerBox]
	ackDelay  time.Duration
	staleWait time.Duration

	mu          sync.Mutex
	closed      bool
	view        map[string]*remoteReg
	replicas    map[string]*replicaState
	locals      map[string]*localReg
	published   map[string]*pubRecord
	held        map[string][]*heldEvent // by client id: awaited events queued here outside the ring's replay
	heldSweepAt int
	lastIDs     map[string]string
	acks        map[string]*deferredAck // by correlation id: answers held back for this replica's clients
	awaiting    map[string]*awaitEntry  // by correlation id: a publish waiting for its holder's answer
	dirty       bool
	changed     chan struct{}
	connected   bool
}

var _ eventhub.Hub = (*Hub)(nil)

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// rosterValue is the JSON of one roster entry.
type rosterValue struct {
	Info    eventhub.ClientInfo `json:"info"`
	Replica string              `json:"replica"`
	Reg     string              `json:"reg"`
}

// remoteReg is a client registered on another replica; ctx ends (and done
// closes) when that registration leaves this replica's view.
type remoteReg struct {
	val  rosterValue
	ctx  context.Context
	end  context.CancelFunc
	done <-chan struct{}
}

func newRemoteReg(v rosterValue) *remoteReg {
	ctx, end := context.WithCancel(context.Background())
	return &remoteReg{val: v, ctx: ctx, end: end, done: ctx.Done()}
}

type replicaState struct {
	lastSeen time.Time
	dead     bool
}

// localReg is a client registered on this replica.
type localReg struct {
	mu       sync.Mutex // held while registering (replay) and by held-checks
	clientID string
	actor    string
	reg      string
	subs     []*nats.Subscription
	rev      atomic.Uint64     // the revision of its roster entry this replica wrote; 0 before the put
	replayed map[string]string // event id its publisher knows → id of its replay here
	asm      assembler
}

// pubRecord is what Retract and claims need about an awaited event this
// replica published (guarded by Hub.mu).
type pubRecord struct {
	clientID  string
	origin    string // replica that queued it live; "" when parked
	reg       string // registration it was queued to live (another replica's)
	until     time.Time
	retracted bool // no claim is granted any more
	claimed   bool // a replay was granted: Retract asks the holder
	logTimer  *time.Timer
}

// New connects a hub replica named replica (1–64 of [A-Za-z0-9_-], unique
// in the cluster) over nc: it creates (or updates) the roster bucket and
// the replay stream, subscribes its subjects and starts its heartbeat,
// refresh and watch loops. The caller owns nc and closes it after
// Hub.Close; give it unlimited reconnects (nats.MaxReconnects(-1)) so the
// hub survives a broker restart. ctx bounds the setup. Errors: a nil nc, a
// bad replica name or prefix, or the broker's (JetStream must be enabled).
// Call Close to stop it.
func New(ctx context.Context, nc *nats.Conn, replica string, opts ...Option) (*Hub, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if nc == nil {
		return nil, errors.New("natshub: nil connection")
	}
	if !nameRE.MatchString(replica) {
		return nil, errf("replica name %q: want 1-64 of [A-Za-z0-9_-]", replica)
	}
	if !nameRE.MatchString(cfg.prefix) {
		return nil, errf("prefix %q: want 1-64 of [A-Za-z0-9_-]", cfg.prefix)
	}
	log := cfg.logger
	if log == nil {
		log = slog.Default()
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, errf("jetstream: %w", err)
	}
	h := &Hub{
		cfg: cfg, nc: nc, js: js, log: log.With("module", "natshub", "replica", replica),
		prefix: cfg.prefix, replica: replica, ackDelay: cfg.ackDelay, staleWait: cfg.staleWait,
		done: make(chan struct{}), resyncCh: make(chan struct{}, 1),
		view: make(map[string]*remoteReg), replicas: make(map[string]*replicaState),
		locals: make(map[string]*localReg), published: make(map[string]*pubRecord),
		held: make(map[string][]*heldEvent), heldSweepAt: 1024,
		lastIDs: make(map[string]string), changed: make(chan struct{}), connected: true,
		acks: make(map[string]*deferredAck), awaiting: make(map[string]*awaitEntry),
	}
	h.relayAsm.max = DefaultMaxTransfer
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.sweepAt = 1024
	hubOpts := append(slices.Clone(cfg.hubOptions), eventhub.WithLogger(log), eventhub.WithHooks(eventhub.Hooks{
		OnRegister: h.onRegister, OnUnregister: h.onUnregister,
	}))
	h.local = eventhub.New(hubOpts...)
	if err := h.start(ctx); err != nil {
		h.cancel()
		h.closeSubs()
		h.local.Close()
		return nil, err
	}
	h.status = h.nc.StatusChanged(nats.CONNECTED, nats.RECONNECTING, nats.DISCONNECTED)
	h.wg.Add(4)
	go h.watchLoop()
	go h.heartbeatLoop()
	go h.refreshLoop()
	go h.forwardLocalChanges()
	return h, nil
}

// start sets up the store and subscribes the replica's subjects.
func (h *Hub) start(ctx context.Context) error {
	if err := h.setupStore(ctx); err != nil {
		return err
	}
	for _, s := range []struct {
		subj string
		f    nats.MsgHandler
	}{
		{h.subj("hb", "*"), h.onHeartbeat},
		{h.subj("replica", h.replica, "claim"), h.onClaim},
		{h.subj("replica", h.replica, "msg"), h.onMessage},
		{h.subj("events"), h.onBroadcastMessage},
		{h.subj("bcast"), h.onBroadcast},
	} {
		sub, err := h.nc.Subscribe(s.subj, s.f)
		if err != nil {
			return errf("subscribe %s: %w", s.subj, err)
		}
		_ = sub.SetPendingLimits(1<<16, 256<<20)
		h.subs = append(h.subs, sub)
	}
	fctx, stop := ctx, context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok { // the client's flush insists on one
		fctx, stop = context.WithTimeout(ctx, opTimeout)
	}
	defer stop()
	if err := h.nc.FlushWithContext(fctx); err != nil {
		return errf("flush: %w", err)
	}
	return nil
}

func (h *Hub) setupStore(ctx context.Context) error {
	kv, err := h.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: h.prefix + "_roster", TTL: h.cfg.rosterTTL, LimitMarkerTTL: h.cfg.rosterTTL,
		History: 1, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return errf("roster bucket: %w", err)
	}
	st, err := h.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: h.prefix + "_log", Subjects: []string{h.subj("log", ">")},
		MaxMsgsPerSubject: ReplayPerClient, MaxAge: ReplayAge, MaxBytes: 256 << 20,
		Storage: jetstream.FileStorage, Discard: jetstream.DiscardOld,
	})
	if err != nil {
		return errf("replay stream: %w", err)
	}
	h.mu.Lock()
	h.kv, h.stream = kv, st
	h.mu.Unlock()
	return nil
}

func (h *Hub) store() (jetstream.KeyValue, jetstream.Stream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.kv, h.stream
}

func (h *Hub) subj(tokens ...string) string {
	s := h.prefix
	for _, t := range tokens {
		s += "." + t
	}
	return s
}

// token encodes a client id as one subject token and key-value key.
func token(clientID string) string { return base64.RawURLEncoding.EncodeToString([]byte(clientID)) }

func untoken(t string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(t)
	return string(b), err == nil
}

// Local returns the replica's in-process hub (its streams only).
func (h *Hub) Local() *eventhub.InProcess { return h.local }

// Replica returns the replica name.
func (h *Hub) Replica() string { return h.replica }

// EventsHandler serves GET /v1/events on this replica: the in-process hub's
// handler, plus replay across replicas: a Last-Event-ID issued by another
// replica replays, after registration, the events for this client recorded
// after it that are still eligible.
func (h *Hub) EventsHandler() http.Handler {
	inner := h.local.EventsHandler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.stashLastID(r.Header.Get(wire.HeaderClientID), r.Header.Get(wire.HeaderLastEventID))
		inner.ServeHTTP(w, r)
	})
}

// PingHandler serves POST /v1/ping; a ping must reach the replica holding
// the client's stream (its heartbeat tokens live there).
func (h *Hub) PingHandler() http.Handler { return h.local.PingHandler() }

// Subscribe opens an in-process stream on this replica, as
// eventhub.InProcess.Subscribe, with replay across replicas as
// EventsHandler.
func (h *Hub) Subscribe(req eventhub.SubscribeRequest) (*eventhub.Subscription, error) {
	h.stashLastID(req.ClientID, req.LastEventID)
	return h.local.Subscribe(req)
}

func (h *Hub) stashLastID(clientID, lastID string) {
	if clientID == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if lastID != "" && len(lastID) <= 128 {
		h.lastIDs[clientID] = lastID
	} else {
		delete(h.lastIDs, clientID)
	}
}

func (h *Hub) fireChangedLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// Changed implements eventhub.Hub: closed at the next change of the
// cluster-wide roster as this replica sees it.
func (h *Hub) Changed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed
}

func (h *Hub) forwardLocalChanges() {
	defer h.wg.Done()
	for {
		select {
		case <-h.local.Changed():
			h.mu.Lock()
			h.fireChangedLocked()
			h.mu.Unlock()
		case <-h.done:
			return
		}
	}
}

// Roster implements eventhub.Hub: this replica's clients and those the
// roster bucket lists on live replicas, healthy first, most recently active
// first (ties by client id).
func (h *Hub) Roster() []eventhub.ClientInfo {
	out := h.local.Roster()
	now := time.Now()
	h.mu.Lock()
	for id, r := range h.view {
		if h.locals[id] != nil {
			continue
		}
		out = append(out, h.remoteInfo(r, now))
	}
	h.mu.Unlock()
	slices.SortFunc(out, func(a, b eventhub.ClientInfo) int {
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

func (h *Hub) remoteInfo(r *remoteReg, now time.Time) eventhub.ClientInfo {
	info := r.val.Info
	info.Capabilities = slices.Clone(info.Capabilities)
	info.Healthy = info.Healthy && now.Sub(info.LastActive) <= h.cfg.unhealthyAfter
	return info
}

// Client implements eventhub.Hub, cluster-wide.
func (h *Hub) Client(clientID string) (eventhub.ClientInfo, bool) {
	if info, ok := h.local.Client(clientID); ok {
		return info, true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.view[clientID]
	if r == nil {
		return eventhub.ClientInfo{}, false
	}
	return h.remoteInfo(r, time.Now()), true
}

// Gone implements eventhub.Hub: for a client on another replica the channel
// closes when its roster entry is deleted, replaced by a newer
// registration, expires, or its replica is found crashed.
func (h *Hub) Gone(clientID string) <-chan struct{} {
	if _, ok := h.local.Client(clientID); ok {
		return h.local.Gone(clientID)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.view[clientID]; r != nil {
		return r.done
	}
	return closedChan
}

// Touch implements eventhub.Hub: activity of a client on this replica is
// recorded at once and written to the roster at the next flush; activity of
// a client on another replica is sent to it.
func (h *Hub) Touch(clientID string) {
	if _, ok := h.local.Client(clientID); ok {
		h.local.Touch(clientID)
		h.mu.Lock()
		h.dirty = true
		h.mu.Unlock()
		return
	}
	_ = h.nc.Publish(h.subj("client", token(clientID), "touch"), nil)
}

// Publish implements eventhub.Hub. A ClientID target on this replica is
// published locally; on another replica it is a request to the client's
// subject, which fails at once with eventhub.ErrNotConnected when no
// replica holds the client. When the roster still lists the client on a
// replica that no longer answers (it crashed, or the client is moving), the
// event is parked in the replay stream and delivered by the replica the
// client reconnects to with Last-Event-ID. Other targets are fanned out to
// every replica; ErrNoRecipients when no replica's roster entry matches a
// Capability or InterfaceID target. ctx is checked before sending; the
// round trip itself is bounded by 2 s (a replica that subscribed the client
// but no longer holds it stays silent), so a cancellation never hides a
// delivery. A target with ReplayUntil and CorrelationID set is confirmed
// when a Send under that correlation id leaves the holder (at most 10 ms
// after the delivery, see ack.go): Publish returns then, or as soon as the
// client's roster entry ends, with an id Retract reports not held.
func (h *Hub) Publish(ctx context.Context, target eventhub.Target, conversationID string, message any) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if h.isClosed() {
		return "", eventhub.ErrClosed
	}
	if target.ClientID == "" && target.Capability == "" && target.InterfaceID == "" && target.ConversationID == "" {
		return "", eventhub.ErrEmptyTarget
	}
	raw, err := json.Marshal(message)
	if err != nil {
		return "", fmt.Errorf("natshub: marshal message: %w", err)
	}
	if target.ClientID == "" {
		return h.fanOut(ctx, target, conversationID, raw)
	}
	if info, ok := h.local.Client(target.ClientID); ok {
		return h.publishLocal(ctx, target, info, conversationID, raw)
	}
	return h.publishRemote(ctx, target, conversationID, raw)
}

// publishLocal publishes to a client of this replica.
func (h *Hub) publishLocal(ctx context.Context, target eventhub.Target, info eventhub.ClientInfo, conv string, raw []byte) (string, error) {
	id, err := h.local.Publish(ctx, target, conv, json.RawMessage(raw))
	if err != nil {
		return "", err
	}
	h.record(id, target, h.replica, "")
	h.logDelivered(id, target, info.ActorPrincipalID, conv, raw)
	return id, nil
}

// publishRemote sends an event to the replica holding its client and
// settles the outcome. Once sent, the event may be delivered: the caller's
// cancellation must not turn a delivery into a failure, so the round trip
// is bounded by staleWait (and, for a correlated request, the client's
// roster entry) alone.
func (h *Hub) publishRemote(ctx context.Context, target eventhub.Target, conv string, raw []byte) (string, error) {
	hdr := nats.Header{}
	setTarget(hdr, target)
	hdr.Set(hdrConv, conv)
	hdr.Set(hdrReplica, h.replica)
	gctx, answer := context.WithCancelCause(context.WithoutCancel(ctx))
	defer answer(nil)
	if stopGone := h.await(target, hdr, answer); stopGone != nil {
		defer h.endAwait(target.CorrelationID, stopGone)
	}
	rctx, stop := context.WithTimeout(gctx, h.staleWait)
	defer stop()
	reply, err := request(rctx, h.nc, h.subj("client", token(target.ClientID), "deliver"), hdr, raw)
	var carried *carriedAnswer
	if err != nil && errors.As(context.Cause(gctx), &carried) {
		reply, err = &nats.Msg{Header: carried.hdr}, nil // the answer came with a Send
	}
	switch {
	case err == nil:
		return h.delivered(target, conv, raw, reply), nil
	case errors.Is(context.Cause(gctx), errGone):
		// The client left (or its replica crashed) before the holder's
		// answer came: the caller learns it through Gone, and the event is
		// not held anywhere it could be replayed from.
		id := "g" + nuid.Next()
		h.record(id, target, "", "")
		return id, nil
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return h.park(ctx, target, conv, raw)
	}
	var ce *codeError
	if errors.As(err, &ce) && ce.code == "no_recipients" {
		return "", fmt.Errorf("%w: %+v", eventhub.ErrNoRecipients, target)
	}
	if ce != nil {
		return "", err
	}
	return "", errf("publish to client %q: %w", target.ClientID, err)
}

// await registers a publish of a correlated event to a listed client as
// waiting for its holder's answer (answer ends the wait with its cause) and
// marks hdr for the holder. It returns the function that stops watching
// the client's roster entry, for endAwait, or nil when the publish does not
// wait.
func (h *Hub) await(target eventhub.Target, hdr nats.Header, answer context.CancelCauseFunc) func() bool {
	cid := target.CorrelationID
	if cid == "" || target.ReplayUntil.IsZero() {
		return nil
	}
	h.mu.Lock()
	r := h.view[target.ClientID]
	if r == nil || h.awaiting[cid] != nil {
		h.mu.Unlock()
		return nil
	}
	h.awaiting[cid] = &awaitEntry{clientID: target.ClientID, answer: answer}
	h.mu.Unlock()
	hdr.Set(hdrCorrelation, cid)
	return context.AfterFunc(r.ctx, func() { answer(errGone) })
}

// endAwait ends the wait await registered under cid.
func (h *Hub) endAwait(cid string, stopGone func() bool) {
	stopGone()
	h.mu.Lock()
	delete(h.awaiting, cid)
	h.mu.Unlock()
}

// delivered records an event the holder answered for and returns its id.
func (h *Hub) delivered(target eventhub.Target, conv string, raw []byte, reply *nats.Msg) string {
	id := reply.Header.Get(hdrID)
	actor := target.ActorPrincipalID
	h.mu.Lock()
	r := h.view[target.ClientID]
	if r != nil {
		actor = r.val.Info.ActorPrincipalID // as Client, without its copy
	}
	h.mu.Unlock()
	if r == nil {
		if info, ok := h.local.Client(target.ClientID); ok {
			actor = info.ActorPrincipalID
		}
	}
	h.record(id, target, reply.Header.Get(hdrReplica), reply.Header.Get(hdrReg))
	h.logDelivered(id, target, actor, conv, raw)
	return id
}

// park writes an awaited event for a listed client no replica answered for
// to the replay stream; anything else is eventhub.ErrNotConnected.
func (h *Hub) park(ctx context.Context, target eventhub.Target, conv string, raw []byte) (string, error) {
	info, listed := h.Client(target.ClientID)
	if !listed || target.ReplayUntil.IsZero() {
		return "", fmt.Errorf("%w: %q", eventhub.ErrNotConnected, target.ClientID)
	}
	if target.ActorPrincipalID != "" && target.ActorPrincipalID != info.ActorPrincipalID {
		return "", fmt.Errorf("%w: %+v", eventhub.ErrNoRecipients, target)
	}
	id := "p" + nuid.Next()
	h.record(id, target, "", "") // before the append: a claim may follow it at once
	if !h.appendLog(ctx, id, target, info.ActorPrincipalID, conv, raw, true) {
		h.mu.Lock()
		delete(h.published, id)
		h.mu.Unlock()
		return "", fmt.Errorf("%w: %q", eventhub.ErrNotConnected, target.ClientID)
	}
	return id, nil
}

func (h *Hub) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// record keeps what Retract and claims need about an event awaited until
// its ReplayUntil; expired records are swept as the map grows.
func (h *Hub) record(id string, t eventhub.Target, origin, reg string) {
	if t.ReplayUntil.IsZero() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.published[id] = &pubRecord{clientID: t.ClientID, origin: origin, reg: reg, until: t.ReplayUntil}
	if len(h.published) >= h.sweepAt {
		now := time.Now()
		for k, r := range h.published {
			if r.until.Before(now) {
				delete(h.published, k)
			}
		}
		h.sweepAt = max(2*len(h.published), 1024)
	}
}

// fanOut publishes a non-client target locally and to every other replica.
func (h *Hub) fanOut(ctx context.Context, target eventhub.Target, conv string, raw []byte) (string, error) {
	id, err := h.local.Publish(ctx, target, conv, json.RawMessage(raw))
	if err != nil && !errors.Is(err, eventhub.ErrNoRecipients) {
		return "", err
	}
	if err != nil {
		matched := false
		h.mu.Lock()
		for _, r := range h.view {
			i := r.val.Info
			if (target.Capability == "" || i.Has(target.Capability)) &&
				(target.InterfaceID == "" || i.InterfaceID == target.InterfaceID) &&
				(target.ActorPrincipalID == "" || i.ActorPrincipalID == target.ActorPrincipalID) {
				matched = true
			}
		}
		h.mu.Unlock()
		if !matched {
			return "", err
		}
		id = "f" + nuid.Next()
	}
	if len(raw) > int(h.nc.MaxPayload())-headerRoom {
		return id, errf("fan-out event of %d bytes exceeds the broker's max_payload", len(raw))
	}
	m := nats.NewMsg(h.subj("bcast"))
	tj, _ := json.Marshal(target)
	m.Header.Set(hdrTarget, string(tj))
	m.Header.Set(hdrConv, conv)
	m.Header.Set(hdrReplica, h.replica)
	m.Data = raw
	if err := h.nc.PublishMsg(m); err != nil {
		return id, errf("fan-out: %w", err)
	}
	return id, nil
}

func (h *Hub) onBroadcast(m *nats.Msg) {
	if m.Header.Get(hdrReplica) == h.replica {
		return
	}
	var t eventhub.Target
	if json.Unmarshal([]byte(m.Header.Get(hdrTarget)), &t) != nil {
		return
	}
	_, _ = h.local.Publish(context.Background(), t, m.Header.Get(hdrConv), json.RawMessage(m.Data))
}

// errGone ends a publish's wait for the holder's answer when the client's
// roster entry ends first.
var errGone = errors.New("natshub: client left while its delivery was unconfirmed")

// logDelay is how long an awaited event delivered live waits before it is
// written to the replay stream: one answered (retracted) sooner, as most
// are, never costs the broker a store write on its round trip.
const logDelay = 20 * time.Millisecond

// logDelivered records an event delivered live in the replay stream
// at once when nobody awaits it, else after logDelay if it is
// still awaited then. Until then a reconnect to another replica does not
// replay it; its caller then fails at once through Gone (not held), as when
// the client reconnects before the event reached it. The replay's seq
// filter (replayFromLog) keeps the later write from replaying it to a
// client that resumes after it.
func (h *Hub) logDelivered(id string, t eventhub.Target, actor, conv string, raw []byte) {
	if t.ReplayUntil.IsZero() {
		h.appendLog(context.Background(), id, t, actor, conv, raw, false)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	rec := h.published[id]
	if rec == nil || h.closed || rec.retracted {
		return
	}
	rec.logTimer = time.AfterFunc(logDelay, func() {
		h.mu.Lock()
		due := !rec.retracted && !h.closed
		if due {
			h.wg.Add(1)
		}
		h.mu.Unlock()
		if !due {
			return
		}
		defer h.wg.Done()
		h.appendLog(h.ctx, id, t, actor, conv, raw, false)
	})
}

// appendLog records a client-targeted event in the replay stream.
// A parked event is written synchronously (it exists nowhere else); a
// delivered one asynchronously. Events larger than a broker message are
// not recorded. It reports whether the event was (or is being) recorded.
func (h *Hub) appendLog(ctx context.Context, id string, t eventhub.Target, actor, conv string, raw []byte, sync bool) bool {
	if len(raw) > int(h.nc.MaxPayload())-headerRoom {
		return false
	}
	m := nats.NewMsg(h.subj("log", token(t.ClientID)))
	m.Header.Set(hdrID, id)
	m.Header.Set(hdrReplica, h.replica) // the publisher, who grants claims
	m.Header.Set(hdrActor, actor)
	m.Header.Set(hdrConv, conv)
	if !t.ReplayUntil.IsZero() {
		m.Header.Set(hdrUntil, t.ReplayUntil.UTC().Format(time.RFC3339Nano))
	}
	m.Data = raw
	if sync {
		ctx, stop := context.WithTimeout(ctx, opTimeout)
		defer stop()
		_, err := h.js.PublishMsg(ctx, m)
		return err == nil
	}
	_, err := h.js.PublishMsgAsync(m)
	return err == nil
}

// onDeliver serves a request to publish to one of this replica's clients.
// A replica that no longer holds the client stays silent, so a publisher
// waits for the replica that does.
func (h *Hub) onDeliver(reg *localReg, m *nats.Msg) {
	m, ok := reg.asm.add(m)
	if !ok {
		return
	}
	t, err := getTarget(m.Header)
	if err != nil || t.ClientID != reg.clientID {
		respondError(m, "bad_request", "malformed target")
		return
	}
	var id string
	if t.ReplayUntil.IsZero() {
		id, err = h.local.Publish(context.Background(), t, m.Header.Get(hdrConv), json.RawMessage(m.Data))
	} else {
		id, err = h.deliverAwaited(context.Background(), t, m.Header.Get(hdrReplica), "", m.Header.Get(hdrConv), m.Data)
	}
	switch {
	case errors.Is(err, eventhub.ErrNotConnected), errors.Is(err, eventhub.ErrClosed):
		return
	case errors.Is(err, eventhub.ErrNoRecipients):
		respondError(m, "no_recipients", err.Error())
		return
	case err != nil:
		respondError(m, "publish_failed", err.Error())
		return
	}
	r := nats.NewMsg(m.Reply)
	r.Header.Set(hdrID, id)
	r.Header.Set(hdrReplica, h.replica)
	r.Header.Set(hdrReg, reg.reg)
	if cid := m.Header.Get(hdrCorrelation); cid != "" && m.Reply != "" && !t.ReplayUntil.IsZero() {
		h.deferAck(cid, reg.clientID, m, r)
		return
	}
	_ = m.RespondMsg(r)
}

// Retract implements eventhub.Hub across replicas. The
// publisher decides replay eligibility (see claimLocal): Retract marks its
// record so no later claim is granted, which ends every replay of the event
// on any replica without a broker write. held is answered without a round
// trip when nothing was replayed and the client still holds, as this
// replica sees the roster, the registration that received the event live
// (true), or the event was parked and never claimed (false). Otherwise —
// a replay was granted, the event went to this replica's own client, or the
// client's registration changed — the replica holding the client now is
// asked whether its registration holds the event, as before; no answer
// within 2 s counts as not held. An error is only ctx's.
func (h *Hub) Retract(ctx context.Context, envelopeID string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return false, nil
	}
	rec := h.published[envelopeID]
	if rec == nil {
		h.mu.Unlock()
		return h.local.Retract(ctx, envelopeID)
	}
	rec.retracted = true
	if rec.logTimer != nil {
		rec.logTimer.Stop()
	}
	claimed, origin, clientID := rec.claimed, rec.origin, rec.clientID
	fastHeld, fast := false, false
	switch {
	case claimed:
	case origin == "":
		fast = true // parked and never claimed: nobody holds it
	case origin != h.replica && rec.reg != "":
		if r := h.view[clientID]; r != nil && r.val.Reg == rec.reg && h.locals[clientID] == nil {
			fast, fastHeld = true, true
		}
	}
	reg := h.locals[clientID]
	h.mu.Unlock()
	if fast {
		return fastHeld, nil
	}

	var heldHere bool
	if origin == h.replica {
		heldHere, _ = h.local.Retract(ctx, envelopeID)
	}
	if reg != nil {
		if origin == h.replica && !claimed {
			return heldHere, nil
		}
		return h.holderRetract(reg, envelopeID), nil
	}
	rctx, stop := context.WithTimeout(ctx, h.staleWait)
	defer stop()
	reply, err := h.nc.RequestWithContext(rctx, h.subj("client", token(clientID), "retract"), []byte(envelopeID))
	if err != nil {
		return false, nil // no replica holds the client (or it is moving): not held
	}
	return string(reply.Data) == "1", nil
}

// holderRetract answers, on the replica holding reg, whether its
// registration holds the event its publisher knows as id (replayed here,
// or issued here), and retracts it from the local ring.
func (h *Hub) holderRetract(reg *localReg, id string) bool {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	ctx, stop := context.WithTimeout(context.Background(), opTimeout)
	defer stop()
	if lid, ok := reg.replayed[id]; ok {
		held, _ := h.local.Retract(ctx, lid)
		return held
	}
	if h.local.OwnsEventID(id) {
		held, _ := h.local.Retract(ctx, id)
		return held
	}
	return false
}

func (h *Hub) onClientRetract(reg *localReg, m *nats.Msg) {
	h.mu.Lock()
	current := h.locals[reg.clientID] == reg
	h.mu.Unlock()
	if !current {
		return
	}
	v := "0"
	if h.holderRetract(reg, string(m.Data)) {
		v = "1"
	}
	_ = m.Respond([]byte(v))
}

// Close stops the replica: its streams end (their roster entries are
// deleted), its subscriptions and loops stop. The connection stays open
// (the caller owns it). Idempotent.
func (h *Hub) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.mu.Unlock()
	h.local.Close() // runs the unregister hooks while the subscriptions live
	h.mu.Lock()
	h.closed = true
	for _, rec := range h.published {
		if rec.logTimer != nil {
			rec.logTimer.Stop()
		}
	}
	for _, r := range h.view {
		r.end()
	}
	h.view = map[string]*remoteReg{}
	h.mu.Unlock()
	h.flushAcks("") // none is held back once closed is set
	close(h.done)
	h.cancel()
	h.nc.RemoveStatusListener(h.status)
	h.wg.Wait()
	h.closeSubs()
	if !h.nc.IsClosed() { // a closed connection never acknowledges
		select {
		case <-h.js.PublishAsyncComplete():
		case <-time.After(opTimeout):
		}
	}
	return nil
}

func (h *Hub) closeSubs() {
	for _, s := range h.subs {
		_ = s.Unsubscribe()
	}
	h.subs = nil
}
