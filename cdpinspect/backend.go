package cdpinspect

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	bb "github.com/browserchain/browserchain/browserbackend"
)

// Backend is a cdp-inspect connection to a user's browser: one
// browser-level WebSocket with one flat CDP session attached to a page
// target. It implements browserbackend.ScopedClient and
// browserbackend.EventSource, and is safe for concurrent use.
//
// Commands without a SessionID run on the attached page's session; a
// command with a SessionID is passed through as given (for example a
// Target.* command on the browser with a session the caller attached).
type Backend struct {
	c        *conn
	bus      bb.EventBus
	s        settings
	endpoint Endpoint

	mu        sync.Mutex // guards the three below (set while attaching)
	targetID  string
	sessionID string
	created   bool // the target was created by Dial and is closed by Close
	owned     bool // a Provider's conversation opened the tab (Tab().Owned)

	st        *pageState    // the page session's state; shared by the views of one conversation session
	resumed   chan struct{} // closed when the attach's runIfWaitingForDebugger ended; nil before (and on views)
	closed    atomic.Bool
	closeOnce sync.Once

	// Set on a view of a Provider's shared connection (nil on a Backend
	// that owns its socket): see shared.go.
	shared      *sharedConn
	closing     context.Context // cancelled by Close: ends the view's commands in flight
	stopClosing context.CancelFunc
	done        chan struct{} // closed by Close or when the shared connection ends
	doneOnce    sync.Once
	// tabClosed, set on a view of a conversation's remembered tab, makes
	// the Provider forget that tab once a command finds it closed; tabGone
	// records that a command did, so later ones fail without asking again.
	tabClosed func(targetID string)
	tabGone   atomic.Bool
}

// pageState is what the connection learnt about a page session: it went
// away, or its renderer crashed. A Provider keeps one per conversation
// session, shared by every Backend (view) of that session.
type pageState struct {
	detached atomic.Bool // the page session went away
	crashed  atomic.Bool // the page's renderer crashed (Inspector.targetCrashed)
	dialog   bb.DialogState
}

// observe updates st from an event of the connection about sessionID (the
// page session st describes).
func (st *pageState) observe(f frame, sessionID string) {
	if f.SessionID != "" && f.SessionID == sessionID {
		st.dialog.Observe(f.Method, f.Params)
		switch f.Method {
		case methodTargetCrashed:
			st.crashed.Store(true)
		case methodTargetReloaded: // the user reloaded the crashed tab
			st.crashed.Store(false)
		}
	}
}

var (
	_ bb.ScopedClient = (*Backend)(nil)
	_ bb.EventSource  = (*Backend)(nil)

	_ bb.BufferedEventSource = (*Backend)(nil)
	_ bb.DialogWatcher       = (*Backend)(nil)
)

// Dial discovers the browser of cfg (see Discover), opens its browser
// WebSocket, and attaches a flat session (Target.attachToTarget with
// flatten: true) to a page target: the first "page" target whose URL is not
// a DevTools, extension or other browser-internal page, or — when there is
// none and WithCreateTarget is on (default) — a new about:blank tab. It then
// resumes the target if it waits for a debugger
// (Runtime.runIfWaitingForDebugger).
//
// Errors are *browserbackend.Error of ClassTransport (with the discovery
// code, or no_targets), ClassAborted or ClassTimeout for ctx. Dial leaves
// nothing open when it fails.
func Dial(ctx context.Context, cfg Config, opts ...Option) (*Backend, error) {
	s := newSettings(opts)
	s.probeTimeout = probeTimeout(cfg)
	return dial(ctx, cfg, s)
}

func dial(ctx context.Context, cfg Config, s settings) (*Backend, error) {
	ep, err := discover(ctx, cfg, &s)
	if err != nil {
		return nil, err
	}
	return dialEndpoint(ctx, ep, s)
}

