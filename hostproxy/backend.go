package hostproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/browserchain/browserchain/browserbackend"
)

// Backend is the extension or host-bridge backend (PXY-6): a
// browserbackend.ScopedClient and EventSource that sends each command through
// the Proxy to one hub client.
//
// The client is chosen on the first Send (PXY-2, from the live roster) and the
// backend stays bound to it, so flat CDP session ids keep meaning the same
// browser; if that client goes away, later Sends fail with a transport error
// (code no_client, not dispatched). The binding is internal: nothing extra is
// put on the wire. The host-bridge backend never takes the invocation's
// target client id and only ever chooses desktop clients, so an extension
// that connects mid-invocation does not take over its commands.
// Events the bound client posts (PXY-4) are delivered to Subscribe channels.
// Safe for concurrent use; Close is idempotent and fails in-flight Sends with
// ClassClosed.
type Backend struct {
	p       *Proxy
	kind    browserbackend.Kind
	inv     browserbackend.Invocation
	route   Route
	timeout time.Duration
	// client, set by HostBridgeProvider, is the desktop client its rule
	// chose; requests go there rather than to the most recent client.
	client string

	bus browserbackend.EventBus

	mu       sync.Mutex
	clientID string
	listener *listener
	probed   bool // probePage ran
	unlisten func()
	closed   bool
	// inflight holds the cancel of every Send in progress; Close cancels
	// them with errBackendClosed.
	inflight map[*context.CancelCauseFunc]struct{}
}

// errBackendClosed is the cancellation cause of Sends cut short by Close.
var errBackendClosed = errors.New("hostproxy: backend closed")

// BackendOptions configures NewExtensionBackend and NewHostBridgeBackend.
type BackendOptions struct {
	// Timeout is the per-command timeout; 0 means the proxy's default.
	Timeout time.Duration
}

// NewExtensionBackend returns the extension backend for inv: it sends only to
// chrome-extension clients of inv's actor, to inv.TargetClientID when set, and
// offers the Vellum.* tab operations.
func (p *Proxy) NewExtensionBackend(inv browserbackend.Invocation, opts BackendOptions) *Backend {
	return p.newBackend(browserbackend.KindExtension, inv, RouteExtension, opts)
}

// NewHostBridgeBackend returns the host-bridge backend for inv: it sends only
// to desktop (non-extension) host_browser clients of inv's actor, never aims
// at a target client id and never sends Vellum.* methods (those fail with
// ErrNotSupported).
func (p *Proxy) NewHostBridgeBackend(inv browserbackend.Invocation, opts BackendOptions) *Backend {
	inv.TargetClientID = ""
	return p.newBackend(browserbackend.KindHostBridge, inv, RouteBridge, opts)
}

func (p *Proxy) newBackend(kind browserbackend.Kind, inv browserbackend.Invocation, route Route, opts BackendOptions) *Backend {
	return &Backend{p: p, kind: kind, inv: inv, route: route, timeout: opts.Timeout,
		inflight: make(map[*context.CancelCauseFunc]struct{})}
}

// target is the client a request is aimed at: the invocation's target client
// (extension), or the desktop client HostBridgeRule chose (host-bridge); ""
// lets PXY-2 choose.
func (b *Backend) target() string {
	if b.client != "" {
		return b.client
	}
	return b.inv.TargetClientID
}

// Kind returns KindExtension or KindHostBridge.
func (b *Backend) Kind() browserbackend.Kind { return b.kind }

// ClientID returns the client the backend is bound to, "" before the first
// Send.
func (b *Backend) ClientID() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.clientID
}

func (b *Backend) closedErr(method string) error {
	return &browserbackend.Error{Class: browserbackend.ClassClosed, Code: browserbackend.CodeClosed,
		Method: method, Backend: b.kind, Message: "backend is closed"}
}

// bind chooses the client on first use.
func (b *Backend) bind(req Req) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return "", b.closedErr(req.Method)
	}
	if b.clientID != "" {
		return b.clientID, nil
	}
	c, err := b.p.Choose(req)
	if err != nil {
		return "", err
	}
	b.clientID = c.ClientID
	b.listener, b.unlisten = b.p.listen(c.ClientID, b.inv.ConversationID, &b.bus)
	return b.clientID, nil
}

// Send implements browserbackend.ScopedClient: it sends cmd to the bound
// client and returns the CDP result, or an *browserbackend.Error classified as
// Proxy.Request documents. On host-bridge a Vellum.* method fails at once with
// ClassPolicy / CodeNotSupported. The returned result shares memory with the
// decoded result body (no copy of multi-MB screenshots): read it, copy it,
// but do not modify it in place.
func (b *Backend) Send(ctx context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
	if b.kind != browserbackend.KindExtension && wire.IsPseudoMethod(cmd.Method) {
		return nil, b.notSupported(cmd.Method)
	}
	req := Req{
		ConversationID: b.inv.ConversationID,
		Method:         cmd.Method,
		Params:         cmd.Params,
		SessionID:      cmd.SessionID,
		Timeout:        b.timeout,
		TargetClientID: b.target(),
		SourceActor:    b.inv.ActorPrincipalID,
		Route:          b.route,
		Backend:        b.kind,
	}
	clientID, err := b.bind(req)
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
		if b.claim(clientID, cmd.SessionID) {
			perr = b.probeTab(ctx, req)
		}
	case b.kind == browserbackend.KindHostBridge:
		perr = b.probePage(ctx, req)
	}
	if perr != nil {
		return nil, probeFailed(cmd.Method, perr)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if !b.track(&cancel, true) {
		return nil, b.closedErr(cmd.Method)
	}
	defer b.track(&cancel, false)
	res, err := b.p.Request(ctx, req)
	if err != nil && errors.Is(context.Cause(ctx), errBackendClosed) {
		return nil, b.closedErr(cmd.Method)
	}
	if err == nil {
		b.p.attr.learnResult(clientID, cmd.SessionID, cmd.Method, cmd.Params, res)
	}
	return res, err
}

