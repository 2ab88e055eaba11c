package cdpinspect

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	bb "github.com/browserchain/browserchain/browserbackend"
)

// sharedConn is a Provider's one browser-level WebSocket, shared by every
// invocation: each conversation has one flat session on its tab, attached once and kept while the connection lives, and each
// Build returns a view of it (a *Backend with shared set). The connection
// counts its open views; when none is open for the idle timeout it closes,
// and so does a lost socket (the browser died): the next Build dials anew.
type sharedConn struct {
	c    *conn
	ep   Endpoint
	idle time.Duration // < 0: close as soon as no view is open

	mu       sync.Mutex
	ended    bool                    // the socket is gone (lost, idle, or Provider.Close)
	closing  bool                    // close ended it (not the browser): views fail with ClassClosed
	users    int                     // open views
	views    map[*Backend]struct{}   // open views, for event delivery
	sessions map[string]*convSession // by conversation
	states   map[string]*pageState   // by sessionId, every conversation session's
	timer    *time.Timer             // the idle timer, while users == 0
	gen      uint64                  // bumped when the idle timer is stopped or restarted

	// Browser-level auto-attach (the guards' popup hold), counted
	// per view: see setAutoAttach.
	autoMu  sync.Mutex          // serialises the Target.setAutoAttach commands sent on the root session
	holders []*Backend          // views that turned auto-attach on, first asker first
	popups  map[string]*Backend // auto-attached session id → the holder whose page opened the target
	wg      sync.WaitGroup      // releases of targets no holder opened
}

// convSession is the flat session a conversation keeps on the shared
// connection.
type convSession struct {
	targetID, sessionID string
	st                  *pageState
	resumed             chan struct{} // the attach's runIfWaitingForDebugger
}

// dialShared opens the shared connection to ep.
func dialShared(ctx context.Context, ep Endpoint, s *settings) (*sharedConn, error) {
	sc := &sharedConn{ep: ep, idle: s.idleTimeout, views: map[*Backend]struct{}{},
		sessions: map[string]*convSession{}, states: map[string]*pageState{}, popups: map[string]*Backend{}}
	c, err := dialConn(ctx, ep, s, sc.onFrame, sc.onEnd)
	if err != nil {
		return nil, err
	}
	sc.c = c
	return sc, nil
}

// acquire counts one more open view; false when the connection has ended.
// It asks the socket too: a lost socket fails its waiting calls before
// onEnd marks the connection ended, and a caller that saw such a failure
// must get a new connection, not the dead one.
func (sc *sharedConn) acquire() bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.ended || sc.c.lost() {
		return false
	}
	sc.users++
	if sc.timer != nil {
		sc.timer.Stop()
		sc.timer = nil
		sc.gen++
	}
	return true
}

// release counts one view less; the last one starts the idle timer (or,
// with a negative idle timeout, closes the connection at once).
func (sc *sharedConn) release() {
	sc.mu.Lock()
	sc.users--
	if sc.users > 0 || sc.ended {
		sc.mu.Unlock()
		return
	}
	if sc.idle < 0 {
		sc.mu.Unlock()
		sc.close(closedConnErr("the shared browser connection closed (no invocation uses it)"))
		return
	}
	sc.gen++
	gen := sc.gen
	sc.timer = time.AfterFunc(sc.idle, func() { sc.idleClose(gen) })
	sc.mu.Unlock()
}

// idleClose closes the connection when it is still unused since the timer
// of generation gen started.
func (sc *sharedConn) idleClose(gen uint64) {
	sc.mu.Lock()
	if sc.ended || sc.users > 0 || sc.gen != gen {
		sc.mu.Unlock()
		return
	}
	sc.timer = nil
	sc.mu.Unlock()
	sc.close(closedConnErr("the shared browser connection closed after its idle timeout"))
}

// close ends the connection with e (the conversation sessions end with it;
// their tabs stay open) and waits for the goroutines it started.
func (sc *sharedConn) close(e *bb.Error) {
	sc.mu.Lock()
	sc.closing = true
	sc.mu.Unlock()
	sc.c.close(e)
	sc.mu.Lock()
	var waits []chan struct{}
	for _, s := range sc.sessions {
		waits = append(waits, s.resumed)
	}
	sc.sessions = map[string]*convSession{}
	sc.mu.Unlock()
	for _, w := range waits {
		<-w // the closed connection has failed it
	}
	sc.wg.Wait() // the releases fail fast on the closed connection
}

func closedConnErr(msg string) *bb.Error {
	return &bb.Error{Class: bb.ClassClosed, Code: bb.CodeClosed, Backend: bb.KindCDPInspect, Message: msg}
}

