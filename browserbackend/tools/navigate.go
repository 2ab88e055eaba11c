package tools

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/page"

	"github.com/browserchain/browserchain/browserbackend"
)

// NavigateInput is the browser_navigate tool input.
type NavigateInput struct {
	// BrowserMode is the caller's browser_mode; "" means auto.
	BrowserMode string `json:"browser_mode,omitempty"`
	// URL to load: http, https, about:blank, or data:.
	URL string `json:"url"`
	// TimeoutMs bounds the whole call; 0 means DefaultNavigateTimeout.
	TimeoutMs int `json:"timeout_ms,omitempty"`
	// NewTab opens a new tab of the conversation's own and makes it the
	// current one; the previous tabs stay the conversation's (Tabs lists,
	// selects and closes them). Ignored by backends without
	// browserbackend.CapTabs.
	NewTab bool `json:"new_tab,omitempty"`
	// UseActiveTab (extension and cdp-inspect backends) pins the
	// user's tab instead of opening a dedicated one (on cdp-inspect: the
	// first real page Target.getTargets lists that no other conversation
	// holds); Close only detaches such a tab. Ignored by the other backends.
	UseActiveTab bool `json:"use_active_tab,omitempty"`
	// WaitUntil is what the call waits for after the navigation commits:
	// WaitLoad ("load", the default when empty: the load event, every
	// subresource included), WaitDOMContentLoaded ("domcontentloaded": the
	// document is parsed; images may still load) or WaitNone ("none":
	// return at commit). Anything else is CodeInvalidInput.
	WaitUntil string `json:"wait_until,omitempty"`
	// SessionInput applies when this call opens the conversation's
	// browser (see SessionInput).
	SessionInput
}

// The NavigateInput.WaitUntil values.
const (
	WaitLoad             = "load"
	WaitDOMContentLoaded = "domcontentloaded"
	WaitNone             = "none"
)

func checkWaitUntil(op, w string) error {
	switch w {
	case "", WaitLoad, WaitDOMContentLoaded, WaitNone:
		return nil
	}
	return invalidInput(op, "wait_until must be load, domcontentloaded or none, got "+strconv.Quote(w))
}

// NavigateResult is what Navigate reports.
type NavigateResult struct {
	// URL is the page's URL after the load (after any HTTP redirects).
	URL   string `json:"url"`
	Title string `json:"title"`
	// Redirected is true when URL differs from the requested URL.
	Redirected bool `json:"redirected,omitempty"`
	// SameDocument is true for a fragment navigation (no load event).
	SameDocument bool `json:"sameDocument,omitempty"`
	// StillLoading is true when the call returned before the page finished
	// loading: WaitUntil was "none" or "domcontentloaded", or the deadline
	// passed after the document had committed (a stalled image or script).
	// URL and Title are then the committed document's, which Extract and
	// Snapshot can already read.
	StillLoading bool `json:"stillLoading,omitempty"`
	// ReadyState is document.readyState when the result was read
	// ("loading", "interactive" or "complete").
	ReadyState string `json:"readyState,omitempty"`
	Call
}

func checkURL(op, raw string) error {
	if strings.TrimSpace(raw) == "" {
		return invalidInput(op, "url is required")
	}
	if len(raw) > MaxURLBytes {
		return invalidInput(op, fmt.Sprintf("url is %d bytes; Chromium loads at most %d", len(raw), MaxURLBytes))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return invalidInput(op, "malformed url: "+err.Error())
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		if u.Host == "" {
			return invalidInput(op, "url has no host")
		}
	case "about", "data":
	default:
		return invalidInput(op, "url scheme must be http, https, about or data, got "+u.Scheme)
	}
	return nil
}

