package tools

import (
	"context"
	"log/slog"
	"sync"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
)

// flatSessions is what a watch needs of its session to hold popups: views
// bound to other flat sessions of the same backend, and what the backend
// can do. *browserbackend.Client implements it.
type flatSessions interface {
	Session(sessionID string) *browserbackend.SessionView
	Caps() browserbackend.Caps
}

// popupHold is the part of a watch that keeps a page's new windows from
// loading before the guard has seen their URL. On a backend that declares
// browserbackend.CapHoldTargets (its browserbackend.BrowserSessionID session
// runs at browser level), it turns on Target.setAutoAttach
// with waitForDebuggerOnStart for the browser, so that every new page
// target waits before its first navigation:
//
//   - a page whose openerId is the watched page gets the document
//     interception (Fetch) on its own session before it is resumed
//     (Runtime.runIfWaitingForDebugger), so an off-list first request is
//     failed before it leaves and the popup is closed;
//   - any other target that waits (a tab the user opened meanwhile) is
//     resumed at once and detached;
//   - a target that does not wait (Chromium auto-attaches every page
//     already open when auto-attach turns on: the user's tabs, the
//     conversation's own) is left alone: no command is sent for it, so the
//     hold costs no round trip per open tab (on host-bridge each one crosses
//     the hub and the bridge).
//
// stop turns auto-attach off, which detaches every session it made (before
// Chromium answers the off; sessions attached by Target.attachToTarget,
// such as a conversation's, stay) and releases any target still waiting;
// so does the end of the backend's connection. When the off fails, stop
// detaches the sessions it left alone itself. A backend without the
// capability gets no hold: popups are then checked as they appear and closed
// (onTarget).
type popupHold struct {
	w     *watch
	views flatSessions
	bs    *browserbackend.SessionView // the browser session

	mu    sync.Mutex
	held  map[target.ID]bool // popups under interception, by target id
	left  []target.SessionID // sessions of already-open targets, left to the off
	stops []func()
	done  bool
	wg    sync.WaitGroup // the attach handlers
	loops sync.WaitGroup // the held popups' request loops
}

// startHold turns on the browser-level auto-attach for w; it returns nil
// (no hold) when w's session has no browser session or the browser refuses
// the command. ctx bounds the set-up command.
func startHold(ctx context.Context, w *watch) *popupHold {
	views, ok := w.s.(flatSessions)
	if !ok || !views.Caps().Has(browserbackend.CapHoldTargets) || w.self == "" {
		return nil
	}
	h := &popupHold{w: w, views: views, bs: views.Session(browserbackend.BrowserSessionID), held: map[target.ID]bool{}}
	// The browser session's events come with the page's (cdp-inspect) or
	// under the page's tab (host-bridge): the Client's own subscription
	// sees them.
	attached := w.subscribe(target.AttachedToTarget.Method)
	flat := true
	_, err := cdp.Call(ctx, h.bs, target.SetAutoAttach, target.SetAutoAttachParams{
		AutoAttach: true, WaitForDebuggerOnStart: true, Flatten: &flat,
		Filter: target.Filter{{Type: "page"}},
	})
	if err != nil {
		// Nothing was attached. The subscription ends with the watch;
		// until then its events (none of this hold's) are drained, so that
		// its forwarder never blocks the watch's stop.
		w.loop(attached, func([]byte) {})
		return nil
	}
	w.loop(attached, func(raw []byte) {
		var ev target.EventAttachedToTarget
		if decodeValue(raw, &ev) != nil || ev.SessionID == "" || ev.TargetInfo == nil {
			return
		}
		h.mu.Lock()
		if !ev.WaitingForDebugger {
			// An open target: nothing waits on it, and the off detaches
			// its session with the others (a session seen after the off
			// was already detached by it).
			if !h.done {
				h.left = append(h.left, ev.SessionID)
			}
			h.mu.Unlock()
			return
		}
		if h.done {
			h.mu.Unlock()
			h.release(ev.SessionID) // auto-attach is off or going off
			return
		}
		h.wg.Add(1)
		h.mu.Unlock()
		go func() {
			defer h.wg.Done()
			h.onAttached(ev)
		}()
	})
	return h
}