// live reports whether the connection still serves.
func (sc *sharedConn) live() bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return !sc.ended && !sc.c.lost()
}

// onFrame runs on the reader goroutine for every event: it updates the
// conversation sessions' state, then hands the event to the views it
// concerns (never blocking).
//
// A view sees its own session's events and those of no conversation's
// session (browser-level ones, or of sessions a caller attached itself);
// never another conversation's. The sessions browser-level auto-attach
// made are routed by the page that opened their target: the
// Target.attachedToTarget of a target whose openerId is a holder's page
// (see setAutoAttach), and every later event of that session, goes to
// that holder only; other holders never see it, so no guard resumes,
// intercepts or closes another conversation's popup. An attach event for
// any other target goes to the views that hold no auto-attach, and a
// target that waits for a debugger is resumed and detached by the
// connection itself (nobody guards it), also once no view holds
// auto-attach any more.
func (sc *sharedConn) onFrame(f frame) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sid := f.SessionID
	if f.Method == bb.MethodTargetDetached {
		// Chrome sends it on the browser connection with the detached
		// session in params; the EventSource contract puts that session
		// in Event.SessionID.
		var p struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(f.Params, &p) == nil && p.SessionID != "" {
			sid = p.SessionID
		}
	}
	ev := bb.Event{Method: f.Method, Params: f.Params, SessionID: sid}
	if owner := sc.popups[sid]; owner != nil && sid != "" {
		if f.Method == bb.MethodTargetDetached {
			delete(sc.popups, sid)
		}
		owner.bus.Publish(ev)
		return
	}
	if f.Method == methodTargetAttached && f.SessionID == "" {
		sc.routeAttached(f, ev)
		return
	}
	st := sc.states[sid]
	if st != nil {
		st.observe(f, sid)
		if f.Method == bb.MethodTargetDetached {
			st.detached.Store(true)
			delete(sc.states, sid)
		}
	}
	for v := range sc.views {
		if st == nil || sid == v.SessionID() {
			v.bus.Publish(ev)
		}
	}
}

// methodTargetAttached is the event of a session attached on the browser
// connection (by an attach command or by auto-attach).
const methodTargetAttached = "Target.attachedToTarget"

// routeAttached delivers a Target.attachedToTarget of the root session
// while auto-attach is held (see onFrame). sc.mu is held.
func (sc *sharedConn) routeAttached(f frame, ev bb.Event) {
	var p struct {
		SessionID  string `json:"sessionId"`
		TargetInfo struct {
			OpenerID string `json:"openerId"`
		} `json:"targetInfo"`
		WaitingForDebugger bool `json:"waitingForDebugger"`
	}
	if json.Unmarshal(f.Params, &p) != nil || p.SessionID == "" {
		return
	}
	if p.TargetInfo.OpenerID != "" {
		for _, h := range sc.holders {
			if h.TargetID() == p.TargetInfo.OpenerID {
				sc.popups[p.SessionID] = h
				h.bus.Publish(ev)
				return
			}
		}
	}
	for v := range sc.views {
		if !slices.Contains(sc.holders, v) {
			v.bus.Publish(ev)
		}
	}
	if p.WaitingForDebugger && !sc.ended {
		sc.wg.Add(1)
		go func() {
			defer sc.wg.Done()
			sc.resume(p.SessionID)
		}()
	}
}

// resume resumes a target that auto-attach holds and detaches its
// session (best effort: the detach releases the target as well).
func (sc *sharedConn) resume(sessionID string) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_, _ = sc.c.call(ctx, "Runtime.runIfWaitingForDebugger", nil, sessionID)
	params, _ := json.Marshal(map[string]string{"sessionId": sessionID})
	_, _ = sc.c.call(ctx, "Target.detachFromTarget", params, "")
}