// claim records that this backend's commands name owner (a tab id, target
// id or session id), so the client's events of that tab reach it (WIRE-4).
// It reports whether the claim is new.
func (b *Backend) claim(clientID, owner string) bool {
	b.mu.Lock()
	l := b.listener
	b.mu.Unlock()
	if l == nil {
		return false
	}
	if isTabID(owner) {
		return l.claim(owner)
	}
	// A child session's commands act in its tab: its events are this
	// backend's too. A target id is its tab's main frame id.
	if tab, ok := b.p.attr.get(clientID, attrSession, owner); ok {
		l.claim(tab)
	} else {
		b.p.attr.set(clientID, attrFrame, owner, owner)
	}
	return l.claim(owner)
}

// probePage asks a desktop bridge that has posted events which page its
// sessionless commands run on (Target.getTargetInfo, once per backend) and
// claims that target, so the bridge's events of the page, which name its
// target id, reach this backend and not another conversation's (WIRE-4).
// Before the client's first event there is nothing to keep apart. Best
// A failure is the call's: the page the command would run on is gone
// (the bridge answers target_not_found for a closed tab) or the bridge did
// not answer.
func (b *Backend) probePage(ctx context.Context, req Req) error {
	b.mu.Lock()
	done := b.probed
	b.probed = true
	b.mu.Unlock()
	if done {
		return nil
	}
	if _, seen := b.p.attr.get(req.TargetClientID, attrSeen, "-"); !seen {
		return nil
	}
	probe := req
	probe.Method, probe.Params = "Target.getTargetInfo", json.RawMessage(`{}`)
	res, err := b.p.Request(ctx, probe)
	if err != nil {
		return err
	}
	var info struct {
		TargetInfo struct {
			TargetID string `json:"targetId"`
		} `json:"targetInfo"`
	}
	if json.Unmarshal(res, &info) == nil && info.TargetInfo.TargetID != "" {
		b.claim(req.TargetClientID, info.TargetInfo.TargetID)
	}
	return nil
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
// first Page.navigate answer says it (WIRE-4). Best effort: a protocol
// error (a client that refuses the method) only leaves the tab's events to
// the other rules; a transport error is the call's (the command would meet
// it too).
func (b *Backend) probeTab(ctx context.Context, req Req) error {
	tab, client := req.SessionID, req.TargetClientID
	if !isTabID(tab) {
		return nil
	}
	if _, anon := b.p.attr.get(client, attrAnon, "-"); !anon {
		return nil
	}
	if _, done := b.p.attr.get(client, attrProbed, tab); done {
		return nil
	}
	b.p.attr.set(client, attrProbed, tab, tab)
	probe := req
	probe.Method, probe.Params = "Target.getTargetInfo", json.RawMessage(`{}`)
	res, err := b.p.Request(ctx, probe)
	if errors.Is(err, browserbackend.ErrTransport) {
		return err
	}
	if err == nil {
		b.p.attr.learnResult(client, tab, probe.Method, probe.Params, res)
	}
	return nil
}

// track adds (add true) or removes a Send's cancel; adding fails once the
// backend is closed.
func (b *Backend) track(cancel *context.CancelCauseFunc, add bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !add {
		delete(b.inflight, cancel)
		return true
	}
	if b.closed {
		return false
	}
	b.inflight[cancel] = struct{}{}
	return true
}

func (b *Backend) notSupported(method string) error {
	return &browserbackend.Error{Class: browserbackend.ClassPolicy, Code: browserbackend.CodeNotSupported,
		Method: method, Backend: b.kind,
		Message: fmt.Sprintf("%s is a tab operation only the extension backend supports", method)}
}

// Subscribe implements browserbackend.EventSource: events the bound client
// posts to /v1/host-browser-event, and session invalidations as
// Target.detachedFromTarget. Never blocks the routes.
func (b *Backend) Subscribe(method string) (<-chan browserbackend.Event, func()) {
	return b.bus.Subscribe(method)
}

// SubscribeBuffer implements browserbackend.BufferedEventSource: Subscribe with a
// channel of capacity buffer (0 or less: the default).
func (b *Backend) SubscribeBuffer(method string, buffer int) (<-chan browserbackend.Event, func()) {
	return b.bus.SubscribeBuffer(method, buffer)
}

// Close releases the backend: in-flight Sends fail with ClassClosed (their
// clients get a cancel), subscriptions close. It never touches the browser.
// Idempotent; returns nil.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	unlisten := b.unlisten
	inflight := b.inflight
	b.inflight = nil
	b.mu.Unlock()
	for cancel := range inflight {
		(*cancel)(errBackendClosed)
	}
	if unlisten != nil {
		unlisten()
	}
	b.bus.Close()
	return nil
}

var (
	_ browserbackend.ScopedClient = (*Backend)(nil)
	_ browserbackend.EventSource  = (*Backend)(nil)

	_ browserbackend.BufferedEventSource = (*Backend)(nil)
)
