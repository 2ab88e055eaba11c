package tools

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
)

// guardCleanupTimeout bounds the commands that undo a guard's interception
// (Fetch.disable) and park a page, after the call's own deadline.
const guardCleanupTimeout = 3 * time.Second

// guardFor returns the guard of a call: the one in ctx (guard.NewContext)
// when there is one, else Options.Guard. nil means no guard.
func (t *Tools) guardFor(ctx context.Context) *guard.Guard {
	if g, ok := guard.FromContext(ctx); ok {
		return g
	}
	return t.guard
}

// watch is the in-browser half of the page guard: while it runs, every
// document request of the page (each redirect hop included) is paused by CDP Fetch
// and continued only when the guard allows its URL, else failed with
// BlockedByClient; popups the page opens are held before their first
// request where the backend has a browser session (popupHold: cdp-inspect,
// host-bridge), and everywhere checked as they appear and closed when off
// the list. Refusals are recorded in the windows of the
// tool calls in progress (begin). watch speaks plain CDP on the call's
// session, so it works on every backend (through chrome.debugger on the
// extension).
//
// A per-call watch lives for one call (startWatch, begin, stop). A kept
// Client (Options.KeepClients, or Options.Guard) has one watch for its
// lifetime: the interception is enabled once and stays on between calls,
// where it still blocks off-list documents and closes off-list popups
// before their request leaves; with no call in progress to report it to,
// such a refusal is logged at Warn (host and rule only).
type watch struct {
	g   *guard.Guard
	s   cdp.Session
	log *slog.Logger
	// life bounds the handlers' own commands: the call's ctx for a per-call
	// watch, context.Background() for a kept one (each command also has
	// guardCleanupTimeout).
	life context.Context

	mu   sync.Mutex
	wins map[*window]struct{}
	// self is the page's target id ("" when the backend does not say);
	// discovering, whether Target.setDiscoverTargets was turned on. Both
	// are set before the handlers run.
	self        target.ID
	discovering bool
	// hold keeps the page's popups from loading before they are checked;
	// nil on a backend without a browser session (popups.go).
	hold *popupHold

	wg    sync.WaitGroup
	stops []func()
}

// window is what one tool call learns from its watch: the refusals and
// whether (and when) the page navigated while the call ran.
type window struct {
	op         string
	violations []error
	// docs are the first maxWindowDocs document URLs the page requested
	// during the call (redirect hops included), for egressRefusal.
	docs []string
	// navCh is closed at the first document request or renderer-initiated
	// navigation; settled receives a signal when a frame stops loading.
	navCh   chan struct{}
	navOnce sync.Once
	settled chan struct{}
}

// maxWindowDocs bounds window.docs.
const maxWindowDocs = 32

// begin opens the window of one call; end closes it.
func (w *watch) begin(op string) *window {
	win := &window{op: op, navCh: make(chan struct{}), settled: make(chan struct{}, 1)}
	w.mu.Lock()
	w.wins[win] = struct{}{}
	w.mu.Unlock()
	return win
}

func (w *watch) end(win *window) {
	w.mu.Lock()
	delete(w.wins, win)
	w.mu.Unlock()
}

// each runs fn for every open window.
func (w *watch) each(fn func(*window)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for win := range w.wins {
		fn(win)
	}
}