// dialEndpoint connects to the discovered browser ep and attaches (see
// Dial; s.tab chooses the target).
func dialEndpoint(ctx context.Context, ep Endpoint, s settings) (*Backend, error) {
	b := &Backend{s: s, endpoint: ep, st: &pageState{}}
	c, err := dialConn(ctx, ep, &b.s, b.onFrame, b.onEnd)
	if err != nil {
		return nil, err
	}
	b.c = c
	if err := b.attach(ctx); err != nil {
		b.closed.Store(true)
		c.close(&bb.Error{Class: bb.ClassClosed, Code: bb.CodeClosed, Backend: bb.KindCDPInspect, Message: "dial failed"})
		b.bus.Close()
		return nil, constructionErr(err)
	}
	s.logger.Debug("cdpinspect: connected to browser", "source", string(ep.Source), "endpoint", hostPort(ep.BrowserWSURL),
		"createdTarget", b.CreatedTarget())
	return b, nil
}

// hostPort returns the host:port of a WebSocket URL, for logs (the path is
// a capability and is never logged).
func hostPort(wsURL string) string {
	u, err := url.Parse(wsURL)
	if err != nil {
		return ""
	}
	return u.Host
}

// constructionErr makes an attach failure a transport error (safe to fail
// over: nothing the caller asked for was sent), unless the caller cancelled.
func constructionErr(err error) error {
	e, ok := err.(*bb.Error)
	if !ok {
		return bb.TransportError(bb.CodeTransportError, "attach failed", err)
	}
	if e.Class == bb.ClassAborted || e.Class == bb.ClassTransport || e.Code == bb.CodeTargetNotFound {
		// target_not_found: the conversation's own tab is gone; failing
		// over would act in another browser without saying so.
		return e
	}
	c := *e
	c.Class, c.Dispatched = bb.ClassTransport, false
	c.Message = "attach failed: " + c.Message
	return &c
}

// targetInfo is the part of CDP Target.TargetInfo that Dial and the tab
// list read.
type targetInfo struct {
	TargetID string `json:"targetId"`
	Type     string `json:"type"`
	URL      string `json:"url"`
	Title    string `json:"title"`
	OpenerID string `json:"openerId"`
}

// eligiblePageURL reports whether a page target is a real page to drive: not
// DevTools, an extension page, or another browser-internal page (the new-tab
// page is fine).
func eligiblePageURL(u string) bool {
	for _, p := range []string{"devtools://", "chrome-extension://", "chrome-untrusted://", "chrome-search://"} {
		if strings.HasPrefix(u, p) {
			return false
		}
	}
	if strings.HasPrefix(u, "chrome://") {
		return strings.HasPrefix(u, "chrome://newtab") || strings.HasPrefix(u, "chrome://new-tab-page")
	}
	return true
}

// createPage opens a foreground page target (a background one in a headful
// Chrome produces no frames, so screenshots and rAF-driven pages would
// stall), in the conversation's browser context when it has one, and
// records it as the backend's own.
func (b *Backend) createPage(ctx context.Context) (string, error) {
	create := map[string]any{"url": "about:blank", "background": false}
	if b.s.tab.browserContextID != "" {
		create["browserContextId"] = b.s.tab.browserContextID
	}
	params, _ := json.Marshal(create)
	raw, err := b.c.call(ctx, "Target.createTarget", params, "")
	if err != nil {
		return "", b.transportErr(bb.CodeNoTargets, "Target.createTarget", "no page target, and opening one failed", err)
	}
	var created struct {
		TargetID string `json:"targetId"`
	}
	if err := json.Unmarshal(raw, &created); err != nil || created.TargetID == "" {
		return "", b.transportErr(bb.CodeNoTargets, "Target.createTarget", "no page target, and opening one failed", err)
	}
	b.mu.Lock()
	b.targetID, b.created = created.TargetID, true
	b.mu.Unlock()
	return created.TargetID, nil
}

