package cdpinspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	bb "github.com/browserchain/browserchain/browserbackend"
)

// Candidate reasons of the provider. Desktop-auto reasons start with
// "desktopAuto:", which is what marks a candidate as cooldown-eligible in the
// seed.
const (
	ReasonPinned      = "pinned: cdp-inspect requested"
	ReasonConfigured  = "configured: cdpInspect.enabled"
	ReasonDesktopAuto = "desktopAuto: macos turn"
)

// CooldownKey is the key of the desktop-auto cdp-inspect cooldown.
const CooldownKey = "desktop-auto"

// Provider proposes the cdp-inspect candidate. It never touches the network
// in Propose: the candidate's Build discovers and dials, its Probe only
// discovers.
//
// Builds share one browser WebSocket per Provider and keep one flat CDP
// session per conversation on it (see the package doc and WithIdleTimeout):
// a Build of a conversation whose session is attached sends nothing, and
// its Backend's Close leaves the socket and the session open for the next
// invocation (ConnStats counts them; Close closes the socket). A
// conversation always works in the same tab, remembered by its CDP target
// id:
//   - the first call of a conversation opens a tab of the agent's own
//     (Target.createTarget about:blank, in the foreground); it adopts a
//     user tab only when the invocation asks (browserbackend.TabActive),
//     and never a tab another conversation remembers; TabNew opens another
//     tab of its own, closing the one it replaces;
//   - every later call attaches to exactly that target id. When it is gone
//     (the user closed it) the call fails with a ClassProtocol
//     *browserbackend.Error of code target_not_found (no failover, nothing
//     sent to any page) and the conversation is forgotten, so its next call
//     opens a new tab;
//   - ReleaseConversation with close closes the tab the agent opened
//     (never a user tab).
//
// The memory is keyed by conversation and browser run (the browser
// WebSocket URL, whose id a restarted browser changes), bounded to
// WithMaxConversations entries (LRU). An invocation without a
// ConversationID gets a tab of its own that its Close closes again.
//
// Safe for concurrent use; concurrent first calls of one conversation open
// one tab.
type Provider struct {
	cfg  Config
	opts []Option
	base settings // opts applied to the defaults; settings() hands out copies
	tabs *tabRegistry

	mu      sync.Mutex
	sc      *sharedConn   // the shared browser connection; nil or ended: the next Build dials
	closed  bool          // Close ran
	dialing chan struct{} // one slot: one Build discovers and dials at a time
	dials   atomic.Int64
	last    *bb.InFlight // the tracker of the last connection a Build opened; nil before one
	// contexts are the conversations' browser contexts
	// (WithIsolatedContexts), by browser run and conversation.
	contexts map[tabKey]string
}

var _ bb.Provider = (*Provider)(nil)

// NewProvider returns the cdp-inspect provider for cfg (normally
// DefaultConfig or LoadConfig's result). opts apply to every Build and Probe
// (WithWebSocketURL, WithUserDataDirs, WithLogger, …).
func NewProvider(cfg Config, opts ...Option) *Provider {
	opts = append([]Option(nil), opts...)
	base := newSettings(opts)
	base.probeTimeout = probeTimeout(cfg)
	return &Provider{cfg: cfg, opts: opts, base: base, tabs: newTabRegistry(base.maxConvs), dialing: make(chan struct{}, 1),
		contexts: map[tabKey]string{}}
}

// Describe declares the cdp-inspect kind: browser_mode "cdp-inspect" (alias
// "cdp-debugger"), transport label "cdp-ws", and remediation that names the
// configured host and port.
func (p *Provider) Describe() bb.Descriptor {
	d := Descriptor(p.cfg)
	if p.base.isolated {
		d.Caps |= bb.CapIsolated
	}
	return d
}

// Descriptor returns the cdp-inspect descriptor for cfg (see
// Provider.Describe).
func Descriptor(cfg Config) bb.Descriptor {
	return bb.Descriptor{
		Kind:        bb.KindCDPInspect,
		Mode:        "cdp-inspect",
		Aliases:     []string{"cdp-debugger"},
		Transport:   "cdp-ws",
		Caps:        bb.CapTabs | bb.CapHoldTargets | bb.CapDialogs,
		Remediation: func(a bb.Attempt) []string { return remediation(cfg, a) },
	}
}

