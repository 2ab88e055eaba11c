package hostproxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
)

// DefaultTimeout is how long Request waits for a result when neither the
// request nor Options set a timeout (PXY-1).
const DefaultTimeout = 30 * time.Second

// DefaultMaxBodyBytes caps the body of the result, event and
// session-invalidated routes when Options.MaxBodyBytes is zero: 64 MiB,
// enough for full-page screenshots encoded as base64 inside a JSON string.
const DefaultMaxBodyBytes = 64 << 20

// Options configures a Proxy. Hub is required; every other zero field takes
// the documented default.
type Options struct {
	// Hub carries requests and cancels to clients and holds the roster.
	// Several Proxy values may share one hub: each decides the replay
	// eligibility of its own requests (Target.ReplayUntil, Hub.Retract).
	Hub eventhub.Hub
	// Logger receives structured logs; nil means slog.Default().
	Logger *slog.Logger
	// DefaultTimeout bounds each Request without its own Timeout; 0 means
	// DefaultTimeout (30 s).
	DefaultTimeout time.Duration
	// MaxBodyBytes caps route bodies; 0 means DefaultMaxBodyBytes. A larger
	// body is answered 413.
	MaxBodyBytes int64
	// NewRequestID returns a fresh request id; nil means 16 random bytes in
	// hex.
	NewRequestID func() string
	// OnResult, when set, is called for each result that passed the PXY-4
	// checks, on the goroutine of the route or socket that received it,
	// just before the result is handed to its caller (so the caller returns
	// after it; in the rare race with the request's own end the result is
	// then refused 404 after all). It must return quickly. For measurement
	// and tests: which transport carried a result, the client's timings.
	OnResult func(ResultReceipt)
	// EventRate and EventBurst are each client's budget of CDP event posts
	// (POST /v1/host-browser-event), per second and at once; 0 means
	// DefaultEventRate and DefaultEventBurst. Posts beyond it are shed
	// (WIRE-5): answered 429 events_shed, counted (EventsShed) and logged
	// at most once a second per client. Result posts and invalidations are
	// never charged to it.
	EventRate  float64
	EventBurst int
	// Now is the clock of the event budget and of timeout diagnostics; nil
	// means time.Now.
	Now func() time.Time
	// Relay, when set, carries results and events posted to this replica
	// for requests and backends on other replicas (DHUB-3); nil keeps the
	// single-process behaviour.
	Relay Relay
}

// Route restricts which kind of client a Request may go to, on top of the
// PXY-2 rules.
type Route int

const (
	// RouteAny applies PXY-2 alone: chrome-extension clients first, then
	// desktop bridges.
	RouteAny Route = iota
	// RouteExtension allows only chrome-extension clients.
	RouteExtension
	// RouteBridge allows only clients that are not chrome-extension clients
	// (desktop bridges).
	RouteBridge
)

// Req is one CDP command for a host client (PXY-1).
type Req struct {
	// ConversationID is carried to the client and recorded on the pending
	// interaction.
	ConversationID string
	// Method is the CDP method, or a Vellum.* pseudo-method.
	Method string
	// Params is the JSON object of parameters; nil for none.
	Params json.RawMessage
	// SessionID is the flat CDP session the command is bound to, if any.
	SessionID string
	// Timeout overrides Options.DefaultTimeout when positive.
	Timeout time.Duration
	// TargetClientID pins one client (PXY-2).
	TargetClientID string
	// SourceActor, when set, restricts the choice to that actor's clients
	// (PXY-2).
	SourceActor string
	// Route restricts the client kind; the zero value is RouteAny.
	Route Route
	// Backend labels errors with the backend kind that sent the request.
	Backend browserbackend.Kind
}

// Proxy sends CDP commands to hub clients and waits for their results
// (PXY-1, PXY-2, PXY-5), and serves the routes clients answer on (PXY-4).
// Create it with New; all methods are safe for concurrent use. Close cancels
// every request in flight.
type Proxy struct {
	hub      eventhub.Hub
	log      *slog.Logger
	timeout  time.Duration
	maxBody  int64
	newID    func() string
	onResult func(ResultReceipt)
	relay    Relay
	done     chan struct{}
	// doneCtx is cancelled with done, for context.AfterFunc (a wait on
	// Close that holds no goroutine).
	doneCtx  context.Context
	stopAll  context.CancelFunc
	closeOne sync.Once
	events   *eventBudget

	// mu guards the one pending map (PXY-3: the interactions and, for this
	// Proxy's own requests, the hand-over of their results) and listeners.
	mu      sync.Mutex
	pending map[string]*pending
	// waiting counts, per target client, the pending entries whose
	// result this Proxy waits for (AwaitsResult).
	waiting   map[string]int
	listeners map[string]map[*listener]struct{}
	// answered is when each client last delivered a result, for timeout
	// diagnostics; bounded by maxAnswered (cleared when full).
	answered map[string]time.Time
	now      func() time.Time

	// attr ties frame, session, request and context ids to tabs (WIRE-4);
	// unattributed counts events withheld because nothing tied them to a
	// tab while several conversations listened.
	attr         attributions
	unattributed atomic.Uint64
}

