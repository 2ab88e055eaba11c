package hostproxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

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
	Hub eventhub.Hub
	// Tracker holds pending interactions; nil gives the proxy its own. Share
	// one Tracker with the host app's other host proxies (bash, file, …) so
	// the result route can answer 409 for a request of another kind; do not
	// share it with a second Proxy (a result is delivered only to waiters of
	// the Proxy whose route received it).
	Tracker *Tracker
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
	// Now is the clock of the event budget; nil means time.Now.
	Now func() time.Time
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
	tracker  *Tracker
	log      *slog.Logger
	timeout  time.Duration
	maxBody  int64
	newID    func() string
	onResult func(ResultReceipt)
	done     chan struct{}
	closeOne sync.Once
	events   *eventBudget

	mu        sync.Mutex
	waiters   map[string]*waiter
	listeners map[string]map[*browserbackend.EventBus]struct{}
}

type waiter struct {
	clientID string
	ch       chan ResultBody // buffered 1; written once by the result route
}

// New returns a Proxy. It panics when opts.Hub is nil (a programming error).
func New(opts Options) *Proxy {
	if opts.Hub == nil {
		panic("hostproxy: New: Options.Hub is nil")
	}
	p := &Proxy{
		hub:       opts.Hub,
		tracker:   opts.Tracker,
		log:       opts.Logger,
		timeout:   opts.DefaultTimeout,
		maxBody:   opts.MaxBodyBytes,
		newID:     opts.NewRequestID,
		onResult:  opts.OnResult,
		events:    newEventBudget(opts.EventRate, opts.EventBurst, opts.Now),
		done:      make(chan struct{}),
		waiters:   make(map[string]*waiter),
		listeners: make(map[string]map[*browserbackend.EventBus]struct{}),
	}
	if p.tracker == nil {
		p.tracker = &Tracker{}
	}
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
	// A hub that can filter its replay gets this proxy's filter at once, so
	// no composition can forget it (see ReplayFilter).
	if h, ok := p.hub.(replayFilterSetter); ok {
		h.SetReplayFilter(p.ReplayFilter())
	}
	return p
}