// remediation is the checklist for a failed cdp-inspect attempt, written from
// the configuration in force so that it names the real host and port.
func remediation(cfg Config, a bb.Attempt) []string {
	code := a.Code
	if a.Detail != "" {
		code = a.Detail
	}
	addr := cfg.Addr()
	switch code {
	case bb.CodeNotConfigured:
		return []string{
			"cdp-inspect is off for this turn: turn it on (the -cdp-inspect flag of examples/mcp and examples/server), use a macos turn with desktop-auto on, or pin browser_mode \"cdp-inspect\".",
			fmt.Sprintf("It connects to a Chrome started with --remote-debugging-port=%d on %s.", cfg.Port, cfg.Host),
		}
	case bb.CodeNonLoopback:
		return []string{fmt.Sprintf("cdp-inspect only connects to this machine, but its host is %q: use localhost or 127.0.0.1.", cfg.Host)}
	case bb.CodeNonChrome, bb.CodeInvalidResponse:
		return []string{fmt.Sprintf("Something other than Chrome answers on %s: give cdp-inspect Chrome's DevTools port (the -cdp-port flag), or free the port for Chrome.", addr)}
	case bb.CodeUnresponsive:
		return []string{fmt.Sprintf("Chrome on %s did not answer within %v: check that it is not hung.", addr, cfg.ProbeTimeout())}
	case bb.CodeNoTargets:
		return []string{fmt.Sprintf("Chrome on %s has no page open that can be attached to: open a tab.", addr)}
	case bb.CodeCooldown:
		return []string{"cdp-inspect failed moments ago and is cooling down; retry after the cooldown or pin browser_mode \"cdp-inspect\"."}
	}
	return []string{
		fmt.Sprintf("Start Chrome with --remote-debugging-port=%d (and a dedicated --user-data-dir), or enable remote debugging at chrome://inspect/#remote-debugging.", cfg.Port),
		fmt.Sprintf("Nothing answered on %s: check that cdp-inspect's port (the -cdp-port flag) matches the running Chrome.", addr),
	}
}

// Rule is the selection rule for cdp-inspect as a pure function of the
// configuration, the invocation and the cooldowns; it returns the candidate
// without Build or Probe:
//   - a pinned invocation (env.Pinned) always gets the candidate, without a
//     cooldown key;
//   - cdpInspect.enabled gives it to every invocation, reason
//     "configured: cdpInspect.enabled", without a cooldown key (an explicitly
//     enabled cdp-inspect is never cooled down);
//   - a "macos" turn with desktopAuto.enabled gets a desktop-auto candidate
//     (reason "desktopAuto: …") carrying CooldownKey and CooldownFor
//     desktopAuto.cooldownMs — unless that cooldown is active, which is a
//     skip with code browserbackend.CodeCooldown;
//   - anything else is a skip with code browserbackend.CodeNotConfigured.
func Rule(cfg Config, inv bb.Invocation, env bb.Env) (bb.Candidate, error) {
	c := bb.Candidate{Kind: bb.KindCDPInspect}
	switch {
	case env.Pinned:
		c.Reason = ReasonPinned
	case cfg.Enabled:
		c.Reason = ReasonConfigured
	case inv.InterfaceID == wire.InterfaceMacOS && cfg.DesktopAuto.Enabled:
		if env.Cooldowns != nil {
			if left := env.Cooldowns.Remaining(CooldownKey); left > 0 {
				return bb.Candidate{}, bb.Skip(bb.CodeCooldown,
					fmt.Sprintf("desktop-auto cdp-inspect skipped (cooldown active, %v left)", left.Round(time.Millisecond)))
			}
		}
		c.Reason, c.CooldownKey, c.CooldownFor = ReasonDesktopAuto, CooldownKey, cfg.DesktopAuto.Cooldown()
	case inv.InterfaceID == wire.InterfaceMacOS:
		return bb.Candidate{}, bb.Skip(bb.CodeNotConfigured, "cdpInspect.enabled is off and desktopAuto.enabled is off")
	default:
		return bb.Candidate{}, bb.Skip(bb.CodeNotConfigured,
			fmt.Sprintf("cdpInspect.enabled is off and the turn's interface %q is not macos", inv.InterfaceID))
	}
	return c, nil
}