// maxAnswered bounds Proxy.answered.
const maxAnswered = 4096

// New returns a Proxy. It panics when opts.Hub is nil (a programming error).
func New(opts Options) *Proxy {
	if opts.Hub == nil {
		panic("hostproxy: New: Options.Hub is nil")
	}
	p := &Proxy{
		hub:       opts.Hub,
		log:       opts.Logger,
		timeout:   opts.DefaultTimeout,
		maxBody:   opts.MaxBodyBytes,
		newID:     opts.NewRequestID,
		onResult:  opts.OnResult,
		events:    newEventBudget(opts.EventRate, opts.EventBurst, opts.Now),
		relay:     opts.Relay,
		done:      make(chan struct{}),
		pending:   make(map[string]*pending),
		waiting:   make(map[string]int),
		listeners: make(map[string]map[*listener]struct{}),
		attr:      newAttributions(),
		answered:  make(map[string]time.Time),
		now:       opts.Now,
	}
	if p.now == nil {
		p.now = time.Now
	}
	p.doneCtx, p.stopAll = context.WithCancel(context.Background())
	if p.log == nil {
		p.log = slog.Default()
	}
	p.log = p.log.With("module", "hostproxy")
	if p.timeout <= 0 {
		p.timeout = DefaultTimeout
	}
	if p.maxBody <= 0 {
		p.maxBody = DefaultMaxBodyBytes
	}
	if p.newID == nil {
		p.newID = randomID
	}
	return p
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// EventsUnattributed reports how many CDP events were delivered to no
// backend since New because nothing tied them to a tab while backends of
// more than one conversation listened to their client (WIRE-4).
func (p *Proxy) EventsUnattributed() uint64 { return p.unattributed.Load() }

// EventsShed reports how many CDP event posts were shed over their
// client's event budget since New (WIRE-5).
func (p *Proxy) EventsShed() uint64 { return p.events.shed.Load() }

// Hub returns the hub the proxy publishes to.
func (p *Proxy) Hub() eventhub.Hub { return p.hub }

// Close fails every request in flight with a ClassClosed error, sending each
// target client a cancel first, and makes later Requests fail the same way.
// Idempotent; returns nil.
func (p *Proxy) Close() error {
	p.closeOne.Do(func() { close(p.done); p.stopAll() })
	return nil
}

func (p *Proxy) closed() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func isExtension(c eventhub.ClientInfo) bool {
	return c.InterfaceID == wire.InterfaceChromeExtension
}

// Choose picks the client a Request would go to now, from the live roster
// (PXY-2):
//   - only host_browser-capable clients; with SourceActor only that actor's;
//     Route narrows further;
//   - TargetClientID pins that client (transport error, code no_client, when
//     it is not connected or not eligible);
//   - Vellum.* methods go only to chrome-extension clients; when none is
//     eligible the error is protocol-class with code extension_required (it
//     must not fail over);
//   - otherwise chrome-extension clients come before desktop bridges, most
//     recently active first within each group.
//
// No eligible client is a transport error with code no_client.
func (p *Proxy) Choose(req Req) (eventhub.ClientInfo, error) {
	pseudo := wire.IsPseudoMethod(req.Method)
	if req.TargetClientID != "" {
		// One lookup, not a copy of the whole roster per request.
		if c, ok := p.hub.Client(req.TargetClientID); ok && req.eligible(c) {
			if pseudo && !isExtension(c) {
				return eventhub.ClientInfo{}, p.extensionRequired(req)
			}
			return c, nil
		}
		return eventhub.ClientInfo{}, p.errorf(req, browserbackend.ClassTransport, browserbackend.CodeNoClient, false,
			"target client %q is not connected or not eligible", req.TargetClientID)
	}
	var eligible []eventhub.ClientInfo
	if h, ok := p.hub.(filteredRoster); ok {
		eligible = h.RosterWhere(req.eligible)
	} else {
		roster := p.hub.Roster()
		eligible = make([]eventhub.ClientInfo, 0, len(roster))
		for _, c := range roster {
			if req.eligible(c) {
				eligible = append(eligible, c)
			}
		}
	}
	sort.SliceStable(eligible, func(i, j int) bool {
		ei, ej := isExtension(eligible[i]), isExtension(eligible[j])
		if ei != ej {
			return ei
		}
		return eligible[i].LastActive.After(eligible[j].LastActive)
	})
	for _, c := range eligible {
		if pseudo && !isExtension(c) {
			continue
		}
		return c, nil
	}
	if pseudo {
		return eventhub.ClientInfo{}, p.extensionRequired(req)
	}
	return eventhub.ClientInfo{}, p.errorf(req, browserbackend.ClassTransport, browserbackend.CodeNoClient, false,
		"no connected host_browser client is eligible")
}

// filteredRoster is a hub that copies only the roster entries a filter keeps
// (eventhub.InProcess): choosing among a few clients of one actor then costs
// nothing per other client.
type filteredRoster interface {
	RosterWhere(keep func(eventhub.ClientInfo) bool) []eventhub.ClientInfo
}

// rosterOf returns the roster as the rules see it, in Hub.Roster order: on
// a filteredRoster hub only the host_browser clients of actor (every actor's
// when empty), the only ones ExtensionRule and HostBridgeRule look at.
func (p *Proxy) rosterOf(actor string) []eventhub.ClientInfo {
	if h, ok := p.hub.(filteredRoster); ok {
		return h.RosterWhere(func(c eventhub.ClientInfo) bool {
			return c.Has(eventhub.CapHostBrowser) && (actor == "" || c.ActorPrincipalID == actor)
		})
	}
	return p.hub.Roster()
}

// eligible reports whether c may serve req: host_browser-capable, of
// req.SourceActor when set, and on req.Route. It only reads c.
func (req Req) eligible(c eventhub.ClientInfo) bool {
	if !c.Has(eventhub.CapHostBrowser) {
		return false
	}
	if req.SourceActor != "" && c.ActorPrincipalID != req.SourceActor {
		return false
	}
	switch req.Route {
	case RouteExtension:
		return isExtension(c)
	case RouteBridge:
		return !isExtension(c)
	}
	return true
}

func (p *Proxy) extensionRequired(req Req) error {
	return p.errorf(req, browserbackend.ClassProtocol, browserbackend.CodeExtensionRequired, false,
		"%s is implemented only by the chrome extension, and no chrome-extension client is eligible", req.Method)
}

func (p *Proxy) errorf(req Req, class browserbackend.Class, code string, dispatched bool, format string, args ...any) *browserbackend.Error {
	return &browserbackend.Error{
		Class: class, Code: code, Method: req.Method, Backend: req.Backend,
		Dispatched: dispatched, Message: fmt.Sprintf(format, args...),
	}
}

// Request sends one command to the client chosen by Choose and waits for its
// result (PXY-1). It returns the CDP result object, or an
// *browserbackend.Error:
//   - ClassPolicy, code invalid_params, when req.Params is neither empty,
//     null nor one JSON object (nothing was sent);
//   - the Choose errors (nothing was sent);
//   - ClassTransport when publishing fails (logged), when the target client
//     disconnects or is shed while the request is in flight (HUB-5, at once),
//     or when the client reports a transport-class code or a non-JSON result.
//     A target that has already reconnected under the same client id and
//     actor when the proxy sees the disconnect, and whose new registration
//     holds the request (the hub's replay brought it, or the client resumed
//     past it), is not a failure: the request keeps waiting on that
//     registration. The request is published with its deadline as
//     Target.ReplayUntil and retracted (Hub.Retract) before any failure is
//     returned, so a request whose caller failed is never replayed to a
//     later reconnect;
//   - ClassProtocol for a CDP error the client reports (numeric code) or
//     another string code;
//   - ClassTimeout when the timeout (req.Timeout, else the proxy default)
//     or ctx's deadline passes, ClassAborted when ctx is cancelled; in both
//     cases a host_browser_cancel goes to the target client only (PXY-5);
//   - ClassClosed after Close.
//
// A successful result shares memory with the decoded result body instead of
// copying it: it must not be modified in place.
func (p *Proxy) Request(ctx context.Context, req Req) (json.RawMessage, error) {
	if p.closed() {
		return nil, p.errorf(req, browserbackend.ClassClosed, browserbackend.CodeClosed, false, "proxy is closed")
	}
	if ctx.Err() != nil {
		// Never sent: a timeout says so, with what the client it would
		// have gone to is doing (issue 10).
		e := browserbackend.ContextError(ctx, req.Method, false)
		e.Backend = req.Backend
		if e.Class == browserbackend.ClassTimeout {
			e.Diagnostics = &browserbackend.Diagnostics{}
			if client, err := p.Choose(req); err == nil {
				e.Diagnostics = p.diagnostics(client)
			}
		}
		return nil, e
	}
	if err := browserbackend.CheckParams(req.Method, req.Params); err != nil {
		return nil, p.errorf(req, browserbackend.ClassPolicy, browserbackend.CodeInvalidParams, false, "%s", err.Message)
	}
	client, err := p.Choose(req)
	if err != nil {
		return nil, err
	}
	return p.send(ctx, req, client)
}

func (p *Proxy) send(ctx context.Context, req Req, client eventhub.ClientInfo) (json.RawMessage, error) {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = p.timeout
	}
	deadline := time.Now().Add(timeout)
	dl, ctxFirst := ctx.Deadline()
	if ctxFirst = ctxFirst && dl.Before(deadline); ctxFirst {
		deadline = dl
	}
	id := p.newID()
	e := &pending{in: Interaction{
		RequestID:      id,
		Kind:           KindHostBrowser,
		ConversationID: req.ConversationID,
		TargetClientID: client.ClientID,
		TargetActor:    client.ActorPrincipalID,
	}, result: make(chan ResultBody, 1), sent: p.now()}
	if err := p.add(e); err != nil {
		return nil, p.errorf(req, browserbackend.ClassTransport, browserbackend.CodeTransportError, false, "register request: %v", err)
	}

	gone := p.hub.Gone(client.ClientID)
	msg := RequestMessage{
		Type:           wire.TypeHostBrowserRequest,
		RequestID:      id,
		ConversationID: req.ConversationID,
		CDPMethod:      req.Method,
		CDPParams:      req.Params,
		CDPSessionID:   req.SessionID,
		TimeoutSeconds: timeout.Seconds(),
	}
	if ctxFirst {
		// Tell the client the deadline that will actually apply.
		msg.TimeoutSeconds = max(time.Until(deadline), time.Millisecond).Seconds()
	}
	if len(msg.CDPParams) == 0 || string(msg.CDPParams) == "null" {
		msg.CDPParams = nil
	}
	// The request is eligible for a reconnect's replay until its deadline at
	// most; every way out below retracts it first (see Hub.Retract). Its
	// request id correlates the result with it in a hub spanning replicas.
	envID, err := p.hub.Publish(ctx, eventhub.Target{ClientID: client.ClientID, ReplayUntil: deadline, CorrelationID: id},
		req.ConversationID, msg)
	if err != nil {
		p.take(e)
		p.log.Warn("host_browser_request publish failed",
			"requestId", id, "clientId", client.ClientID, "interfaceId", client.InterfaceID,
			"method", req.Method, "error", err)
		e := p.errorf(req, browserbackend.ClassTransport, browserbackend.CodeTransportError, false,
			"publish to client %q failed", client.ClientID)
		e.Err = err
		return nil, e
	}
	defer p.retract(envID, id)

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case res := <-e.result:
			p.noteAnswer(client.ClientID)
			out, err := p.classify(req, res)
			p.describeTimeout(err, client, e)
			return out, err
		case <-gone:
			next, res, ok := p.onGone(envID, e)
			if next != nil {
				// The client reconnected and its new registration holds the
				// request: keep waiting, now on that registration's end.
				p.log.Debug("host_browser_request target client reconnected; still waiting",
					"requestId", id, "clientId", client.ClientID)
				gone = next
				continue
			}
			if ok {
				return p.classify(req, res)
			}
			p.log.Warn("host_browser_request target client went away",
				"requestId", id, "clientId", client.ClientID, "method", req.Method)
			return nil, p.errorf(req, browserbackend.ClassTransport, browserbackend.CodeTransportError, true,
				"client %q disconnected while the request was in flight", client.ClientID)
		case <-timer.C:
			diag := p.diagnostics(client) // while this request is still pending
			if res, ok := p.abandon(envID, e); ok {
				return p.classify(req, res)
			}
			p.cancel(id, client.ClientID, "timeout")
			err := p.errorf(req, browserbackend.ClassTimeout, browserbackend.CodeTimeout, true,
				"no result from client %q within %s", client.ClientID, timeout)
			err.Diagnostics = diag
			return nil, err
		case <-ctx.Done():
			diag := p.diagnostics(client)
			if res, ok := p.abandon(envID, e); ok {
				return p.classify(req, res)
			}
			p.cancel(id, client.ClientID, "caller")
			err := browserbackend.Classify(ctx.Err(), true)
			err.Method, err.Backend = req.Method, req.Backend
			if err.Class == browserbackend.ClassTimeout {
				err.Diagnostics = diag
			}
			return nil, err
		case <-p.done:
			if res, ok := p.abandon(envID, e); ok {
				return p.classify(req, res)
			}
			p.cancel(id, client.ClientID, "proxy closed")
			return nil, p.errorf(req, browserbackend.ClassClosed, browserbackend.CodeClosed, true, "proxy is closed")
		}
	}
}