// isHeld reports whether id is a popup under the hold's interception.
func (h *popupHold) isHeld(id string) bool {
	if h == nil || id == "" {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held[target.ID(id)]
}

func (h *popupHold) onAttached(ev target.EventAttachedToTarget) {
	info := ev.TargetInfo
	if info.Type != "page" || info.OpenerID != h.w.self {
		h.release(ev.SessionID)
		return
	}
	child := h.views.Session(string(ev.SessionID))
	h.mu.Lock()
	h.held[info.TargetID] = true
	paused, stop := child.Subscribe(fetch.RequestPaused.Method)
	h.stops = append(h.stops, stop)
	h.mu.Unlock()
	h.loops.Add(1)
	go func() {
		defer h.loops.Done()
		for raw := range paused {
			h.onPaused(child, info.TargetID, []byte(raw))
		}
	}()
	actx, cancel := h.w.actx()
	defer cancel()
	if _, err := cdp.Call(actx, child, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
		{URLPattern: "*", ResourceType: network.ResourceTypeDocument, RequestStage: fetch.RequestStageRequest},
	}}); err != nil {
		// Unguarded, it must not run: close it (it is the agent's popup,
		// not a tab of the user's).
		_, _ = cdp.Call(actx, h.bs, target.CloseTarget, target.CloseTargetParams{TargetID: info.TargetID})
		return
	}
	_, _ = cdp.Call(actx, child, runtime.RunIfWaitingForDebugger, cdp.Empty{})
}

// onPaused decides one document request of a held popup; an off-list one
// is failed, recorded and its popup closed.
func (h *popupHold) onPaused(child cdp.Session, id target.ID, raw []byte) {
	var ev fetch.EventRequestPaused
	if decodeValue(raw, &ev) != nil || ev.Request == nil {
		return
	}
	actx, cancel := h.w.actx()
	defer cancel()
	if err := h.w.g.CheckURL(actx, ev.Request.URL+ev.Request.URLFragment); err != nil {
		h.w.violate(err)
		_, _ = cdp.Call(actx, child, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
		_, _ = cdp.Call(actx, h.bs, target.CloseTarget, target.CloseTargetParams{TargetID: id})
		return
	}
	_, _ = cdp.Call(actx, child, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
}

// release lets a waiting target that is not the page's popup go: resumed
// (whatever the answer, the detach that follows releases it too) and
// detached.
func (h *popupHold) release(sid target.SessionID) {
	actx, cancel := h.w.actx()
	defer cancel()
	_, _ = cdp.Call(actx, h.views.Session(string(sid)), runtime.RunIfWaitingForDebugger, cdp.Empty{})
	_, _ = cdp.Call(actx, h.bs, target.DetachFromTarget, target.DetachFromTargetParams{SessionID: sid})
}

// stop waits for the attach handlers (each bounded by
// guardCleanupTimeout), turns the auto-attach off (which detaches the
// sessions it made and releases any target still waiting; a later attach
// event is released at once) and ends the popups' request loops. ctx bounds
// the command. When the off fails, the sessions of open targets the hold
// left alone are detached one by one (sent together, best effort).
func (h *popupHold) stop(ctx context.Context) {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.done = true
	h.mu.Unlock()
	h.wg.Wait()
	// Chromium refuses a browser-level setAutoAttach without flatten, the
	// "off" too (-32602): without it the hold stayed on for the life of
	// the connection, and every new tab (one the extension or the user
	// opens) waited for a debugger that never resumed it.
	flat := true
	if _, err := cdp.Call(ctx, h.bs, target.SetAutoAttach, target.SetAutoAttachParams{AutoAttach: false, Flatten: &flat}); err != nil {
		log := h.w.g.Policy().Logger
		if log == nil {
			log = slog.Default()
		}
		log.Warn("tools: turning the popup hold off failed; new tabs may wait until the connection ends", "error", err)
		h.detachLeft(ctx)
	}
	h.mu.Lock()
	stops := h.stops
	h.stops = nil
	h.left = nil
	h.mu.Unlock()
	for _, s := range stops {
		s()
	}
	h.loops.Wait()
}

// detachLeft detaches the sessions of the open targets the hold left to
// the off, all commands in flight at once; ctx bounds them.
func (h *popupHold) detachLeft(ctx context.Context) {
	h.mu.Lock()
	left := h.left
	h.left = nil
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, sid := range left {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = cdp.Call(ctx, h.bs, target.DetachFromTarget, target.DetachFromTargetParams{SessionID: sid})
		}()
	}
	wg.Wait()
}