// Propose applies Rule and attaches the Build (discover and dial) and Probe
// (discover only) of the configuration.
func (p *Provider) Propose(inv bb.Invocation, env bb.Env) (bb.Candidate, error) {
	c, err := Rule(p.cfg, inv, env)
	if err != nil {
		return bb.Candidate{}, err
	}
	cfg := p.cfg
	conv, req := inv.ConversationID, inv.Tab
	c.Build = func(ctx context.Context) (bb.ScopedClient, error) {
		b, err := p.build(ctx, conv, req)
		if err := p.built(ctx, b, err); err != nil {
			return nil, err
		}
		return b, nil
	}
	c.Probe = func(ctx context.Context) error {
		_, err := Probe(ctx, cfg, p.opts...)
		return err
	}
	return c, nil
}

// DialConversation discovers the browser and attaches to conversationID's
// tab as a Build of this Provider does for an invocation asking for req,
// without a selector: the desktop bridge gives each conversation its tab
// this way. The returned Backend's Close leaves the tab open
// (ReleaseConversation closes it). An empty conversationID gets a tab that
// Close closes. Errors are Build's. Safe for concurrent use.
//
// A deadline that passes while Build waits (for the conversation's tab
// lock, discovery, the WebSocket or the attach) is ClassTimeout, not
// dispatched, and says that the command was never sent and what the Build
// was doing (connecting, or waiting for the conversation's tab while
// another call of the conversation held it); its Diagnostics are those of
// the attach commands when one was waiting, else those of the shared
// connection when a Build waited for the tab while it was up, else the
// provider's: nothing in flight, no connection up, and the time since the
// last connection this Provider opened answered.
func (p *Provider) DialConversation(ctx context.Context, conversationID string, req bb.TabRequest) (*Backend, error) {
	b, err := p.dialOwn(ctx, conversationID, req)
	if err := p.built(ctx, b, err); err != nil {
		return nil, err
	}
	return b, nil
}

// built finishes a Build or DialConversation that returned b, err: a
// failure goes through notSent; a success remembers b's connection for the
// diagnostics of a later one.
func (p *Provider) built(ctx context.Context, b *Backend, err error) error {
	if err != nil {
		return p.notSent(ctx, err)
	}
	p.mu.Lock()
	p.last = b.c.track
	p.mu.Unlock()
	return nil
}

// tabBusy marks a Build that ended while it waited for its conversation's
// tab (another call of the conversation holds it); notSent removes it.
type tabBusy struct{ error }

func (b tabBusy) Unwrap() error { return b.error }

// notSent turns a Build failure at ctx's deadline into the timeout of a
// command never sent (see DialConversation); other failures are returned
// as they are.
func (p *Provider) notSent(ctx context.Context, err error) error {
	var busy tabBusy
	waited := errors.As(err, &busy)
	if waited {
		err = busy.error
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return err
	}
	e := ctxErr(ctx, "", false)
	if waited {
		// Another call of the conversation held its tab until the
		// deadline: the state of the connection it works on, when it is
		// the shared one and up, says what that call is waiting for.
		e.Message += ", waiting for the conversation's tab, which another call of the conversation holds"
		p.mu.Lock()
		sc := p.sc
		p.mu.Unlock()
		if sc != nil && sc.live() {
			e.Diagnostics = sc.c.track.Diagnostics()
			return e
		}
	} else {
		e.Message += ", connecting to the browser"
	}
	for cause := err; cause != nil; cause = errors.Unwrap(cause) {
		if inner, ok := cause.(*bb.Error); ok && inner.Diagnostics != nil {
			// An attach command was waiting: its connection's state.
			if inner.Method != "" {
				e.Message += " (" + inner.Method + " unanswered)"
			}
			e.Diagnostics = inner.Diagnostics
			return e
		}
	}
	e.Diagnostics = &bb.Diagnostics{}
	p.mu.Lock()
	last := p.last
	p.mu.Unlock()
	if last != nil {
		if at := last.LastAnswer(); !at.IsZero() {
			now := time.Now
			if s := p.settings(); s.now != nil {
				now = s.now
			}
			e.Diagnostics.SinceLastAnswer = now().Sub(at)
		}
	}
	return e
}