// setAutoAttach is a view's Target.setAutoAttach on the browser session
// (browserbackend.BrowserSessionID), counted per shared connection: Chrome
// keeps one auto-attach setting per browser connection, so one
// conversation's guard turning it off must not end another's hold.
//   - on: the first holder's command is sent (its params are the ones in
//     force until the last holder lets go); a later holder's is answered
//     {} without being sent;
//   - off: the last holder's turns it off (autoAttachOff, whatever its
//     params; Chrome then detaches every session auto-attach made and
//     releases the targets still waiting); an earlier one's is answered {} and the
//     sessions routed to that holder are detached, which releases its
//     popups as turning auto-attach off would have;
//   - a view that holds nothing turning it off is answered {}.
//
// A holder's Close lets go as its off would. The commands are serialised,
// so an on never overtakes an off.
func (sc *sharedConn) setAutoAttach(ctx context.Context, v *Backend, params json.RawMessage) (json.RawMessage, error) {
	var p struct {
		AutoAttach *bool `json:"autoAttach"`
	}
	if json.Unmarshal(params, &p) != nil || p.AutoAttach == nil {
		// Not a command Chrome accepts: its answer says why.
		return sc.c.call(ctx, "Target.setAutoAttach", params, "")
	}
	sc.autoMu.Lock()
	defer sc.autoMu.Unlock()
	sc.mu.Lock()
	holding, n := slices.Contains(sc.holders, v), len(sc.holders)
	sc.mu.Unlock()
	if !*p.AutoAttach {
		if !holding {
			return json.RawMessage(`{}`), nil
		}
		return sc.letGo(ctx, v)
	}
	res := json.RawMessage(`{}`)
	if holding {
		return res, nil
	}
	if n == 0 {
		var err error
		if res, err = sc.c.call(ctx, "Target.setAutoAttach", params, ""); err != nil {
			return nil, err
		}
	}
	sc.mu.Lock()
	sc.holders = append(sc.holders, v)
	sc.mu.Unlock()
	return res, nil
}

// autoAttachOff is the command the last holder's off becomes. Chrome
// refuses a browser-level Target.setAutoAttach without flatten: true, off
// included (-32602 "Only flatten protocol is supported with browser level
// auto-attach"), which would leave every new target waiting for a debugger
// nobody runs.
var autoAttachOff = json.RawMessage(`{"autoAttach":false,"waitForDebuggerOnStart":false,"flatten":true}`)

// letGo ends v's hold (see setAutoAttach), sending autoAttachOff when v is
// the last holder. sc.autoMu is held.
func (sc *sharedConn) letGo(ctx context.Context, v *Backend) (json.RawMessage, error) {
	sc.mu.Lock()
	sc.holders = slices.DeleteFunc(sc.holders, func(h *Backend) bool { return h == v })
	last := len(sc.holders) == 0
	var mine []string
	for sid, h := range sc.popups {
		if h == v {
			mine = append(mine, sid)
			delete(sc.popups, sid)
		}
	}
	ended := sc.ended
	sc.mu.Unlock()
	if ended {
		return json.RawMessage(`{}`), nil // Chrome dropped the setting with the socket
	}
	if last {
		return sc.c.call(ctx, "Target.setAutoAttach", autoAttachOff, "")
	}
	for _, sid := range mine {
		params, _ := json.Marshal(map[string]string{"sessionId": sid})
		_, _ = sc.c.call(ctx, "Target.detachFromTarget", params, "")
	}
	return json.RawMessage(`{}`), nil
}

// letGoOnClose ends the hold of a closing view, if it has one.
func (sc *sharedConn) letGoOnClose(v *Backend) {
	sc.autoMu.Lock()
	defer sc.autoMu.Unlock()
	sc.mu.Lock()
	holding := slices.Contains(sc.holders, v)
	sc.mu.Unlock()
	if holding {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		_, _ = sc.letGo(ctx, v)
		cancel()
	}
}

// onEnd runs on the reader goroutine when the socket is gone: every open
// view learns that its session went away (unless it is closing) and its
// event channels close.
func (sc *sharedConn) onEnd() {
	sc.mu.Lock()
	sc.ended = true
	if sc.timer != nil {
		sc.timer.Stop()
		sc.timer = nil
	}
	views := make([]*Backend, 0, len(sc.views))
	for v := range sc.views {
		views = append(views, v)
	}
	sc.views = map[*Backend]struct{}{}
	sc.states = map[string]*pageState{}
	closing := sc.closing
	sc.mu.Unlock()
	for _, v := range views {
		if sid := v.SessionID(); sid != "" && !v.closed.Load() && !closing {
			v.st.detached.Store(true)
			params, _ := json.Marshal(map[string]string{"sessionId": sid, "targetId": v.TargetID()})
			v.bus.Publish(bb.Event{Method: bb.MethodTargetDetached, Params: params, SessionID: sid})
		}
		v.bus.Close()
		v.doneOnce.Do(func() { close(v.done) })
	}
}

// session returns conversation's kept session, nil when it has none or it
// went away.
func (sc *sharedConn) session(conversation string) *convSession {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	s := sc.sessions[conversation]
	if s == nil || s.st.detached.Load() {
		return nil
	}
	return s
}