// Navigate loads in.URL in the page and waits for it to load.
//
// Waiting is event-driven (CDP Page domain): with lifecycle events enabled
// it subscribes to Page.lifecycleEvent and Page.frameStoppedLoading before
// Page.navigate and returns at the lifecycle event in.WaitUntil names ("load"
// by default, "DOMContentLoaded") of the frame and loader id Page.navigate
// answered, or at the frame's frameStoppedLoading once its document is
// complete, or at commit for "none". Page.loadEventFired names no
// frame, so it is never used: on a client whose events name no tab, another
// tab's load must not end this navigation. HTTP redirects are followed by
// the browser inside the one navigation; the result carries the final URL.
// A navigation the browser fails (errorText) is CodeNavigationFailed. A deadline that passes after the document
// committed is not an error: the result has the document's URL and title,
// StillLoading set and the page keeps loading; a deadline before commit is
// CodeTimeout (the navigation is stopped).
func (p *Page) Navigate(ctx context.Context, in NavigateInput) (NavigateResult, error) {
	const op = "navigate"
	if err := checkURL(op, in.URL); err != nil {
		return NavigateResult{}, err
	}
	if err := checkWaitUntil(op, in.WaitUntil); err != nil {
		return NavigateResult{}, err
	}
	// Subscribe before navigating so the event cannot be missed
	// (cdp.Session.Subscribe buffers from the moment it returns).
	lifecycle, stopLifecycle := p.s.Subscribe(page.LifecycleEvent.Method)
	defer stopLifecycle()
	stops, stopStops := p.s.Subscribe(page.FrameStoppedLoading.Method)
	defer stopStops()
	want := "load"
	if in.WaitUntil == WaitDOMContentLoaded {
		want = "DOMContentLoaded"
	}

	nav, err := p.startNavigation(ctx, in.URL)
	if err != nil {
		if ctx.Err() != nil {
			// Page.navigate answers at commit; a response that never comes
			// keeps it, and the tab, waiting.
			p.stopLoading(ctx)
		}
		return NavigateResult{}, wrap(op, err)
	}
	if nav.ErrorText != "" {
		return NavigateResult{}, &Error{Op: op, Code: CodeNavigationFailed, Message: nav.ErrorText + " (" + in.URL + ")"}
	}
	res := NavigateResult{SameDocument: nav.LoaderID == "" && !nav.IsDownload}
	readCtx := ctx
	if nav.LoaderID != "" && in.WaitUntil != WaitNone {
		still, err := p.awaitLoad(ctx, nav, want, lifecycle, stops, in.URL)
		if err != nil {
			return NavigateResult{}, err
		}
		if still {
			// Page.navigate answered, so the document has committed:
			// report it, still loading, rather than an empty failure.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stillLoadingReadTimeout)
			defer cancel()
			readCtx, res.StillLoading = rctx, true
		}
	}
	var loc struct {
		URL        string `json:"url"`
		Title      string `json:"title"`
		ReadyState string `json:"readyState"`
	}
	if err := p.evaluate(readCtx, op, `({url: location.href, title: document.title, readyState: document.readyState})`, false, &loc); err != nil {
		return NavigateResult{}, err
	}
	res.URL, res.Title, res.ReadyState = loc.URL, loc.Title, loc.ReadyState
	res.Redirected = !sameURL(loc.URL, in.URL)
	if !res.SameDocument && loc.ReadyState != "complete" {
		res.StillLoading = true
	}
	return res, nil
}

// awaitLoad waits, after Page.navigate answered nav, for the lifecycle event
// want (or "load") of nav's frame and loader, or for the frame's
// frameStoppedLoading once its document is complete. still reports that
// ctx's deadline passed first (the document has committed); a cancelled ctx
// stops the loading and is CodeTimeout; both event streams closing is the
// backend's closed error.
func (p *Page) awaitLoad(ctx context.Context, nav page.NavigateResult, want string, lifecycle, stops <-chan jsonv2.Value, url string) (still bool, err error) {
	const op = "navigate"
	for {
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return true, nil
			}
			p.stopLoading(ctx)
			return false, &Error{Op: op, Code: CodeTimeout,
				Message: "the navigation was cancelled before the page finished loading (loading stopped): " + url, Err: ctx.Err()}
		case raw, ok := <-lifecycle:
			if !ok {
				if lifecycle = nil; stops == nil {
					return false, closedWhileWaiting(op)
				}
				continue
			}
			// The frame and loader ids tie the event to this document:
			// another tab's, or the previous document's, never matches.
			var ev page.EventLifecycleEvent
			if decodeValue(raw, &ev) == nil && (ev.Name == want || ev.Name == "load") &&
				ev.FrameID == nav.FrameID && ev.LoaderID == nav.LoaderID {
				return false, nil
			}
		case raw, ok := <-stops:
			if !ok {
				if stops = nil; lifecycle == nil {
					return false, closedWhileWaiting(op)
				}
				continue
			}
			// frameStoppedLoading names the frame but not the loader: it
			// may be the previous document's, so the document is asked.
			var ev page.EventFrameStoppedLoading
			if decodeValue(raw, &ev) == nil && ev.FrameID == nav.FrameID && p.reached(ctx, WaitLoad) {
				return false, nil
			}
		}
	}
}