// startWatch enables the interception on s, with ctx bounding the set-up
// commands and life the handlers'; log, if not nil, receives the refusals
// made while no call is open. It fails when Fetch.enable fails: a
// guard that cannot intercept must not let the call run.
func startWatch(ctx, life context.Context, g *guard.Guard, s cdp.Session, log *slog.Logger, op string) (*watch, error) {
	w := &watch{g: g, s: s, log: log, life: life, wins: map[*window]struct{}{}}
	paused := w.subscribe(fetch.RequestPaused.Method)
	opens := w.subscribe(page.WindowOpen.Method)
	navs := w.subscribe(page.FrameRequestedNavigation.Method)
	stopped := w.subscribe(page.FrameStoppedLoading.Method)
	loaded := w.subscribe(page.LoadEventFired.Method)
	within := w.subscribe(page.NavigatedWithinDocument.Method)
	created := w.subscribe(target.TargetCreated.Method)
	changed := w.subscribe(target.TargetInfoChanged.Method)
	// The set-up commands are independent: they are sent together, so the
	// call waits one round trip for them instead of four.
	var (
		wg                  sync.WaitGroup
		pageErr, fetchErr   error
		info                target.GetTargetInfoResult
		infoErr, discoverEr error
	)
	wg.Add(4)
	go func() {
		defer wg.Done()
		_, pageErr = cdp.Call(ctx, s, page.Enable, page.EnableParams{})
	}()
	go func() {
		defer wg.Done()
		_, fetchErr = cdp.Call(ctx, s, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
			{URLPattern: "*", ResourceType: network.ResourceTypeDocument, RequestStage: fetch.RequestStageRequest},
		}})
	}()
	// Popups: best effort, since not every backend lets a page session
	// discover targets; the document interception does not depend on it.
	go func() {
		defer wg.Done()
		info, infoErr = cdp.Call(ctx, s, target.GetTargetInfo, target.GetTargetInfoParams{})
	}()
	go func() {
		defer wg.Done()
		_, discoverEr = cdp.Call(ctx, s, target.SetDiscoverTargets, target.SetDiscoverTargetsParams{Discover: true})
	}()
	wg.Wait()
	w.discovering = discoverEr == nil
	if err := errors.Join(pageErr, fetchErr); err != nil {
		w.stop(ctx)
		return nil, wrap(op, err)
	}
	if infoErr == nil && info.TargetInfo != nil {
		w.self = info.TargetInfo.TargetID
	}
	w.hold = startHold(ctx, w)
	w.loop(navs, w.onRequestedNavigation)
	for _, ch := range []<-chan []byte{stopped, loaded, within} {
		w.loop(ch, func([]byte) {
			w.each(func(win *window) {
				select {
				case win.settled <- struct{}{}:
				default:
				}
			})
		})
	}
	w.loop(paused, func(raw []byte) { w.onPaused(raw) })
	w.loop(opens, func(raw []byte) { w.onWindowOpen(raw) })
	onTarget := func(raw []byte) {
		var ev struct {
			TargetInfo *target.Info `json:"targetInfo"`
		}
		if w.self != "" && decodeValue(raw, &ev) == nil && ev.TargetInfo != nil {
			w.onTarget(ev.TargetInfo)
		}
	}
	w.loop(created, onTarget)
	w.loop(changed, onTarget)
	return w, nil
}

// actx is the context of one handler action: life without its
// cancellation (a paused request must be answered even once a call's ctx is
// done, else the page waits for it), bounded by guardCleanupTimeout.
func (w *watch) actx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(w.life), guardCleanupTimeout)
}

func (w *watch) subscribe(method string) <-chan []byte {
	in, stop := w.s.Subscribe(method)
	w.stops = append(w.stops, stop)
	out := make(chan []byte, 1)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer close(out)
		for v := range in {
			out <- []byte(v)
		}
	}()
	return out
}

// loop runs fn for every event of ch on its own goroutine, in order.
func (w *watch) loop(ch <-chan []byte, fn func([]byte)) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for raw := range ch {
			fn(raw)
		}
	}()
}

func (w *watch) violate(err error) {
	w.mu.Lock()
	calls := len(w.wins)
	for win := range w.wins {
		win.violations = append(win.violations, err)
	}
	w.mu.Unlock()
	if calls == 0 && w.log != nil {
		var ge *guard.Error
		if errors.As(err, &ge) {
			host := ""
			if u, perr := url.Parse(ge.URL); perr == nil {
				host = u.Host
			}
			w.log.Warn("guard refused what the page did between tool calls", "host", host, "rule", ge.Rule)
		}
	}
}

// firstViolation returns the first refusal recorded in win, or nil.
func (w *watch) firstViolation(win *window) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(win.violations) == 0 {
		return nil
	}
	return win.violations[0]
}

