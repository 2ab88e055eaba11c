package hostproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/browserchain/browserchain/browserbackend"
)

// Vellum.* pseudo-methods: tab operations implemented only by the chrome
// extension (PXY-6). Their params are JSON objects (see the helpers on
// Backend and doc.go).
const (
	MethodListTabs  = "Vellum.listTabs"
	MethodSelectTab = "Vellum.selectTab"
	MethodCloseTab  = "Vellum.closeTab"
	MethodCreateTab = "Vellum.createTab"
	MethodFindTab   = "Vellum.findTab"
	MethodAttach    = "Vellum.attach"
	MethodDetach    = "Vellum.detach"
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

	closeCtx  context.Context
	closeStop context.CancelFunc
	bus       browserbackend.EventBus

	mu       sync.Mutex
	clientID string
	unlisten func()
	closed   bool
}

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
	b := &Backend{p: p, kind: kind, inv: inv, route: route, timeout: opts.Timeout}
	b.closeCtx, b.closeStop = context.WithCancel(context.Background())
	return b
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
	b.unlisten = b.p.listen(c.ClientID, &b.bus)
	return b.clientID, nil
}

// Send implements browserbackend.ScopedClient: it sends cmd to the bound
// client and returns the CDP result, or an *browserbackend.Error classified as
// Proxy.Request documents. On host-bridge a Vellum.* method fails at once with
// ClassPolicy / CodeNotSupported. The returned result shares memory with the
// decoded result body (no copy of multi-MB screenshots): read it, copy it,
// but do not modify it in place.
func (b *Backend) Send(ctx context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
	if b.kind != browserbackend.KindExtension && IsPseudoMethod(cmd.Method) {
		return nil, b.notSupported(cmd.Method)
	}
	req := Req{
		ConversationID: b.inv.ConversationID,
		Method:         cmd.Method,
		Params:         cmd.Params,
		SessionID:      cmd.SessionID,
		Timeout:        b.timeout,
		TargetClientID: b.inv.TargetClientID,
		SourceActor:    b.inv.ActorPrincipalID,
		Route:          b.route,
		Backend:        b.kind,
	}
	clientID, err := b.bind(req)
	if err != nil {
		return nil, err
	}
	req.TargetClientID = clientID
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	unhook := context.AfterFunc(b.closeCtx, stop)
	defer unhook()
	res, err := b.p.Request(ctx, req)
	if err != nil && b.closeCtx.Err() != nil {
		return nil, b.closedErr(cmd.Method)
	}
	return res, err
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
	b.mu.Unlock()
	b.closeStop()
	if unlisten != nil {
		unlisten()
	}
	b.bus.Close()
	return nil
}

// Tab is one tab as the extension reports it in Vellum.listTabs (WIRE-3):
// {"tabId":<number>,"windowId","url","title","active","pinned"}. Vellum.findTab
// fills ID, URL and Title; Vellum.createTab ID only.
type Tab struct {
	ID       browserbackend.TabID `json:"tabId"`
	WindowID int                  `json:"windowId,omitempty"`
	URL      string               `json:"url,omitempty"`
	Title    string               `json:"title,omitempty"`
	Active   bool                 `json:"active,omitempty"`
	Pinned   bool                 `json:"pinned,omitempty"`
}

func (b *Backend) tabOp(ctx context.Context, method string, params any, out any) error {
	if b.kind != browserbackend.KindExtension {
		return b.notSupported(method)
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("hostproxy: %s params: %w", method, err)
	}
	res, err := b.Send(ctx, browserbackend.Command{Method: method, Params: raw})
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(res, out); err != nil {
		return &browserbackend.Error{Class: browserbackend.ClassProtocol, Code: browserbackend.CodeInvalidResponse,
			Method: method, Backend: b.kind, Dispatched: true, Message: "unexpected result shape", Err: err}
	}
	return nil
}

// ListTabs sends Vellum.listTabs {} and decodes {"tabs":[Tab…]}.
func (b *Backend) ListTabs(ctx context.Context) ([]Tab, error) {
	var out struct {
		Tabs []Tab `json:"tabs"`
	}
	err := b.tabOp(ctx, MethodListTabs, struct{}{}, &out)
	return out.Tabs, err
}

// SelectTab sends Vellum.selectTab {"tabId"}.
func (b *Backend) SelectTab(ctx context.Context, tabID browserbackend.TabID) error {
	return b.tabOp(ctx, MethodSelectTab, map[string]browserbackend.TabID{"tabId": tabID}, nil)
}

// CloseTab sends Vellum.closeTab {"tabId"}; the answer
// {"closed":true,"tabId","clientId"} carries nothing more.
func (b *Backend) CloseTab(ctx context.Context, tabID browserbackend.TabID) error {
	return b.tabOp(ctx, MethodCloseTab, map[string]browserbackend.TabID{"tabId": tabID}, nil)
}

// CreateTab sends Vellum.createTab {"url","active"} and decodes
// {"tabId":"<string>","clientId"} (WIRE-3). The real extension opens an
// active about:blank whatever it is given: navigate the tab afterwards. A
// answer without a tab id is a protocol error, code invalid_response.
func (b *Backend) CreateTab(ctx context.Context, url string, active bool) (Tab, error) {
	var out struct {
		TabID browserbackend.TabID `json:"tabId"`
	}
	if err := b.tabOp(ctx, MethodCreateTab, map[string]any{"url": url, "active": active}, &out); err != nil {
		return Tab{}, err
	}
	if out.TabID == 0 {
		return Tab{}, &browserbackend.Error{Class: browserbackend.ClassProtocol, Code: browserbackend.CodeInvalidResponse,
			Method: MethodCreateTab, Backend: b.kind, Dispatched: true, Message: "answer has no tabId"}
	}
	return Tab{ID: out.TabID, URL: "about:blank", Active: true}, nil
}

// FindTab sends Vellum.findTab {"urlPattern"} and decodes
// {"tabId":"<string>","url","title"} (WIRE-3); found is false when the
// answer names no tab or the client answers target_not_found.
func (b *Backend) FindTab(ctx context.Context, urlPattern string) (tab Tab, found bool, err error) {
	var out Tab
	err = b.tabOp(ctx, MethodFindTab, map[string]string{"urlPattern": urlPattern}, &out)
	if errors.Is(err, errTargetNotFound) {
		return Tab{}, false, nil
	}
	if err != nil || out.ID == 0 {
		return Tab{}, false, err
	}
	return out, true, nil
}

var errTargetNotFound = &browserbackend.Error{Code: browserbackend.CodeTargetNotFound}

// Attach sends Vellum.attach {"tabId"} (answer
// {"attached":true,"target":{"tabId"}}): later sessionless commands go to
// that tab.
func (b *Backend) Attach(ctx context.Context, tabID browserbackend.TabID) error {
	return b.tabOp(ctx, MethodAttach, map[string]browserbackend.TabID{"tabId": tabID}, nil)
}

// Detach sends Vellum.detach {"tabId"} (answer
// {"detached":true,"target":{"tabId"}}).
func (b *Backend) Detach(ctx context.Context, tabID browserbackend.TabID) error {
	return b.tabOp(ctx, MethodDetach, map[string]browserbackend.TabID{"tabId": tabID}, nil)
}

var (
	_ browserbackend.ScopedClient = (*Backend)(nil)
	_ browserbackend.EventSource  = (*Backend)(nil)
)
