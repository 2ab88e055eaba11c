package hostproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub/wire"
)

// BackendOptions configures NewExtensionBackend and NewHostBridgeBackend.
type BackendOptions struct {
	// Timeout is the per-command timeout; 0 means the proxy's default.
	Timeout time.Duration
}

// ExtensionBackend is the extension backend: a browserbackend.ScopedClient
// and EventSource that sends each command through the Proxy to one
// chrome-extension client of the invocation's actor (the invocation's target
// client when set) and offers the Vellum.* tab operations.
//
// The client is chosen on the first Send and the backend stays bound to it,
// so flat CDP session ids keep meaning the same browser; once that client
// is gone, later Sends fail with a transport error (code no_client, not
// dispatched). Subscribe delivers the events the bound client posts for the
// tabs the backend's commands name. Safe for concurrent use; Close is
// idempotent and fails in-flight Sends with ClassClosed.
type ExtensionBackend struct{ s hubSession }

// NewExtensionBackend returns the extension backend for inv. The extension
// provider builds its backends here.
func (p *Proxy) NewExtensionBackend(inv browserbackend.Invocation, opts BackendOptions) *ExtensionBackend {
	b := &ExtensionBackend{}
	b.s.init(p, browserbackend.KindExtension, RouteExtension, inv, inv.TargetClientID, opts)
	return b
}

// Kind returns browserbackend.KindExtension.
func (b *ExtensionBackend) Kind() browserbackend.Kind { return browserbackend.KindExtension }

// ClientID returns the client the backend is bound to, "" before the first
// Send.
func (b *ExtensionBackend) ClientID() string { return b.s.boundClient() }

// Send implements browserbackend.ScopedClient: it sends cmd to the bound
// client and returns the CDP result, or an *browserbackend.Error classified
// as Proxy.Request documents. The result shares memory with the decoded
// result body: read it or copy it, but do not modify it in place.
func (b *ExtensionBackend) Send(ctx context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
	return b.s.send(ctx, cmd, nil)
}

// Subscribe implements browserbackend.EventSource.
func (b *ExtensionBackend) Subscribe(method string) (<-chan browserbackend.Event, func()) {
	return b.s.bus.Subscribe(method)
}

// SubscribeBuffer implements browserbackend.BufferedEventSource.
func (b *ExtensionBackend) SubscribeBuffer(method string, buffer int) (<-chan browserbackend.Event, func()) {
	return b.s.bus.SubscribeBuffer(method, buffer)
}

// Close releases the backend: in-flight Sends fail with ClassClosed (their
// clients get a cancel), subscriptions close. It never touches the browser.
// Idempotent; returns nil.
func (b *ExtensionBackend) Close() error { return b.s.close() }

// BridgeBackend is the host-bridge backend: a browserbackend.ScopedClient
// and EventSource that sends each command through the Proxy to one desktop
// (non-extension) host_browser client of the invocation's actor. It never
// aims at the invocation's target client and never sends Vellum.* methods
// (they fail with ClassPolicy, code not_supported), so an extension that
// connects mid-invocation does not take over its commands. Binding, events,
// concurrency and Close are as for ExtensionBackend.
type BridgeBackend struct {
	s hubSession

	mu     sync.Mutex
	probed bool // probePage ran
}

// NewHostBridgeBackend returns the host-bridge backend for inv, bound on its
// first Send to the most recently active desktop client of inv's actor.
func (p *Proxy) NewHostBridgeBackend(inv browserbackend.Invocation, opts BackendOptions) *BridgeBackend {
	return newBridgeBackend(p, inv, "", opts)
}

// newBridgeBackend builds every host-bridge backend: for the desktop client
// clientID when set (the one the provider's rule chose), else for the one
// the first Send chooses.
func newBridgeBackend(p *Proxy, inv browserbackend.Invocation, clientID string, opts BackendOptions) *BridgeBackend {
	inv.TargetClientID = ""
	b := &BridgeBackend{}
	b.s.init(p, browserbackend.KindHostBridge, RouteBridge, inv, clientID, opts)
	return b
}

// Kind returns browserbackend.KindHostBridge.
func (b *BridgeBackend) Kind() browserbackend.Kind { return browserbackend.KindHostBridge }

// ClientID returns the client the backend is bound to, "" before the first
// Send.
func (b *BridgeBackend) ClientID() string { return b.s.boundClient() }

// Send is ExtensionBackend.Send for the desktop client; a Vellum.* method
// fails at once with ClassPolicy, code not_supported.
func (b *BridgeBackend) Send(ctx context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
	if wire.IsPseudoMethod(cmd.Method) {
		return nil, &browserbackend.Error{Class: browserbackend.ClassPolicy, Code: browserbackend.CodeNotSupported,
			Method: cmd.Method, Backend: browserbackend.KindHostBridge,
			Message: fmt.Sprintf("%s is a tab operation only the extension backend supports", cmd.Method)}
	}
	return b.s.send(ctx, cmd, b.probePage)
}