// Probe runs discovery only (for the status report): it returns the
// endpoint, with Pages counted from /json/list when that answers (-1
// otherwise), or the discovery error Dial would return. It opens no
// WebSocket.
func Probe(ctx context.Context, cfg Config, opts ...Option) (Endpoint, error) {
	s := newSettings(opts)
	s.probeTimeout = probeTimeout(cfg)
	ep, err := discover(ctx, cfg, &s)
	if err != nil {
		return Endpoint{}, err
	}
	ep.Pages = countPages(ctx, ep, s.probeTimeout)
	return ep, nil
}

// settings returns a copy of the Provider's settings, worked out once by
// NewProvider.
func (p *Provider) settings() settings { return p.base }

// shared returns the Provider's shared connection, counted as used once
// more, dialling it (discovery, then the browser WebSocket) when there is
// none or it ended.
func (p *Provider) shared(ctx context.Context, s *settings) (*sharedConn, error) {
	// ep is "" for the first try: the connection is reused when the
	// discovery sources still name its browser run (read without network,
	// see sameRun); then the full discovery's endpoint decides.
	get := func(ep string) (*sharedConn, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.closed {
			return nil, closedConnErr("provider closed")
		}
		if p.sc == nil {
			return nil, nil
		}
		if ep == "" && !sameRun(p.sc.ep, s) || ep != "" && ep != p.sc.ep.BrowserWSURL {
			return nil, nil
		}
		if p.sc.acquire() {
			return p.sc, nil
		}
		return nil, nil
	}
	if sc, err := get(""); sc != nil || err != nil {
		return sc, err
	}
	select {
	case p.dialing <- struct{}{}:
	case <-ctx.Done():
		return nil, abortErr(ctx)
	}
	defer func() { <-p.dialing }()
	ep, err := discover(ctx, p.cfg, s)
	if err != nil {
		return nil, err
	}
	if sc, err := get(ep.BrowserWSURL); sc != nil || err != nil {
		return sc, err // the same browser run, or another Build dialled it meanwhile
	}
	sc, err := dialShared(ctx, ep, s)
	if err != nil {
		return nil, err
	}
	p.dials.Add(1)
	sc.acquire()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		sc.close(closedConnErr("provider closed"))
		return nil, closedConnErr("provider closed")
	}
	old := p.sc
	p.sc = sc
	p.mu.Unlock()
	if old != nil && old.live() {
		// Discovery names another browser run now: the old one is not
		// where the conversations' tabs are looked for any more.
		old.close(closedConnErr("the browser is now found at another address"))
	}
	s.logger.Debug("cdpinspect: connected to browser", "source", string(ep.Source), "endpoint", hostPort(ep.BrowserWSURL))
	return sc, nil
}

// sameRun reports, without touching the network, whether discovery would
// still find the browser run ep: the explicit WebSocket URL is ep's, or the
// first DevToolsActivePort file that exists names ep, or there is no such
// file and ep came from /json/version (whose port a browser run holds until
// it exits, which ends the connection). Anything else makes Build
// rediscover.
func sameRun(ep Endpoint, s *settings) bool {
	if s.wsURL != "" {
		return ep.Source == SourceWebSocketURL
	}
	for _, dir := range s.userDataDirs {
		data, err := readSmallFile(filepath.Join(dir, "DevToolsActivePort"), 4096)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil || ep.Source != SourceDevToolsActivePort || dir != ep.UserDataDir {
			return false
		}
		port, path, err := ParseDevToolsActivePort(data)
		return err == nil && ep.BrowserWSURL == "ws://127.0.0.1:"+strconv.Itoa(port)+path
	}
	return ep.Source == SourceJSONVersion
}