// describeTimeout gives a client's timeout answer (err, of request e: the
// wire code timeout, a transport error by PXY-6) the client's diagnostics,
// e counted among the requests in flight as it was until its answer.
func (p *Proxy) describeTimeout(err error, client eventhub.ClientInfo, e *pending) {
	var be *browserbackend.Error
	if !errors.As(err, &be) || be.Code != browserbackend.CodeTimeout || be.Diagnostics != nil {
		return
	}
	d := p.diagnostics(client)
	d.InFlight++
	if !e.sent.IsZero() {
		d.OldestInFlight = max(d.OldestInFlight, p.now().Sub(e.sent))
	}
	be.Diagnostics = d
}

// noteAnswer records that clientID delivered a result now.
func (p *Proxy) noteAnswer(clientID string) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.answered[clientID]; !ok && len(p.answered) >= maxAnswered {
		clear(p.answered)
	}
	p.answered[clientID] = now
}

// diagnostics describes what client was doing for this Proxy (issue 10:
// timeouts a person can act on): the host_browser requests in flight to it,
// the oldest one's age, the time since it last delivered a result (its
// connection's age when it has not) and the age of its connection
// (ClientInfo.ConnectedAt).
func (p *Proxy) diagnostics(client eventhub.ClientInfo) *browserbackend.Diagnostics {
	now := p.now()
	d := &browserbackend.Diagnostics{}
	if !client.ConnectedAt.IsZero() {
		d.Uptime = now.Sub(client.ConnectedAt)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.pending {
		if e.in.TargetClientID == client.ClientID && !e.sent.IsZero() {
			d.InFlight++
			d.OldestInFlight = max(d.OldestInFlight, now.Sub(e.sent))
		}
	}
	d.SinceLastAnswer = d.Uptime
	if t, ok := p.answered[client.ClientID]; ok && (client.ConnectedAt.IsZero() || !t.Before(client.ConnectedAt)) {
		d.SinceLastAnswer = now.Sub(t)
	}
	return d
}

// onGone decides, when the target's registration has ended, whether the
// request fails or keeps waiting. It takes the target's current Gone channel
// first and then retracts the request: the hub answers whether the client's
// current registration holds the request, and a registration that starts
// after the retraction never receives it in a replay. So:
//   - held, and still pending: keep waiting on that channel (if the
//     registration it belongs to was replaced meanwhile, it is already
//     closed and the next round decides again);
//   - otherwise the entry is removed (the caller fails, transport) and no
//     later reconnect replays the request.
//
// No interleaving both fails the caller and replays the request. A result
// delivered first is returned with ok true, as abandon does.
func (p *Proxy) onGone(envID string, e *pending) (next <-chan struct{}, res ResultBody, ok bool) {
	clientID := e.in.TargetClientID
	next = p.hub.Gone(clientID)
	held := p.retract(envID, e.in.RequestID)
	if held && p.isPending(e) {
		return next, ResultBody{}, false
	}
	res, ok = p.take(e)
	return nil, res, ok
}

// retract ends the replay eligibility of the request published as envID
// and reports whether the target's current registration holds it. A hub
// error is logged and counts as not held.
func (p *Proxy) retract(envID, requestID string) bool {
	// The request's own context may be done; the retraction gets a short one.
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	held, err := p.hub.Retract(ctx, envID)
	if err != nil {
		p.log.Warn("host_browser_request retract failed; a reconnect may still replay it until its deadline",
			"requestId", requestID, "error", err)
		return false
	}
	return held
}

// abandon ends the request on the caller's side: it removes the pending
// entry and retracts the request before the caller sees its error. When the
// result route got there first it returns that result with ok true; an entry
// resolved by the host app (Resolve) yields ok false instead of a wait that
// never ends.
func (p *Proxy) abandon(envID string, e *pending) (ResultBody, bool) {
	res, ok := p.take(e)
	if !ok {
		p.retract(envID, e.in.RequestID)
	}
	return res, ok
}

// cancel tells the target client, and only it, to stop working on id.
func (p *Proxy) cancel(id, clientID, why string) {
	// The request's own context may be done; the cancel gets a short one.
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	_, err := p.hub.Publish(ctx, eventhub.Target{ClientID: clientID}, "", CancelMessage{Type: wire.TypeHostBrowserCancel, RequestID: id})
	if err != nil {
		p.log.Warn("host_browser_cancel publish failed", "requestId", id, "clientId", clientID, "why", why, "error", err)
		return
	}
	p.log.Debug("host_browser_cancel sent", "requestId", id, "clientId", clientID, "why", why)
}

// classify turns a client's result into the CDP result or a typed error
// (PXY-6).
func (p *Proxy) classify(req Req, res ResultBody) (json.RawMessage, error) {
	if !res.IsError && len(res.Content) > 0 {
		// res.Content was decoded from this client's body for this request
		// and nothing else refers to it, so the result can share its bytes
		// instead of copying them (a screenshot is tens of MB). Same outcome
		// as ClassifyResult; anything it would refuse goes there.
		view := unsafe.Slice(unsafe.StringData(res.Content), len(res.Content))
		if validJSON(view) {
			return json.RawMessage(view), nil
		}
	}
	return ClassifyResult(req.Method, req.Backend, res.Content, res.IsError)
}

// ClassifyResult applies the wire contract to a result's content (PXY-6):
//   - success: content must be JSON (else ClassTransport/invalid_response);
//     an empty content means an empty result object;
//   - error with a string code from the transport set (transport_error,
//     unreachable, timeout, non_loopback, cdp_session_not_found, cancelled,
//     target_crashed): ClassTransport with that code (PXY-6: a client's own
//     timeout is a transport error; it carries the client's diagnostics);
//   - error with a numeric code: ClassProtocol with that CDP code, the
//     innermost one when the message holds another CDP error (WIRE-2);
//   - error with the string code page_lost (the client's tab crashed
//     before the command; a navigation revives it): ClassClosed, not
//     dispatched;
//   - error with another string code: ClassProtocol with that code;
//   - error in plain text: ClassProtocol with target_not_found,
//     forbidden_target or client_error (WIRE-2, ParseErrorAnswer): the
//     client answered, so there is no failover;
//   - an error object without a usable code: ClassTransport/invalid_response.
func ClassifyResult(method string, backend browserbackend.Kind, content string, isError bool) (json.RawMessage, error) {
	mk := func(class browserbackend.Class, code, msg string) *browserbackend.Error {
		return &browserbackend.Error{Class: class, Code: code, Method: method, Backend: backend, Dispatched: true, Message: msg}
	}
	if !isError {
		if strings.TrimSpace(content) == "" {
			return json.RawMessage(`{}`), nil
		}
		if !json.Valid([]byte(content)) {
			return nil, mk(browserbackend.ClassTransport, browserbackend.CodeInvalidResponse, "client returned a result that is not JSON")
		}
		return json.RawMessage(content), nil
	}
	ans := ParseErrorAnswer(content)
	switch {
	case ans.Malformed:
		return nil, mk(browserbackend.ClassTransport, browserbackend.CodeInvalidResponse, "client returned an error without a usable code")
	case ans.HasCDPCode:
		e := browserbackend.ProtocolError(ans.CDPCode, ans.Message)
		e.Method, e.Backend, e.Dispatched = method, backend, true
		return nil, e
	case IsTransportCode(ans.StringCode):
		return nil, mk(browserbackend.ClassTransport, ans.StringCode, ans.Message)
	case ans.StringCode == browserbackend.CodePageLost:
		// The client's tab crashed before the command: not sent, and not
		// a failover (another browser would not have the conversation's
		// page either); a navigation revives the tab.
		e := mk(browserbackend.ClassClosed, ans.StringCode, ans.Message)
		e.Dispatched = false
		return nil, e
	}
	return nil, mk(browserbackend.ClassProtocol, ans.StringCode, ans.Message)
}