// Subscribe implements browserbackend.EventSource.
func (b *BridgeBackend) Subscribe(method string) (<-chan browserbackend.Event, func()) {
	return b.s.bus.Subscribe(method)
}

// SubscribeBuffer implements browserbackend.BufferedEventSource.
func (b *BridgeBackend) SubscribeBuffer(method string, buffer int) (<-chan browserbackend.Event, func()) {
	return b.s.bus.SubscribeBuffer(method, buffer)
}

// Close is ExtensionBackend.Close.
func (b *BridgeBackend) Close() error { return b.s.close() }

// probePage asks a desktop bridge that has posted events which page its
// sessionless commands run on (Target.getTargetInfo, once per backend) and
// claims that target, so the bridge's events of the page, which name its
// target id, reach this backend and not another conversation's. Before the
// client's first event there is nothing to keep apart. A failure is the
// call's: the page the command would run on is gone or the bridge did not
// answer.
func (b *BridgeBackend) probePage(ctx context.Context, req Req) error {
	b.mu.Lock()
	done := b.probed
	b.probed = true
	b.mu.Unlock()
	if done {
		return nil
	}
	ev := b.s.p.events
	if _, seen := ev.attr.get(req.TargetClientID, attrSeen, "-"); !seen {
		return nil
	}
	probe := req
	probe.Method, probe.Params = "Target.getTargetInfo", json.RawMessage(`{}`)
	res, err := b.s.p.Request(ctx, probe)
	if err != nil {
		return err
	}
	var info struct {
		TargetInfo struct {
			TargetID string `json:"targetId"`
		} `json:"targetInfo"`
	}
	if json.Unmarshal(res, &info) == nil && info.TargetInfo.TargetID != "" {
		b.s.claim(req.TargetClientID, info.TargetInfo.TargetID)
	}
	return nil
}

var (
	_ browserbackend.ScopedClient        = (*ExtensionBackend)(nil)
	_ browserbackend.BufferedEventSource = (*ExtensionBackend)(nil)
	_ browserbackend.ScopedClient        = (*BridgeBackend)(nil)
	_ browserbackend.BufferedEventSource = (*BridgeBackend)(nil)
)

// errBackendClosed is the cancellation cause of Sends cut short by Close.
var errBackendClosed = errors.New("hostproxy: backend closed")

// hubSession is the request path both backends share: the client binding,
// the listener of that client's events, the tab claims and the Sends in
// flight.
type hubSession struct {
	p       *Proxy
	kind    browserbackend.Kind // labels errors
	route   Route
	inv     browserbackend.Invocation
	target  string // the client requests go to; "" lets the proxy choose
	timeout time.Duration

	bus browserbackend.EventBus

	mu       sync.Mutex
	clientID string
	listener *listener
	unlisten func()
	closed   bool
	// inflight holds the cancel of every Send in progress; close cancels
	// them with errBackendClosed.
	inflight map[*context.CancelCauseFunc]struct{}
}

func (s *hubSession) init(p *Proxy, kind browserbackend.Kind, route Route, inv browserbackend.Invocation, target string, opts BackendOptions) {
	s.p, s.kind, s.route, s.inv, s.target, s.timeout = p, kind, route, inv, target, opts.Timeout
	s.inflight = make(map[*context.CancelCauseFunc]struct{})
}

func (s *hubSession) boundClient() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clientID
}

func (s *hubSession) closedErr(method string) error {
	return &browserbackend.Error{Class: browserbackend.ClassClosed, Code: browserbackend.CodeClosed,
		Method: method, Backend: s.kind, Message: "backend is closed"}
}

// bind chooses the client on first use.
func (s *hubSession) bind(req Req) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", s.closedErr(req.Method)
	}
	if s.clientID != "" {
		return s.clientID, nil
	}
	c, err := s.p.choose(req)
	if err != nil {
		return "", err
	}
	s.clientID = c.ClientID
	s.listener, s.unlisten = s.p.events.listen(c.ClientID, s.inv.ConversationID, &s.bus)
	return s.clientID, nil
}