func (w *watch) onPaused(raw []byte) {
	var ev fetch.EventRequestPaused
	if decodeValue(raw, &ev) != nil || ev.Request == nil {
		return
	}
	if w.hold.isHeld(string(ev.FrameID)) {
		// A held popup's request (the Client's subscription sees every
		// session's events): its own handler decides it.
		return
	}
	w.navigated()
	u := ev.Request.URL + ev.Request.URLFragment
	w.each(func(win *window) {
		if len(win.docs) < maxWindowDocs {
			win.docs = append(win.docs, u)
		}
	})
	actx, cancel := w.actx()
	defer cancel()
	if err := w.g.CheckURL(actx, u); err != nil {
		w.violate(err)
		_, _ = cdp.Call(actx, w.s, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
		return
	}
	_, _ = cdp.Call(actx, w.s, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
}

// onWindowOpen checks the URL of a window the page opens (Page.windowOpen);
// an off-list one is a violation and its target is closed once found.
func (w *watch) onWindowOpen(raw []byte) {
	var ev page.EventWindowOpen
	if decodeValue(raw, &ev) != nil || ev.URL == "" || ev.URL == "about:blank" {
		return
	}
	actx, cancel := w.actx()
	defer cancel()
	err := w.g.CheckURL(actx, ev.URL)
	if err == nil {
		return
	}
	w.violate(err)
	if w.self == "" {
		return
	}
	list, lerr := cdp.Call(actx, w.s, target.GetTargets, target.GetTargetsParams{})
	if lerr != nil {
		return
	}
	for _, info := range list.TargetInfos {
		if info.Type == "page" && info.OpenerID == w.self {
			w.onTarget(info)
		}
	}
}

func (w *watch) onTarget(info *target.Info) {
	if info.Type != "page" || info.OpenerID == "" || info.OpenerID != w.self || info.URL == "" || info.URL == "about:blank" {
		return
	}
	if w.hold.isHeld(string(info.TargetID)) {
		// The hold decides a held popup's requests, and closes it: a late
		// report of its URL (a kept watch outlives the call that opened
		// it) must not fail the next call.
		return
	}
	actx, cancel := w.actx()
	defer cancel()
	if err := w.g.CheckURL(actx, info.URL); err != nil {
		w.violate(err)
		_, _ = cdp.Call(actx, w.s, target.CloseTarget, target.CloseTargetParams{TargetID: info.TargetID})
	}
}

// onRequestedNavigation handles a navigation the page asked for
// (Page.frameRequestedNavigation: a link, a form submission, a location
// assignment). The main frame's http and https ones are checked at once: an
// off-list URL is recorded before the windows learn of the navigation, so a
// call sees it even when its settle ends before the document request does
// (a kept watch can see a late signal of the previous page). The
// interception still refuses the request itself, and checks each redirect
// hop; other schemes and subframes are left to it (a javascript: link runs
// script, it loads no document).
func (w *watch) onRequestedNavigation(raw []byte) {
	var ev page.EventFrameRequestedNavigation
	if w.self != "" && decodeValue(raw, &ev) == nil && string(ev.FrameID) == string(w.self) {
		if u, err := url.Parse(ev.URL); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
			actx, cancel := w.actx()
			err := w.g.CheckURL(actx, ev.URL)
			cancel()
			if err != nil {
				// Only noted: the refusal itself is the Fetch pause's.
				w.each(func(win *window) { win.violations = append(win.violations, err) })
			}
		}
	}
	w.navigated()
}

func (w *watch) navigated() {
	w.each(func(win *window) { win.navOnce.Do(func() { close(win.navCh) }) })
}

// settle waits, after an input action, for a navigation the action started
// to be decided: a link activation, a form submission or a location
// assignment reaches the browser within two turns of the page's task loop.
// If one did, it waits for a frame to stop loading (or ctx).
func (win *window) settle(ctx context.Context, p *Page) {
	if !turns(ctx, p, win.op, win.navCh) {
		return
	}
	select {
	case <-ctx.Done():
	case <-win.settled:
	}
}

// turns lets the page run two turns of its task loop and reports whether a
// navigation was requested meanwhile (nav closed). A page that navigates
// may never answer (its document is unloaded or frozen), so the first of
// the two decides.
func turns(ctx context.Context, p *Page, op string, nav <-chan struct{}) bool {
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- p.evaluate(ectx, op, `new Promise(r => setTimeout(() => setTimeout(r, 0), 0))`, true, nil)
	}()
	select {
	case err := <-done:
		select {
		case <-nav:
			return true
		default:
			return err != nil && ctx.Err() == nil
		}
	case <-nav:
		cancel()
		<-done
		return true
	}
}