// attach picks or creates the page target and attaches a flat session.
func (b *Backend) attach(ctx context.Context) error {
	ctx, cancel := withDeadline(ctx, b.s.commandTimeout)
	defer cancel()
	raw, err := b.c.call(ctx, "Target.getTargets", nil, "")
	if err != nil {
		return err
	}
	var list struct {
		TargetInfos []targetInfo `json:"targetInfos"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return b.transportErr(bb.CodeInvalidResponse, "Target.getTargets", "malformed target list", err)
	}
	var targetID string
	switch {
	case b.s.tab.targetID != "":
		// The conversation's remembered tab, and no other (it may have
		// moved anywhere in the list).
		for _, t := range list.TargetInfos {
			if t.Type == "page" && t.TargetID == b.s.tab.targetID {
				targetID = t.TargetID
				break
			}
		}
		if targetID == "" {
			return tabClosedErr(b.s.tab.targetID)
		}
	case b.s.tab.open:
	default:
		for _, t := range list.TargetInfos {
			if t.Type == "page" && eligiblePageURL(t.URL) && !b.s.tab.exclude[t.TargetID] {
				targetID = t.TargetID
				break
			}
		}
	}
	if targetID == "" {
		if !b.s.createTarget && !b.s.tab.open {
			return b.transportErr(bb.CodeNoTargets, "Target.getTargets", "the browser has no page target to attach to", nil)
		}
		if targetID, err = b.createPage(ctx); err != nil {
			return err
		}
	}
	b.mu.Lock()
	b.targetID = targetID
	b.mu.Unlock()
	params, _ := json.Marshal(map[string]any{"targetId": targetID, "flatten": true})
	raw, err = b.c.call(ctx, "Target.attachToTarget", params, "")
	if err != nil {
		b.closeCreated()
		if e, ok := err.(*bb.Error); ok && e.Class == bb.ClassProtocol && b.s.tab.targetID != "" {
			return tabClosedErr(b.s.tab.targetID) // closed between the list and the attach
		}
		return err
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(raw, &att); err != nil || att.SessionID == "" {
		b.closeCreated()
		return b.transportErr(bb.CodeInvalidResponse, "Target.attachToTarget", "no sessionId in the reply", err)
	}
	b.mu.Lock()
	b.sessionID = att.SessionID
	b.mu.Unlock()
	// Resume a target that waits for the debugger, without waiting for the
	// answer: Runtime is served by the renderer, and a tab whose renderer
	// crashed queues it until a navigation brings a renderer back — waiting
	// here would keep the conversation from ever sending that navigation.
	// Commands on a session run in order, so a paused target is resumed
	// before the caller's first command reaches it.
	resumed := make(chan struct{}) // the goroutine's own: a view hands b.resumed to its session
	b.resumed = resumed
	go func() {
		defer close(resumed)
		rctx, cancel := context.WithTimeout(context.Background(), b.s.commandTimeout)
		defer cancel()
		_, _ = b.c.call(rctx, "Runtime.runIfWaitingForDebugger", nil, att.SessionID)
		// Page events on from here on, for as long as the session lives:
		// a dialog the page opens between calls is seen (OpenDialog).
		_, _ = b.c.call(rctx, "Page.enable", nil, att.SessionID)
	}()
	b.probeCrashed(ctx, att.SessionID)
	return nil
}

// probeCrashed finds out whether the attached tab's renderer is dead (it
// crashed before this Backend attached): Inspector.enable is served by the
// browser, and on a crashed target Chrome sends Inspector.targetCrashed
// before its reply, which fails the call with target_crashed (readLoop).
// Such a tab is then lost until a Page.navigate revives it (see Send),
// instead of queueing every command until the deadline. Other failures are
// left to the caller's first command.
func (b *Backend) probeCrashed(ctx context.Context, sessionID string) {
	_, err := b.c.call(ctx, methodInspectorEnable, nil, sessionID)
	if e, ok := err.(*bb.Error); ok && e.Code == bb.CodeTargetCrashed {
		b.st.crashed.Store(true)
	}
}

// closeCreated closes the target Dial created, if any (best effort).
func (b *Backend) closeCreated() {
	b.mu.Lock()
	created, targetID := b.created, b.targetID
	b.created = false
	b.mu.Unlock()
	if !created {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	params, _ := json.Marshal(map[string]string{"targetId": targetID})
	_, _ = b.c.call(ctx, "Target.closeTarget", params, "")
}

// closeTarget closes targetID on the browser connection (best effort).
func (b *Backend) closeTarget(ctx context.Context, targetID string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	params, _ := json.Marshal(map[string]string{"targetId": targetID})
	_, _ = b.c.call(ctx, "Target.closeTarget", params, "")
}

// transportErr builds an attach-stage transport error; no_targets is also a
// discovery outcome and sets Detail.
func (b *Backend) transportErr(code, method, msg string, cause error) *bb.Error {
	e := &bb.Error{Class: bb.ClassTransport, Code: code, Method: method, Backend: bb.KindCDPInspect, Message: "attach: " + msg, Err: cause}
	if code == bb.CodeNoTargets {
		e.Detail = code
	}
	return e
}

// onFrame runs on the reader goroutine for every event. It publishes the
// event (never blocking) and notes when the page session went away.
func (b *Backend) onFrame(f frame) {
	ev := bb.Event{Method: f.Method, Params: f.Params, SessionID: f.SessionID}
	b.st.observe(f, b.SessionID())
	if f.Method == bb.MethodTargetDetached {
		// Chrome sends Target.detachedFromTarget on the parent (browser)
		// connection with the detached session in params; the EventSource
		// contract puts that session in Event.SessionID.
		var p struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(f.Params, &p) == nil && p.SessionID != "" {
			ev.SessionID = p.SessionID
			if p.SessionID == b.SessionID() {
				b.st.detached.Store(true)
			}
		}
	}
	b.bus.Publish(ev)
}

// onEnd runs on the reader goroutine when the socket is gone. Unless Close
// caused it, subscribers first learn that the page session went away (a
// synthetic Target.detachedFromTarget), then their channels close.
func (b *Backend) onEnd() {
	if sid := b.SessionID(); sid != "" && !b.closed.Load() && !b.st.detached.Swap(true) {
		params, _ := json.Marshal(map[string]string{"sessionId": sid, "targetId": b.TargetID()})
		b.bus.Publish(bb.Event{Method: bb.MethodTargetDetached, Params: params, SessionID: sid})
	}
	b.bus.Close()
}

// Send implements browserbackend.ScopedClient. A command without SessionID
// runs on the attached page's session; one with
// browserbackend.BrowserSessionID runs on the connection's root (browser)
// session, whose events Subscribe delivers with an empty SessionID (on a
// Provider's shared connection Target.setAutoAttach there is counted per
// connection, and auto-attached sessions are routed to the view whose page
// opened their target: see the package doc). When ctx has no deadline, the
// command timeout (default 30 s) applies.
//
// A tab whose renderer crashed (under a command, or before the Backend
// attached) is lost until a Page.navigate, which Chrome serves by giving the
// tab a new renderer: that command (and the Target domain, which the browser
// process serves) is sent, and every other command on the page session fails
// at once, before dispatch, with ClassClosed and code
// page_lost (the tab's content is gone; navigate again) instead of waiting
// for its deadline.
//
// Errors: ClassProtocol with the JSON-RPC code for a CDP error reply;
// ClassTransport when the socket fails or was lost (in-flight commands fail
// at once, Dispatched true), with code target_crashed for the commands in
// flight when the page's renderer crashed, or with code
// cdp_session_not_found when the page session went away (its tab was
// closed) — on a Provider's Backend whose conversation's remembered tab
// the browser no longer has, ClassProtocol with code target_not_found
// instead (Dispatched says whether the command was sent), as its Build
// would have failed (the next Build opens a new tab);
// ClassClosed with code page_lost (above); ClassTimeout when the
// deadline passes after dispatch; ClassAborted when ctx is cancelled;
// ClassClosed after Close; ClassPolicy for params that are not JSON.
func (b *Backend) Send(ctx context.Context, cmd bb.Command) (json.RawMessage, error) {
	if b.closed.Load() {
		return nil, b.closedErr(cmd.Method)
	}
	sid := cmd.SessionID
	switch sid {
	case bb.BrowserSessionID:
		sid = "" // the connection's root session: the browser target
	case "":
		if b.st.detached.Load() {
			return nil, b.sessionGone(ctx, cmd.Method, sessionGoneErr(cmd.Method))
		}
		if b.st.crashed.Load() && !answeredWhenCrashed(cmd.Method) {
			return nil, pageLostErr(cmd.Method)
		}
		if e := b.st.dialog.Blocked(bb.KindCDPInspect, cmd.Method); e != nil {
			return nil, e
		}
		sid = b.SessionID()
	}
	ctx, cancel := withDeadline(ctx, b.s.commandTimeout)
	defer cancel()
	if b.closing != nil {
		// A view: its Close ends its commands in flight (the shared socket
		// stays open for the other views).
		vctx, vcancel := context.WithCancel(ctx)
		defer vcancel()
		defer context.AfterFunc(b.closing, vcancel)()
		ctx = vctx
	}
	var res json.RawMessage
	var err error
	if b.shared != nil && cmd.SessionID == bb.BrowserSessionID && cmd.Method == "Target.setAutoAttach" {
		res, err = b.shared.setAutoAttach(ctx, b, cmd.Params) // counted per shared connection
	} else {
		res, err = b.c.call(ctx, cmd.Method, cmd.Params, sid)
	}
	if err == nil && cmd.Method == methodPageNavigate && sid == b.SessionID() {
		b.st.crashed.Store(false) // the navigation gave the tab a new renderer
	}
	if e, ok := err.(*bb.Error); ok && cmd.SessionID == "" && !b.closed.Load() &&
		(e.CDPCode == cdpSessionNotFound || e.Code == bb.CodeSessionNotFound) {
		// Chrome's own reply (the session was gone before the command
		// arrived), or the detach failing the command in flight — which
		// may equally have been sent after the tab closed, if the detach
		// reached this socket after the send: either way, ask.
		return nil, b.sessionGone(ctx, cmd.Method, e)
	}
	if err != nil && b.closed.Load() {
		if e, ok := err.(*bb.Error); ok && (e.Class == bb.ClassTransport || e.Class == bb.ClassAborted) {
			ce := b.closedErr(cmd.Method)
			ce.Dispatched = e.Dispatched
			return nil, ce
		}
	}
	return res, err
}

// sessionGoneErr is the error of a command whose page session went away.
func sessionGoneErr(method string) *bb.Error {
	return &bb.Error{Class: bb.ClassTransport, Code: bb.CodeSessionNotFound, Method: method,
		Backend: bb.KindCDPInspect, Message: "the page session went away (tab closed or target detached)"}
}

// cdpSessionNotFound is Chrome's JSON-RPC error code for a command on a
// session it does not have.
const cdpSessionNotFound = -32001

// sessionGone is the error of a command of method whose page session went
// away before or while the command was sent (gone). On a view of a
// conversation's remembered tab it asks the browser whether the tab still
// exists (one Target.getTargetInfo): when it does not, the user closed
// it — possibly before the command, the Build that handed out the session
// not having heard the detach yet (the event can arrive after the Build,
// after the command was sent, or after another client saw the tab
// close) — and the command fails as a Build would have: ClassProtocol,
// target_not_found, the tab forgotten so that the next call opens a new
// one. Otherwise, or when the browser does not answer, gone is returned.
func (b *Backend) sessionGone(ctx context.Context, method string, gone *bb.Error) error {
	target := b.TargetID()
	if b.tabClosed == nil || target == "" {
		return gone
	}
	if !b.tabGone.Load() {
		params, _ := json.Marshal(map[string]string{"targetId": target})
		_, err := b.c.call(ctx, "Target.getTargetInfo", params, "")
		if e, ok := err.(*bb.Error); !ok || e.Class != bb.ClassProtocol {
			return gone // alive, or no answer: nothing known
		}
		if !b.tabGone.Swap(true) {
			b.tabClosed(target)
		}
	}
	e := tabClosedErr(target)
	e.Method, e.Dispatched = method, gone.Dispatched
	return e
}

func (b *Backend) closedErr(method string) *bb.Error {
	return &bb.Error{Class: bb.ClassClosed, Code: bb.CodeClosed, Method: method, Backend: bb.KindCDPInspect, Message: "backend closed"}
}

// waitDetached waits until the page session's detach event arrives on
// events, or ctx ends, or the stream closes.
func (b *Backend) waitDetached(ctx context.Context, events <-chan bb.Event) {
	if b.st.detached.Load() {
		return
	}
	sid := b.SessionID()
	for {
		select {
		case ev, ok := <-events:
			if !ok || ev.SessionID == sid {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// Subscribe implements browserbackend.EventSource: every CDP event of the
// connection (the page session's and browser-level ones) with its
// sessionId. Target.detachedFromTarget carries the detached session in
// SessionID. Channels close when the backend closes or the socket is lost.
func (b *Backend) Subscribe(method string) (<-chan bb.Event, func()) {
	return b.bus.Subscribe(method)
}

// SubscribeBuffer implements browserbackend.BufferedEventSource: Subscribe
// with a channel of capacity buffer (≤ 0: browserbackend.DefaultEventBuffer).
// A Selector Client's own detach watch asks for a small one, so a tool call
// does not allocate a full-size event buffer it never fills.
func (b *Backend) SubscribeBuffer(method string, buffer int) (<-chan bb.Event, func()) {
	return b.bus.SubscribeBuffer(method, buffer)
}

// Endpoint returns where the browser was found.
func (b *Backend) Endpoint() Endpoint { return b.endpoint }

// SessionID returns the flat session attached to the page target.
func (b *Backend) SessionID() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sessionID
}

// TargetID returns the page target the session is attached to.
func (b *Backend) TargetID() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.targetID
}

// Tab implements browserbackend.TabScoped: the page target the Backend is
// attached to; Owned is set for a tab a Provider's conversation opened.
func (b *Backend) Tab() bb.Tab {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bb.Tab{ID: b.targetID, Owned: b.owned || b.created}
}

// OpenDialog implements browserbackend.DialogWatcher: the JavaScript dialog
// open on the attached tab, as its session's Page events report it.
func (b *Backend) OpenDialog() (bb.Dialog, bool) { return b.st.dialog.Open() }

// CreatedTarget reports whether Close will close the page target: Dial
// opened it for this Backend alone. A Backend that a Provider built for a
// conversation reports false: the conversation's tab outlives the
// invocation and is closed by Provider.ReleaseConversation.
func (b *Backend) CreatedTarget() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.created
}

// Lost reports whether the browser connection has ended: the socket was
// lost, or Close closed it (on a view of a Provider's shared connection,
// the shared socket; a view's own Close leaves it false). It is true
// before the synthetic
// Target.detachedFromTarget of a lost connection is published, so an
// event handler can tell a page that went away (Lost false) from a
// browser connection that did. Safe for concurrent use.
func (b *Backend) Lost() bool { return b.c.lost() }

// Done is closed when the browser connection has ended (socket lost or
// Close). On a Backend that a Provider built on its shared connection, it
// is closed by this Backend's Close or when the shared connection ends.
func (b *Backend) Done() <-chan struct{} {
	if b.done != nil {
		return b.done
	}
	return b.c.done
}

// Close detaches from the page (Target.detachFromTarget), or closes the
// page when Dial created it, then drops the WebSocket (the browser and
// every tab it did not create stay open). In-flight and later Sends
// fail with ClassClosed; event channels close. Idempotent; always returns
// nil (the browser is the user's, and a failed detach ends with the socket
// anyway).
//
// A Backend a Provider built is a view of the Provider's shared connection:
// its Close fails only its own in-flight and later Sends with ClassClosed
// and closes its event channels; the socket and the conversation's session
// (and tab) stay for the conversation's next invocation. Only the tab of an
// invocation without a conversation is closed.
func (b *Backend) Close() error {
	if b.shared != nil {
		b.closeOnce.Do(b.closeView)
		return nil
	}
	b.closeOnce.Do(func() {
		b.closed.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		if b.CreatedTarget() {
			// Wait for the session's detach as well, so the tab is gone
			// when Close returns.
			detached, stop := b.bus.Subscribe(bb.MethodTargetDetached)
			params, _ := json.Marshal(map[string]string{"targetId": b.TargetID()})
			if _, err := b.c.call(ctx, "Target.closeTarget", params, ""); err == nil {
				b.waitDetached(ctx, detached)
			}
			stop()
		} else if !b.st.detached.Load() {
			params, _ := json.Marshal(map[string]string{"sessionId": b.SessionID()})
			_, _ = b.c.call(ctx, "Target.detachFromTarget", params, "")
		}
		cancel()
		b.c.close(b.closedErr(""))
		if b.resumed != nil {
			<-b.resumed // the closed connection has failed it
		}
		b.bus.Close()
	})
	return nil
}