// send sends cmd to the bound client. sessionless, when set, runs first for
// a command bound to no session.
func (s *hubSession) send(ctx context.Context, cmd browserbackend.Command, sessionless func(context.Context, Req) error) (json.RawMessage, error) {
	req := Req{
		ConversationID: s.inv.ConversationID,
		Method:         cmd.Method,
		Params:         cmd.Params,
		SessionID:      cmd.SessionID,
		Timeout:        s.timeout,
		TargetClientID: s.target,
		SourceActor:    s.inv.ActorPrincipalID,
		Route:          s.route,
		Backend:        s.kind,
	}
	clientID, err := s.bind(req)
	if err != nil {
		return nil, err
	}
	req.TargetClientID = clientID
	var perr error
	switch {
	case cmd.SessionID == browserbackend.BrowserSessionID:
		// The browser target is no tab: claiming it would make this
		// backend one that owns a tab, and so cut it off from its page's
		// events while it owns no other. The bridge posts the browser
		// session's events under its page's target id.
	case cmd.SessionID != "":
		if s.claim(clientID, cmd.SessionID) {
			perr = s.probeTab(ctx, req)
		}
	case sessionless != nil:
		perr = sessionless(ctx, req)
	}
	if perr != nil {
		return nil, probeFailed(cmd.Method, perr)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if !s.track(&cancel, true) {
		return nil, s.closedErr(cmd.Method)
	}
	defer s.track(&cancel, false)
	res, err := s.p.Request(ctx, req)
	if err != nil && errors.Is(context.Cause(ctx), errBackendClosed) {
		return nil, s.closedErr(cmd.Method)
	}
	if err == nil {
		s.p.events.attr.learnResult(clientID, cmd.SessionID, cmd.Method, cmd.Params, res)
	}
	return res, err
}

// claim records that this backend's commands name owner (a tab id, target
// id or session id), so the client's events of that tab reach it. It
// reports whether the claim is new.
func (s *hubSession) claim(clientID, owner string) bool {
	s.mu.Lock()
	l := s.listener
	s.mu.Unlock()
	if l == nil {
		return false
	}
	if isTabID(owner) {
		return l.claim(owner)
	}
	// A child session's commands act in its tab: its events are this
	// backend's too. A target id is its tab's main frame id.
	attr := s.p.events.attr
	if tab, ok := attr.get(clientID, attrSession, owner); ok {
		l.claim(tab)
	} else {
		attr.set(clientID, attrFrame, owner, owner)
	}
	return l.claim(owner)
}

// probeFailed is the error of a command whose probe failed before the
// command was sent: the probe's class and code, naming the command, not
// dispatched (so the selector may fail over on a transport error).
func probeFailed(method string, err error) error {
	var e *browserbackend.Error
	if !errors.As(err, &e) {
		return err
	}
	c := *e
	c.Method, c.Dispatched = method, false
	switch {
	case e.Class == browserbackend.ClassTimeout:
		c.Message = "deadline passed before the command was sent, waiting for Target.getTargetInfo"
	case e.Message != "":
		c.Message = "before the command, Target.getTargetInfo: " + e.Message
	default:
		c.Message = "before the command, Target.getTargetInfo"
	}
	return &c
}

// probeTab asks a client whose events name no tab which CDP target the tab
// req names is (Target.getTargetInfo, once per client and tab), so events
// carrying that target's main frame id can be attributed before the tab's
// first Page.navigate answer says it. Best effort: a protocol error (a
// client that refuses the method) only leaves the tab's events to the other
// rules; a transport error is the call's (the command would meet it too).
func (s *hubSession) probeTab(ctx context.Context, req Req) error {
	tab, client := req.SessionID, req.TargetClientID
	if !isTabID(tab) {
		return nil
	}
	attr := s.p.events.attr
	if _, anon := attr.get(client, attrAnon, "-"); !anon {
		return nil
	}
	if _, done := attr.get(client, attrProbed, tab); done {
		return nil
	}
	attr.set(client, attrProbed, tab, tab)
	probe := req
	probe.Method, probe.Params = "Target.getTargetInfo", json.RawMessage(`{}`)
	res, err := s.p.Request(ctx, probe)
	if errors.Is(err, browserbackend.ErrTransport) {
		return err
	}
	if err == nil {
		attr.learnResult(client, tab, probe.Method, probe.Params, res)
	}
	return nil
}

// track adds (add true) or removes a Send's cancel; adding fails once the
// backend is closed.
func (s *hubSession) track(cancel *context.CancelCauseFunc, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		delete(s.inflight, cancel)
		return true
	}
	if s.closed {
		return false
	}
	s.inflight[cancel] = struct{}{}
	return true
}

// close cancels the Sends in flight, stops listening and closes the
// subscriptions. Idempotent.
func (s *hubSession) close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	unlisten := s.unlisten
	inflight := s.inflight
	s.inflight = nil
	s.mu.Unlock()
	for cancel := range inflight {
		(*cancel)(errBackendClosed)
	}
	if unlisten != nil {
		unlisten()
	}
	s.bus.Close()
	return nil
}