// awaitNavigation runs action and, when it made the page request a
// navigation (Page.frameRequestedNavigation), waits until a frame stops
// loading or ctx ends.
func (p *Page) awaitNavigation(ctx context.Context, op string, action func() error) error {
	if _, err := cdp.Call(ctx, p.s, page.Enable, page.EnableParams{}); err != nil {
		return wrap(op, err)
	}
	navs, stopNavs := p.s.Subscribe(page.FrameRequestedNavigation.Method)
	defer stopNavs()
	stops, stop := p.s.Subscribe(page.FrameStoppedLoading.Method)
	defer stop()
	loads, stopLoads := p.s.Subscribe(page.LoadEventFired.Method)
	defer stopLoads()
	if err := action(); err != nil {
		return err
	}
	nav := make(chan struct{})
	go func() {
		if _, ok := <-navs; ok {
			close(nav)
		}
	}()
	if !turns(ctx, p, op, nav) {
		return nil
	}
	select {
	case <-ctx.Done():
		return &Error{Op: op, Code: CodeTimeout, Message: "the page did not finish loading before the deadline", Err: ctx.Err()}
	case <-stops:
	case <-loads:
	}
	return nil
}

// stop ends the interception and waits for its goroutines. The popup
// hold's off (browser session) and the page's commands are independent and
// sent together, so the call waits one round trip for them.
func (w *watch) stop(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), guardCleanupTimeout)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		w.hold.stop(cctx)
	}()
	go func() {
		defer wg.Done()
		_, _ = cdp.Call(cctx, w.s, fetch.Disable, cdp.Empty{})
	}()
	if w.discovering {
		_, _ = cdp.Call(cctx, w.s, target.SetDiscoverTargets, target.SetDiscoverTargetsParams{Discover: false})
	}
	wg.Wait()
	for _, s := range w.stops {
		s()
	}
	w.wg.Wait()
}

// egressRefusal returns the refusal g's egress proxy made for a document
// the page requested during win (Guard.EgressRefusal), or nil.
func (w *watch) egressRefusal(g *guard.Guard, win *window) error {
	w.mu.Lock()
	docs := append([]string(nil), win.docs...)
	w.mu.Unlock()
	for _, u := range docs {
		if err := g.EgressRefusal(u); err != nil {
			return err
		}
	}
	return nil
}

// currentURL reads the page's URL.
func (p *Page) currentURL(ctx context.Context, op string) (string, error) {
	var u string
	err := p.evaluate(ctx, op, `location.href`, false, &u)
	return u, err
}

// park loads about:blank, best effort within its own short deadline.
func (p *Page) park(ctx context.Context) {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), guardCleanupTimeout)
	defer cancel()
	_, _ = cdp.Call(pctx, p.s, page.Navigate, page.NavigateParams{URL: "about:blank"})
}

// pageDocScript reads the page's URL and its document's HTTP status (0
// when unknown); the page's own script cannot make it throw.
const pageDocScript = `(() => {
	let status = 0;
	try { status = performance.getEntriesByType("navigation")[0].responseStatus; } catch (e) {}
	return {url: location.href, status: typeof status === "number" ? status : 0};
})()`

// egressRefusedEntry returns g's egress refusal of the URL the page's
// current history entry failed to load (an error page's own URL is
// chrome-error://), or nil.
func (p *Page) egressRefusedEntry(ctx context.Context, g *guard.Guard) error {
	h, err := cdp.Call(ctx, p.s, page.GetNavigationHistory, cdp.Empty{})
	if err != nil || h.CurrentIndex < 0 || h.CurrentIndex >= int64(len(h.Entries)) || h.Entries[h.CurrentIndex] == nil {
		return nil
	}
	return g.EgressRefusal(h.Entries[h.CurrentIndex].URL)
}