// build returns the Backend of one invocation of conversation, in its
// remembered tab (see Provider), as a view of the shared connection.
func (p *Provider) build(ctx context.Context, conversation string, req bb.TabRequest) (*Backend, error) {
	s := p.settings()
	if conversation == "" {
		sc, err := p.shared(ctx, &s)
		if err != nil {
			return nil, err
		}
		s.tab.open = true
		return sc.attachView(ctx, s, "")
	}
	unlock, err := p.tabs.lock(ctx, conversation)
	if err != nil {
		return nil, tabBusy{err}
	}
	defer unlock()
	sc, err := p.shared(ctx, &s)
	if err != nil {
		return nil, err
	}
	ep := sc.ep
	key := tabKey{browser: ep.BrowserWSURL, conversation: conversation}
	prev, had := p.tabs.get(key)
	if s.isolated && req.Want == bb.TabActive {
		sc.release()
		return nil, &bb.Error{Class: bb.ClassPolicy, Code: bb.CodeNotSupported, Backend: bb.KindCDPInspect,
			Message: "an isolated conversation cannot adopt the user's tab"}
	}
	fast, err := chooseTab(&s, req, prev, had, func() map[string]bool { return p.tabs.targetsOf(ep.BrowserWSURL, conversation) })
	if err != nil {
		sc.release()
		return nil, err
	}
	if s.isolated && s.tab.open {
		if s.tab.browserContextID, err = p.browserContext(ctx, sc, key, s.commandTimeout); err != nil {
			sc.release()
			return nil, err
		}
	}
	crashed := false // the conversation's session saw its tab's renderer crash
	if fast {
		cs := sc.session(conversation)
		crashed = cs != nil && cs.targetID == prev.targetID && cs.st.crashed.Load()
		if cs != nil && cs.targetID == prev.targetID && !crashed {
			// The conversation's session is attached and its tab alive:
			// nothing to send. A session that saw its renderer crash is
			// replaced by a fresh one: Chrome was seen to leave a command
			// on the old session unanswered after the tab's revival.
			v := sc.newView(s, cs.targetID, cs.sessionID, cs.st)
			v.tabClosed = p.tabClosedFunc(key, conversation)
			v.owned = prev.owned
			return v, nil
		}
	}
	b, err := sc.attachView(ctx, s, conversation)
	if err != nil {
		if e, ok := err.(*bb.Error); ok && e.Code == bb.CodeTargetNotFound {
			p.dropTab(key, prev, had, s.tab.targetID)
			p.forgetShared(ctx, conversation)
			s.logger.Info("cdpinspect: the conversation's tab was closed", "conversationId", conversation, "targetId", prev.targetID)
		}
		return nil, err
	}
	if crashed && b.TargetID() == prev.targetID {
		// The tab stays lost until a navigation revives it, whatever the new
		// session's Inspector.enable probe saw: Chrome sends
		// Inspector.targetCrashed for it only while the tab's frame is not
		// live, and a command sent to a crashed tab waits in Chrome until
		// its deadline.
		b.st.crashed.Store(true)
	}
	p.adoptTab(ctx, s.logger, key, prev, had, b, conversation)
	b.tabClosed = p.tabClosedFunc(key, conversation)
	// Sessions of conversations the LRU bound forgot end as well.
	sc.prune(ctx, func(conv string) bool {
		_, ok := p.tabs.tabs.Peek(tabKey{browser: ep.BrowserWSURL, conversation: conv})
		return ok
	})
	return b, nil
}