// replayFilterSetter is implemented by *eventhub.InProcess.
type replayFilterSetter interface {
	SetReplayFilter(eventhub.ReplayFilter)
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// EventsShed reports how many CDP event posts were shed over their
// client's event budget since New (WIRE-5).
func (p *Proxy) EventsShed() uint64 { return p.events.shed.Load() }

// Hub returns the hub the proxy publishes to.
func (p *Proxy) Hub() eventhub.Hub { return p.hub }

// Tracker returns the pending-interaction tracker.
func (p *Proxy) Tracker() *Tracker { return p.tracker }

// Close fails every request in flight with a ClassClosed error, sending each
// target client a cancel first, and makes later Requests fail the same way.
// Idempotent; returns nil.
func (p *Proxy) Close() error {
	p.closeOne.Do(func() { close(p.done) })
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

// IsPseudoMethod reports whether method is a Vellum.* pseudo-method that only
// chrome-extension clients implement (PXY-2).
func IsPseudoMethod(method string) bool { return strings.HasPrefix(method, "Vellum.") }

func isExtension(c eventhub.ClientInfo) bool {
	return c.InterfaceID == eventhub.InterfaceChromeExtension
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
	roster := p.hub.Roster()
	eligible := make([]eventhub.ClientInfo, 0, len(roster))
	for _, c := range roster {
		if !c.Has(eventhub.CapHostBrowser) {
			continue
		}
		if req.SourceActor != "" && c.ActorPrincipalID != req.SourceActor {
			continue
		}
		switch req.Route {
		case RouteExtension:
			if !isExtension(c) {
				continue
			}
		case RouteBridge:
			if isExtension(c) {
				continue
			}
		}
		eligible = append(eligible, c)
	}
	pseudo := IsPseudoMethod(req.Method)
	if req.TargetClientID != "" {
		for _, c := range eligible {
			if c.ClientID != req.TargetClientID {
				continue
			}
			if pseudo && !isExtension(c) {
				return eventhub.ClientInfo{}, p.extensionRequired(req)
			}
			return c, nil
		}
		return eventhub.ClientInfo{}, p.errorf(req, browserbackend.ClassTransport, browserbackend.CodeNoClient, false,
			"target client %q is not connected or not eligible", req.TargetClientID)
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
//     actor when the proxy sees the disconnect is not a failure: the request
//     keeps waiting on the new registration, which the hub's replay brings
//     it to (a reconnect without Last-Event-ID, or past the ring's bounds,
//     does not replay it: the request then ends at its timeout). The
//     ReplayFilter (installed by New in an in-process hub) makes sure a
//     request failed on a disconnect is never replayed to a later reconnect;
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
	if err := ctx.Err(); err != nil {
		e := browserbackend.Classify(err, false)
		e.Method, e.Backend = req.Method, req.Backend
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
	id := p.newID()
	if err := p.tracker.Register(Interaction{
		RequestID:      id,
		Kind:           KindHostBrowser,
		ConversationID: req.ConversationID,
		TargetClientID: client.ClientID,
		TargetActor:    client.ActorPrincipalID,
	}); err != nil {
		return nil, p.errorf(req, browserbackend.ClassTransport, browserbackend.CodeTransportError, false, "register request: %v", err)
	}
	w := &waiter{clientID: client.ClientID, ch: make(chan ResultBody, 1)}
	p.mu.Lock()
	p.waiters[id] = w
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.waiters, id)
		p.mu.Unlock()
	}()

	gone := p.hub.Gone(client.ClientID)
	msg := RequestMessage{
		Type:           TypeRequest,
		RequestID:      id,
		ConversationID: req.ConversationID,
		CDPMethod:      req.Method,
		CDPParams:      req.Params,
		CDPSessionID:   req.SessionID,
		TimeoutSeconds: timeout.Seconds(),
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		// Tell the client the deadline that will actually apply.
		msg.TimeoutSeconds = max(time.Until(dl), time.Millisecond).Seconds()
	}
	if len(msg.CDPParams) == 0 || string(msg.CDPParams) == "null" {
		msg.CDPParams = nil
	}
	if _, err := p.hub.Publish(ctx, eventhub.Target{ClientID: client.ClientID}, req.ConversationID, msg); err != nil {
		p.tracker.Resolve(id)
		p.log.Warn("host_browser_request publish failed",
			"requestId", id, "clientId", client.ClientID, "interfaceId", client.InterfaceID,
			"method", req.Method, "error", err)
		e := p.errorf(req, browserbackend.ClassTransport, browserbackend.CodeTransportError, false,
			"publish to client %q failed", client.ClientID)
		e.Err = err
		return nil, e
	}

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case res := <-w.ch:
			return p.classify(req, res)
		case <-gone:
			next, res, ok := p.onGone(id, client, w)
			if next != nil {
				// The client reconnected: the request is replayed to the new
				// registration (or the client read it before it went away), so
				// keep waiting, now on the new registration's end.
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
			if res, ok := p.abandon(id, w); ok {
				return p.classify(req, res)
			}
			p.cancel(id, client.ClientID, "timeout")
			return nil, p.errorf(req, browserbackend.ClassTimeout, browserbackend.CodeTimeout, true,
				"no result from client %q within %s", client.ClientID, timeout)
		case <-ctx.Done():
			if res, ok := p.abandon(id, w); ok {
				return p.classify(req, res)
			}
			p.cancel(id, client.ClientID, "caller")
			e := browserbackend.Classify(ctx.Err(), true)
			e.Method, e.Backend = req.Method, req.Backend
			return nil, e
		case <-p.done:
			if res, ok := p.abandon(id, w); ok {
				return p.classify(req, res)
			}
			p.cancel(id, client.ClientID, "proxy closed")
			return nil, p.errorf(req, browserbackend.ClassClosed, browserbackend.CodeClosed, true, "proxy is closed")
		}
	}
}

// onGone decides, when the target's registration has ended, whether the
// request fails or keeps waiting. Under p.mu, the lock ReplayFilter takes:
//   - the same client id is connected again for the same actor (a reconnect
//     already registered) and the request is still pending: it returns that
//     registration's Gone channel. The reconnect's replay is filtered after
//     its registration became visible, so the filter sees the request
//     pending and replays it (or the client had read it: its Last-Event-ID
//     is past it);
//   - otherwise the request is resolved here (the caller fails, transport),
//     so any later reconnect's filter drops it: it is never replayed.
//
// Both decisions and the filter's look-up are serialised by p.mu, and a
// reconnect is visible before its filter runs, so no interleaving both
// fails the caller and replays the request. When a result was delivered
// first it is returned with ok true, as abandon does.
func (p *Proxy) onGone(id string, client eventhub.ClientInfo, w *waiter) (next <-chan struct{}, res ResultBody, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, pending := p.tracker.Get(id); pending {
		if c, connected := p.hub.Client(client.ClientID); connected && c.ActorPrincipalID == client.ActorPrincipalID {
			// If this registration has ended meanwhile, Gone is already
			// closed (or a newer one's) and the next round decides again.
			return p.hub.Gone(client.ClientID), ResultBody{}, false
		}
		p.tracker.Resolve(id)
		return nil, ResultBody{}, false
	}
	select {
	case res := <-w.ch: // deliver resolves and sends under p.mu
		return nil, res, true
	default:
		return nil, ResultBody{}, false
	}
}

// ReplayFilter returns the filter to install in the hub the proxy publishes
// to (eventhub.WithReplayFilter or (*eventhub.InProcess).SetReplayFilter) so
// that a reconnect replays a host_browser_request only while its caller is
// still waiting (HUB-3 replay, HUB-5 fail fast). It keeps every other event,
// and a request only while its request id is pending in the proxy's Tracker
// as a host_browser interaction for that client. A request whose caller
// failed on the disconnect, timed out, was cancelled or already got its
// result is dropped, so the client never runs a command whose caller may
// have run it on another browser.
//
// The filter takes the lock under which the proxy decides, when a target's
// registration ends, between failing the request and waiting for the
// reconnected client (see Request). New installs it by itself in a hub that
// has SetReplayFilter (the in-process hub); install it by hand in another hub
// implementation. One hub serves one Proxy: with several proxies on one hub,
// each would drop the others' requests.
// Safe for concurrent use.
func (p *Proxy) ReplayFilter() eventhub.ReplayFilter {
	return func(clientID string, env eventhub.Envelope) bool {
		var m struct {
			Type      string `json:"type"`
			RequestID string `json:"requestId"`
		}
		if json.Unmarshal(env.Message, &m) != nil || m.Type != TypeRequest {
			return true
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		in, ok := p.tracker.Get(m.RequestID)
		return ok && in.Kind == KindHostBrowser && in.TargetClientID == clientID
	}
}

// abandon resolves the pending entry. When the result route got there first
// it returns that result with ok true. deliver resolves and sends under p.mu,
// so once abandon holds p.mu a delivered result is already in w.ch; an entry
// resolved by someone else (Tracker.Resolve called by the host app) yields
// ok false instead of a wait that never ends.
func (p *Proxy) abandon(id string, w *waiter) (ResultBody, bool) {
	if _, ok := p.tracker.Resolve(id); ok {
		return ResultBody{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case res := <-w.ch:
		return res, true
	default:
		return ResultBody{}, false
	}
}

// cancel tells the target client, and only it, to stop working on id.
func (p *Proxy) cancel(id, clientID, why string) {
	// The request's own context may be done; the cancel gets a short one.
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	_, err := p.hub.Publish(ctx, eventhub.Target{ClientID: clientID}, "", CancelMessage{Type: TypeCancel, RequestID: id})
	if err != nil {
		p.log.Warn("host_browser_cancel publish failed", "requestId", id, "clientId", clientID, "why", why, "error", err)
		return
	}
	p.log.Debug("host_browser_cancel sent", "requestId", id, "clientId", clientID, "why", why)
}

// deliver resolves the pending entry and hands res to its waiter, both under
// p.mu, and reports whether it did. Without a waiter in this Proxy (the entry
// belongs to another Proxy sharing the Tracker, or its caller has not yet
// installed the waiter) nothing is resolved: resolving it here would lose
// the result and leave the real caller blocked in abandon.
func (p *Proxy) deliver(res ResultBody) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.waiters[res.RequestID]
	if w == nil {
		return false
	}
	if _, ok := p.tracker.Resolve(res.RequestID); !ok {
		return false
	}
	w.ch <- res // buffered 1, and the tracker lets only one post through
	return true
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
		if json.Valid(view) {
			return json.RawMessage(view), nil
		}
	}
	return ClassifyResult(req.Method, req.Backend, res.Content, res.IsError)
}

// ClassifyResult applies the wire contract to a result's content (PXY-6):
//   - success: content must be JSON (else ClassTransport/invalid_response);
//     an empty content means an empty result object;
//   - error with a string code from the transport set (transport_error,
//     unreachable, timeout, non_loopback, cdp_session_not_found, cancelled):
//     ClassTransport with that code;
//   - error with a numeric code: ClassProtocol with that CDP code, the
//     innermost one when the message holds another CDP error (WIRE-2);
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
	}
	return nil, mk(browserbackend.ClassProtocol, ans.StringCode, ans.Message)
}