// newView returns a view of sc on session st (sessionID on targetID), with
// settings s, counted as open (the caller acquired it). Its events start
// at once.
func (sc *sharedConn) newView(s settings, targetID, sessionID string, st *pageState) *Backend {
	v := &Backend{c: sc.c, s: s, endpoint: sc.ep, st: st, shared: sc, targetID: targetID, sessionID: sessionID,
		done: make(chan struct{})}
	v.closing, v.stopClosing = context.WithCancel(context.Background())
	sc.mu.Lock()
	if sc.ended {
		v.doneOnce.Do(func() { close(v.done) })
		v.bus.Close()
	} else {
		sc.views[v] = struct{}{}
	}
	sc.mu.Unlock()
	return v
}

// attachView attaches a new flat session as s.tab asks (see
// Backend.attach) and returns the view on it; the caller acquired sc.
// conversation's session, when conversation is not "", becomes the one it
// keeps: the one it replaces is detached.
func (sc *sharedConn) attachView(ctx context.Context, s settings, conversation string) (*Backend, error) {
	v := sc.newView(s, "", "", &pageState{})
	if err := v.attach(ctx); err != nil {
		v.stopClosing()
		sc.dropView(v)
		return nil, constructionErr(err)
	}
	sess := &convSession{targetID: v.targetID, sessionID: v.sessionID, st: v.st, resumed: v.resumed}
	v.resumed = nil // the session's, waited for when the connection closes
	sc.mu.Lock()
	if sc.ended {
		sc.mu.Unlock()
		<-sess.resumed
		return v, nil // its commands fail with the connection's end
	}
	sc.states[sess.sessionID] = sess.st
	var old *convSession
	if conversation == "" {
		sc.sessions["\x00"+sess.sessionID] = sess // an invocation's own; its Close detaches it
	} else {
		old = sc.sessions[conversation]
		sc.sessions[conversation] = sess
	}
	sc.mu.Unlock()
	if old != nil {
		sc.detach(ctx, old)
	}
	return v, nil
}

// detach ends a session that no conversation keeps any more (best effort)
// and forgets it.
func (sc *sharedConn) detach(ctx context.Context, s *convSession) {
	sc.mu.Lock()
	delete(sc.states, s.sessionID)
	sc.mu.Unlock()
	if !s.st.detached.Load() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		params, _ := json.Marshal(map[string]string{"sessionId": s.sessionID})
		_, _ = sc.c.call(ctx, "Target.detachFromTarget", params, "")
		cancel()
	}
	// s.resumed ends by itself: the detach (or the connection's end)
	// fails a runIfWaitingForDebugger still queued.
}

// forget drops conversation's session, detaching it.
func (sc *sharedConn) forget(ctx context.Context, conversation string) {
	sc.mu.Lock()
	s := sc.sessions[conversation]
	delete(sc.sessions, conversation)
	sc.mu.Unlock()
	if s != nil {
		sc.detach(ctx, s)
	}
}

// prune drops the sessions of conversations keep rejects (the Provider no
// longer remembers their tab), detaching them.
func (sc *sharedConn) prune(ctx context.Context, keep func(conversation string) bool) {
	sc.mu.Lock()
	var drop []*convSession
	for conv, s := range sc.sessions {
		if conv != "" && conv[0] != 0 && !keep(conv) {
			drop = append(drop, s)
			delete(sc.sessions, conv)
		}
	}
	sc.mu.Unlock()
	for _, s := range drop {
		sc.detach(ctx, s)
	}
}

// dropView stops delivering events to v, closes its channels and counts it
// closed.
func (sc *sharedConn) dropView(v *Backend) {
	sc.mu.Lock()
	delete(sc.views, v)
	sc.mu.Unlock()
	v.bus.Close()
	v.doneOnce.Do(func() { close(v.done) })
	sc.release()
}

// stats returns the connection's counts.
func (sc *sharedConn) stats() (users, sessions int) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.users, len(sc.sessions)
}

// closeView is Close of a view: it ends the view's commands in flight with
// ClassClosed and, when the view's session is an invocation's own (no
// conversation), closes the tab opened for it; a conversation's session
// and tab stay for its next invocation, and the shared socket for the
// others.
func (b *Backend) closeView() {
	b.closed.Store(true)
	b.stopClosing()
	sc := b.shared
	if b.CreatedTarget() && sc.live() {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		detached, stop := b.bus.Subscribe(bb.MethodTargetDetached)
		params, _ := json.Marshal(map[string]string{"targetId": b.TargetID()})
		if _, err := b.c.call(ctx, "Target.closeTarget", params, ""); err == nil {
			b.waitDetached(ctx, detached)
		}
		stop()
		cancel()
		sc.mu.Lock()
		delete(sc.sessions, "\x00"+b.SessionID())
		delete(sc.states, b.SessionID())
		sc.mu.Unlock()
	}
	sc.letGoOnClose(b)
	sc.dropView(b)
}