// browserContext returns the browser context of key's conversation,
// creating it (Target.createBrowserContext) on its first tab. The caller
// holds the conversation's lock.
func (p *Provider) browserContext(ctx context.Context, sc *sharedConn, key tabKey, timeout time.Duration) (string, error) {
	p.mu.Lock()
	id := p.contexts[key]
	p.mu.Unlock()
	if id != "" {
		return id, nil
	}
	cctx, cancel := withDeadline(ctx, timeout)
	defer cancel()
	raw, err := sc.c.call(cctx, "Target.createBrowserContext", json.RawMessage(`{"disposeOnDetach":false}`), "")
	if err != nil {
		return "", constructionErr(err)
	}
	var res struct {
		BrowserContextID string `json:"browserContextId"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.BrowserContextID == "" {
		return "", &bb.Error{Class: bb.ClassProtocol, Code: bb.CodeInvalidResponse, Backend: bb.KindCDPInspect,
			Method: "Target.createBrowserContext", Dispatched: true, Message: "no browserContextId in the reply", Err: err}
	}
	p.mu.Lock()
	p.contexts[key] = res.BrowserContextID
	p.mu.Unlock()
	return res.BrowserContextID, nil
}

// takeContext forgets and returns key's browser context ("" for none).
func (p *Provider) takeContext(key tabKey) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	id := p.contexts[key]
	delete(p.contexts, key)
	return id
}

// adoptTab records b's tab as conversation's (key; prev and had are what
// was remembered before the attach): whether the agent owns it, closing the
// agent's tab it replaced and the tabs of conversations the LRU bound
// dropped.
func (p *Provider) adoptTab(ctx context.Context, logger *slog.Logger, key tabKey, prev convTab, had bool, b *Backend, conversation string) {
	b.mu.Lock()
	owned := b.created
	b.created = false // the tab outlives this invocation
	b.mu.Unlock()
	cur := convTab{targetID: b.TargetID(), owned: owned}
	if had {
		for _, x := range prev.all() {
			if x.targetID == cur.targetID {
				cur = x // selected again: it keeps what it was
			}
		}
	}
	// A tab the conversation had before (new_tab, use_active_tab, a
	// selection) stays one of its tabs: closing the conversation closes
	// the ones it owns.
	p.tabs.set(key, prev.withCurrent(cur, had))
	b.mu.Lock()
	b.owned = cur.owned
	b.mu.Unlock()
	if cur.owned && !had {
		logger.Info("cdpinspect: opened the conversation's tab", "conversationId", conversation, "targetId", b.TargetID())
	}
	for _, id := range p.tabs.takeEvicted(key.browser) {
		// Its conversation fell out of the LRU bound: nobody will use or
		// close the agent's tab otherwise.
		b.closeTarget(ctx, id)
		logger.Info("cdpinspect: closed a forgotten conversation's tab", "targetId", id)
	}
}

// dropTab forgets the conversation's tab id (key; prev and had are what
// was remembered) that turned out to be closed: the current one is
// replaced by the most recently current other, if any.
func (p *Provider) dropTab(key tabKey, prev convTab, had bool, id string) {
	if !had {
		return
	}
	if id == "" || id == prev.targetID {
		if next, ok := prev.promoted(); ok {
			p.tabs.set(key, next)
		} else {
			p.tabs.forget(key)
		}
		return
	}
	prev.others = prev.without(id)[1:]
	p.tabs.set(key, prev)
}

// dialOwn dials a Backend with a socket of its own for conversation, in
// its remembered tab (DialConversation).
func (p *Provider) dialOwn(ctx context.Context, conversation string, req bb.TabRequest) (*Backend, error) {
	s := p.settings()
	if conversation == "" {
		s.tab.open = true
		return dial(ctx, p.cfg, s)
	}
	unlock, err := p.tabs.lock(ctx, conversation)
	if err != nil {
		return nil, tabBusy{err}
	}
	defer unlock()
	ep, err := discover(ctx, p.cfg, &s)
	if err != nil {
		return nil, err
	}
	key := tabKey{browser: ep.BrowserWSURL, conversation: conversation}
	prev, had := p.tabs.get(key)
	if _, err := chooseTab(&s, req, prev, had, func() map[string]bool { return p.tabs.targetsOf(ep.BrowserWSURL, conversation) }); err != nil {
		return nil, err
	}
	b, err := dialEndpoint(ctx, ep, s)
	if err != nil {
		if e, ok := err.(*bb.Error); ok && e.Code == bb.CodeTargetNotFound {
			p.dropTab(key, prev, had, s.tab.targetID)
			s.logger.Info("cdpinspect: the conversation's tab was closed", "conversationId", conversation, "targetId", prev.targetID)
		}
		return nil, err
	}
	p.adoptTab(ctx, s.logger, key, prev, had, b, conversation)
	return b, nil
}

// tabClosedFunc returns what a view of conversation's remembered tab (key)
// calls when a command finds that tab closed: the Provider forgets the tab
// and the conversation's session, unless the conversation has moved on to
// another tab meanwhile.
func (p *Provider) tabClosedFunc(key tabKey, conversation string) func(targetID string) {
	return func(targetID string) {
		ctx, cancel := context.WithTimeout(context.Background(), p.settings().commandTimeout)
		defer cancel()
		unlock, err := p.tabs.lock(ctx, conversation)
		if err != nil {
			return
		}
		defer unlock()
		t, ok := p.tabs.get(key)
		if !ok || t.targetID != targetID {
			return
		}
		p.forgetShared(ctx, conversation)
		if next, ok := t.promoted(); ok {
			p.tabs.set(key, next) // the next call runs in the tab used before
		} else {
			p.tabs.forget(key)
		}
		p.settings().logger.Info("cdpinspect: the conversation's tab was closed", "conversationId", conversation, "targetId", targetID)
	}
}

// forgetShared detaches conversation's session on the shared connection,
// if it has one.
func (p *Provider) forgetShared(ctx context.Context, conversation string) {
	p.mu.Lock()
	sc := p.sc
	p.mu.Unlock()
	if sc != nil && sc.live() {
		sc.forget(ctx, conversation)
	}
}

// ConnStats are the counts of a Provider's shared browser connection.
type ConnStats struct {
	// Open reports whether the shared browser WebSocket is open.
	Open bool
	// Dials is how many browser WebSockets the Provider's Builds opened
	// so far (one per browser run while the connection is in use or idle
	// for less than the idle timeout).
	Dials int64
	// InUse is how many Backends built by the Provider are open on it.
	InUse int
	// Sessions is how many flat CDP sessions it keeps (one per
	// conversation that used it, plus one per open invocation without a
	// conversation).
	Sessions int
}

// ConnStats returns the counts of the shared browser connection (for
// status reports and tests). Safe for concurrent use.
func (p *Provider) ConnStats() ConnStats {
	p.mu.Lock()
	sc := p.sc
	p.mu.Unlock()
	st := ConnStats{Dials: p.dials.Load()}
	if sc != nil && sc.live() {
		st.Open = true
		st.InUse, st.Sessions = sc.stats()
	}
	return st
}

// Close closes the Provider's shared browser connection (the
// conversations' sessions end with it; every tab stays open) and
// waits for its goroutines. Backends still open on it fail their commands
// with ClassClosed; later Builds fail with ClassClosed and code closed.
// DialConversation's Backends, which own their sockets, are not touched.
// Idempotent; always returns nil. Safe for concurrent use.
func (p *Provider) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	sc := p.sc
	p.sc = nil
	p.mu.Unlock()
	if sc != nil {
		sc.close(closedConnErr("provider closed"))
	}
	return nil
}

// ReleaseConversation implements browserbackend.ConversationReleaser.
// Without close it forgets the conversation's tab, which stays open, and
// detaches the conversation's session from the shared connection (bounded
// to 2 s); nothing else is sent. With close it also closes the tab the
// conversation opened (Target.closeTarget, waiting for its destruction; an
// adopted user tab stays open), dialling only when the conversation has a
// remembered tab. A tab already gone, or a browser no longer running, is not
// an error. Errors are the *browserbackend.Error of discovery or of the
// close command. Safe for concurrent use.
func (p *Provider) ReleaseConversation(ctx context.Context, conversationID string, close bool) ([]bb.Released, error) {
	if conversationID == "" || !p.tabs.has(conversationID) {
		return nil, nil
	}
	if !close {
		var out []bb.Released
		for _, t := range p.tabs.of(conversationID) {
			out = append(out, bb.Released{Kind: bb.KindCDPInspect, Tab: bb.Tab{ID: t.targetID, Owned: t.owned}})
		}
		p.tabs.forgetAll(conversationID)
		p.forgetShared(ctx, conversationID)
		p.forgetContexts(conversationID)
		return out, nil
	}
	return p.closeConversation(ctx, conversationID)
}

// forgetContexts forgets conversationID's browser contexts without
// disposing of them: its detached tabs live on in them.
func (p *Provider) forgetContexts(conversationID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.contexts {
		if k.conversation == conversationID {
			delete(p.contexts, k)
		}
	}
}

func (p *Provider) closeConversation(ctx context.Context, conversationID string) ([]bb.Released, error) {
	unlock, err := p.tabs.lock(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	defer p.tabs.forgetAll(conversationID)
	p.forgetShared(ctx, conversationID)
	s := p.settings()
	ep, err := discover(ctx, p.cfg, &s)
	if err != nil {
		if errors.Is(err, bb.ErrUnreachable) {
			return nil, nil // the browser is gone, and its tabs with it
		}
		return nil, err
	}
	key := tabKey{browser: ep.BrowserWSURL, conversation: conversationID}
	t, ok := p.tabs.get(key)
	if !ok {
		return nil, nil
	}
	browserCtx := p.takeContext(key)
	// Target discovery on this connection reports each tab's destruction,
	// so the tabs are gone when ReleaseConversation returns.
	var mu sync.Mutex
	gone := map[string]chan struct{}{}
	onEvent := func(f frame) {
		if f.Method != "Target.targetDestroyed" {
			return
		}
		var p struct {
			TargetID string `json:"targetId"`
		}
		if json.Unmarshal(f.Params, &p) != nil {
			return
		}
		mu.Lock()
		if ch := gone[p.TargetID]; ch != nil {
			close(ch)
			delete(gone, p.TargetID)
		}
		mu.Unlock()
	}
	c, err := dialConn(ctx, ep, &s, onEvent, nil)
	if err != nil {
		return nil, err
	}
	defer c.close(&bb.Error{Class: bb.ClassClosed, Code: bb.CodeClosed, Backend: bb.KindCDPInspect, Message: "conversation closed"})
	cctx, cancel := withDeadline(ctx, s.commandTimeout)
	defer cancel()
	if _, err := c.call(cctx, "Target.setDiscoverTargets", json.RawMessage(`{"discover":true}`), ""); err != nil {
		return nil, err
	}
	tabs := t.all()
	if infos, err := listTargets(cctx, c); err == nil {
		if now, ok := adoptPopups(t, infos, p.tabs.wasClosed); ok {
			tabs = now.all() // its popups close with it
		}
	}
	var out []bb.Released
	for _, x := range tabs {
		rel := bb.Released{Kind: bb.KindCDPInspect, Tab: bb.Tab{ID: x.targetID, Owned: x.owned}}
		if !x.owned {
			out = append(out, rel)
			continue
		}
		ch := make(chan struct{})
		mu.Lock()
		gone[x.targetID] = ch
		mu.Unlock()
		params, _ := json.Marshal(map[string]string{"targetId": x.targetID})
		if _, err := c.call(cctx, "Target.closeTarget", params, ""); err != nil {
			var e *bb.Error
			if errors.As(err, &e) && e.Class == bb.ClassProtocol {
				rel.Gone = true // no such target: the user closed it already
				out = append(out, rel)
				continue
			}
			return out, err
		}
		select {
		case <-ch:
		case <-cctx.Done():
			return out, ctxErr(cctx, "Target.closeTarget", true)
		}
		s.logger.Info("cdpinspect: closed the conversation's tab", "conversationId", conversationID, "targetId", x.targetID)
		rel.Closed = true
		out = append(out, rel)
	}
	if browserCtx != "" {
		// With its cookies and storage; a tab still in it closes too.
		params, _ := json.Marshal(map[string]string{"browserContextId": browserCtx})
		if _, err := c.call(cctx, "Target.disposeBrowserContext", params, ""); err != nil {
			return out, err
		}
	}
	return out, nil
}