// checkPage checks the page's current URL; an off-list page, or the 403
// page of a request g's egress proxy refused (Guard.EgressRefusal), is
// parked and the refusal returned; an error page whose URL the proxy
// refused is refused with the proxy's rule. The document's HTTP status is read
// with the URL, in the same evaluation.
func (p *Page) checkPage(ctx context.Context, g *guard.Guard, op string) error {
	var doc struct {
		URL    string `json:"url"`
		Status int    `json:"status"`
	}
	if err := p.evaluate(ctx, op, pageDocScript, false, &doc); err != nil {
		return err
	}
	err := g.CheckURL(ctx, doc.URL)
	switch {
	case err == nil && doc.Status == http.StatusForbidden:
		err = g.EgressRefusal(doc.URL)
	case err != nil && strings.HasPrefix(doc.URL, "chrome-error:"):
		if v := p.egressRefusedEntry(ctx, g); v != nil {
			err = v
		}
	}
	if err != nil {
		p.park(ctx)
		return guardErr(op, err)
	}
	return nil
}

// guardErr turns a guard refusal into the tools' *Error with the same code.
func guardErr(op string, err error) error {
	var ge *guard.Error
	if !errors.As(err, &ge) {
		return wrap(op, err)
	}
	return &Error{Op: op, Code: ge.Code, Message: "refused by the browser policy", Err: err}
}

// navigates lists the ops after which a navigation the page started is
// awaited before the after-check.
var navigates = map[string]bool{"login": true, "click": true, "press_key": true, "type": true, "select_option": true}

// guarded runs fn under g: the in-browser interception for the whole
// call, the page URL checked before (except for navigate, which leaves the
// page) and after, a navigation started by an input action awaited, and an
// off-list page parked on about:blank. A page or navigation g's egress
// proxy refused (Guard.EgressRefusal: its 403 page, or a navigation that
// failed on its refused tunnel) is refused as well, with the proxy's rule.
// A refusal wins over fn's own result.
//
// w is the kept Client's watch (Options.KeepClients), already running; nil
// starts one for this call and stops it at the end.
func guarded[R any](ctx context.Context, g *guard.Guard, op string, p *Page, w *watch, act func(context.Context, *Page, *guard.Guard) error, fn func(ctx context.Context, p *Page) (R, error)) (R, error) {
	var zero R
	if w == nil {
		var err error
		if w, err = startWatch(ctx, ctx, g, p.base, nil, op); err != nil {
			return zero, err
		}
		defer w.stop(ctx)
	}
	win := w.begin(op)
	defer w.end(win)
	if op != "navigate" {
		if err := p.checkPage(ctx, g, op); err != nil {
			return zero, err
		}
	}
	if act != nil {
		if err := act(ctx, p, g); err != nil {
			return zero, err
		}
	}
	res, ferr := fn(ctx, p)
	if navigates[op] && ferr == nil {
		win.settle(ctx, p)
	}
	if v := w.firstViolation(win); v != nil {
		if u, err := p.currentURL(ctx, op); err != nil || g.CheckURL(ctx, u) != nil {
			p.park(ctx)
		}
		return zero, guardErr(op, v)
	}
	if ferr != nil {
		// A navigation that failed because the egress proxy refused its
		// tunnel (or a redirect hop's) is that refusal.
		if errors.Is(ferr, ErrNavigationFailed) {
			if v := w.egressRefusal(g, win); v != nil {
				p.park(ctx)
				return zero, guardErr(op, v)
			}
		}
		return zero, ferr
	}
	if err := p.checkPage(ctx, g, op); err != nil {
		// The page may be on the error page of a request the interception
		// refused while the settle above ended on an older page's signal:
		// that refusal was recorded before the request was failed, so it
		// is known now, and it names the URL and rule the agent asked for
		// (not chrome-error://). The same holds for a request the egress
		// proxy refused.
		if v := w.firstViolation(win); v != nil {
			return zero, guardErr(op, v)
		}
		if v := w.egressRefusal(g, win); v != nil {
			return zero, guardErr(op, v)
		}
		return zero, err
	}
	return res, nil
}

// The guard codes a guarded call fails with; the wrapped error is the
// *guard.Error naming the parameter, URL and rule.
const (
	CodeForbidden            = guard.CodeForbidden
	CodeValidationFailed     = guard.CodeValidationFailed
	CodeFeatureNotConfigured = guard.CodeFeatureNotConfigured
)

// Sentinels of the guard codes, for errors.Is.
var (
	ErrForbidden            = &Error{Code: CodeForbidden}
	ErrValidationFailed     = &Error{Code: CodeValidationFailed}
	ErrFeatureNotConfigured = &Error{Code: CodeFeatureNotConfigured}
)