// startNavigation enables the Page domain and its lifecycle events and
// sends Page.navigate to target, answering with its reply.
//
// When a step fails because the page went away (CodePageLost,
// CodePageEvicted or CodeTargetCrashed, whichever command first sees it), it
// loads about:blank — a crashed tab gets a new renderer, the local backend
// opens a fresh page — and runs the sequence again, at most three times, since the
// fresh page can be dead too. After such a recovery, a navigation Chromium
// aborts (errorText net::ERR_ABORTED, not a download) is sent once more: a
// revived tab can abort the first navigation that follows it. Any other
// outcome, an abort without a crash before it included, is returned as is.
func (p *Page) startNavigation(ctx context.Context, target string) (page.NavigateResult, error) {
	crashes, aborts := 0, 0
	for {
		nav, err := p.tryNavigation(ctx, target)
		switch {
		case ctx.Err() != nil:
			return nav, err
		case err != nil && pageWentAway(err) && crashes < 3:
			crashes++
			if err := p.loadBlank(ctx); err != nil {
				return page.NavigateResult{}, err
			}
		case err == nil && crashes > 0 && aborts == 0 && nav.ErrorText == errAborted && !nav.IsDownload:
			aborts++
		default:
			return nav, err
		}
	}
}

// errAborted is the errorText of a navigation Chromium cancelled, for
// another navigation or a download among other reasons.
const errAborted = "net::ERR_ABORTED"

// loadBlank loads about:blank in a page that went away (see
// startNavigation). The page that load lands on can be dead too — on
// local a fresh page may be the spare, whose renderer died with the others
// before Playwright reported it — so a crash or loss seen by it gets one
// more load, which then lands on a page of its own.
func (p *Page) loadBlank(ctx context.Context) error {
	_, err := cdp.Call(ctx, p.s, page.Navigate, page.NavigateParams{URL: "about:blank"})
	if err != nil && ctx.Err() == nil && pageWentAway(err) {
		_, err = cdp.Call(ctx, p.s, page.Navigate, page.NavigateParams{URL: "about:blank"})
	}
	return err
}

func (p *Page) tryNavigation(ctx context.Context, target string) (page.NavigateResult, error) {
	if _, err := cdp.Call(ctx, p.s, page.Enable, page.EnableParams{}); err != nil {
		return page.NavigateResult{}, err
	}
	if _, err := cdp.Call(ctx, p.s, page.SetLifecycleEventsEnabled, page.SetLifecycleEventsEnabledParams{Enabled: true}); err != nil {
		return page.NavigateResult{}, err
	}
	return cdp.Call(ctx, p.s, page.Navigate, page.NavigateParams{URL: target})
}

// pageWentAway reports whether err says the conversation's page is gone or
// its renderer crashed (see startNavigation).
func pageWentAway(err error) bool {
	return errors.Is(err, browserbackend.ErrPageLost) || errors.Is(err, browserbackend.ErrPageEvicted) ||
		errors.Is(err, browserbackend.ErrTargetCrashed)
}

// reached reports whether the committed document has got as far as w
// (document.readyState "complete" for WaitLoad, not "loading" for
// WaitDOMContentLoaded). An event can be stale — the previous document's,
// relayed late by a hub client on a loaded machine — so the document itself
// is asked before the wait ends; an event that was not this document's
// keeps the wait going. A failed check ends the wait (the read that follows
// reports the error).
func (p *Page) reached(ctx context.Context, w string) bool {
	var state string
	if err := p.evaluate(ctx, "navigate", `document.readyState`, false, &state); err != nil {
		return true
	}
	if w == WaitDOMContentLoaded {
		return state != "loading"
	}
	return state == "complete"
}

// stillLoadingReadTimeout bounds reading the URL and title of a document
// that was still loading at the call's deadline.
const stillLoadingReadTimeout = 2 * time.Second

// stopLoadingTimeout bounds the Page.stopLoading sent after a navigate timed
// out.
const stopLoadingTimeout = 2 * time.Second

// stopLoading stops a navigation that outlived its call (Page.stopLoading),
// best effort: a page left with a pending navigation answers new DevTools
// sessions only once it commits, which may be never.
func (p *Page) stopLoading(ctx context.Context) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopLoadingTimeout)
	defer cancel()
	_, _ = cdp.Call(sctx, p.s, page.StopLoading, cdp.Empty{})
}

func closedWhileWaiting(op string) error {
	return &Error{Op: op, Code: CodeBackend, Message: "the backend stopped delivering events while waiting"}
}

// sameURL compares two URLs after the browser's normalisation of an empty
// path to "/".
func sameURL(a, b string) bool {
	if a == b {
		return true
	}
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil {
		return false
	}
	for _, u := range []*url.URL{ua, ub} {
		if u.Path == "" && (u.Scheme == "http" || u.Scheme == "https") {
			u.Path = "/"
		}
		u.Host = strings.ToLower(u.Host)
		u.Scheme = strings.ToLower(u.Scheme)
	}
	return ua.String() == ub.String()
}
