package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
)

// WaitForInput is the browser_wait_for tool input. Exactly one of Selector,
// Text and Navigation must be set.
type WaitForInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	// TimeoutMs bounds the wait; 0 means DefaultWaitTimeout.
	TimeoutMs int `json:"timeout_ms,omitempty"`
	// Selector waits until an element matches this CSS selector.
	Selector string `json:"selector,omitempty"`
	// Text waits until the page's visible text contains this string.
	Text string `json:"text,omitempty"`
	// Navigation waits for a main-frame navigation to load. With URLContains,
	// a page already loaded at a matching URL satisfies it at once.
	Navigation  bool   `json:"navigation,omitempty"`
	URLContains string `json:"url_contains,omitempty"`
}

// WaitForResult is what WaitFor reports.
type WaitForResult struct {
	// Matched is "selector", "text" or "navigation".
	Matched string `json:"matched"`
	URL     string `json:"url"`
	Call
}

// maxWaitRetries bounds how often a DOM wait is restarted after the page's
// document was replaced (each restart is caused by a navigation, never by a
// timer).
const maxWaitRetries = 50

// waitScript resolves true as soon as test() holds. It is event-driven inside
// the page: a MutationObserver on the whole document re-runs the test on
// every DOM change, so nothing polls. A page-side timer resolves false at the
// deadline so the promise never outlives the call.
const waitScript = `(async (sel, text, ms) => {
	const test = () => sel ? document.querySelector(sel) !== null
		: (document.body !== null && document.body.innerText.includes(text));
	if (test()) return true;
	return await new Promise(resolve => {
		const obs = new MutationObserver(() => { if (test()) { obs.disconnect(); clearTimeout(t); resolve(true); } });
		obs.observe(document, {childList: true, subtree: true, characterData: true, attributes: sel !== ''});
		const t = setTimeout(() => { obs.disconnect(); resolve(false); }, ms);
	});
})(%s, %s, %d)`

// WaitFor waits until a selector matches, a text appears, or a navigation
// loads.
//
// Selector and text waits run one Runtime.evaluate with awaitPromise whose
// promise a MutationObserver resolves in the page (event-driven, no polling).
// When the document is replaced meanwhile (a click that submits a form), the
// browser rejects the evaluation and the wait restarts on the new document, at
// most maxWaitRetries times. Navigation waits use Page.frameNavigated and
// Page.loadEventFired. The deadline passing is CodeTimeout.
func (p *Page) WaitFor(ctx context.Context, in WaitForInput) (WaitForResult, error) {
	const op = "wait_for"
	n := 0
	for _, set := range []bool{in.Selector != "", in.Text != "", in.Navigation || in.URLContains != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return WaitForResult{}, invalidInput(op, "exactly one of selector, text and navigation/url_contains is required")
	}
	if in.Navigation || in.URLContains != "" {
		return p.waitNavigation(ctx, op, in.URLContains)
	}
	matched := "selector"
	if in.Text != "" {
		matched = "text"
	}
	sel, _ := json.Marshal(in.Selector)
	text, _ := json.Marshal(in.Text)
	for attempt := 0; ; attempt++ {
		ms := int64(10_000)
		if dl, ok := ctx.Deadline(); ok {
			ms = time.Until(dl).Milliseconds()
		}
		if ms <= 0 {
			return WaitForResult{}, waitTimeout(op, in, nil)
		}
		var ok bool
		err := p.evaluate(ctx, op, fmt.Sprintf(waitScript, sel, text, ms), true, &ok)
		switch {
		case err == nil && ok:
			var url string
			if err := p.evaluate(ctx, op, `location.href`, false, &url); err != nil {
				return WaitForResult{}, err
			}
			return WaitForResult{Matched: matched, URL: url}, nil
		case err == nil:
			return WaitForResult{}, waitTimeout(op, in, nil)
		case ctx.Err() != nil:
			return WaitForResult{}, waitTimeout(op, in, err)
		case errors.Is(err, browserbackend.ErrProtocol) && attempt < maxWaitRetries:
			// The execution context went away (navigation); wait on the new
			// document.
			continue
		case errors.Is(err, ErrPageError) && in.Selector != "":
			return WaitForResult{}, invalidInput(op, "bad selector: "+err.Error())
		default:
			return WaitForResult{}, err
		}
	}
}

func waitTimeout(op string, in WaitForInput, cause error) error {
	what := "selector " + in.Selector
	if in.Text != "" {
		what = fmt.Sprintf("text %q", in.Text)
	}
	return &Error{Op: op, Code: CodeTimeout, Message: what + " did not appear before the deadline", Err: cause}
}

func (p *Page) waitNavigation(ctx context.Context, op, urlContains string) (WaitForResult, error) {
	if _, err := cdp.Call(ctx, p.s, page.Enable, page.EnableParams{}); err != nil {
		return WaitForResult{}, wrap(op, err)
	}
	navs, stopNavs := p.s.Subscribe(page.FrameNavigated.Method)
	defer stopNavs()
	loads, stopLoads := p.s.Subscribe(page.LoadEventFired.Method)
	defer stopLoads()
	detaches, stopDetaches := p.s.Subscribe(browserbackend.MethodTargetDetached)
	defer stopDetaches()
	var url string
	committed := false
	if urlContains != "" {
		var st struct{ URL, State string }
		if err := p.evaluate(ctx, op, `({URL: location.href, State: document.readyState})`, false, &st); err != nil {
			return WaitForResult{}, err
		}
		if strings.Contains(st.URL, urlContains) {
			if st.State == "complete" {
				return WaitForResult{Matched: "navigation", URL: st.URL}, nil
			}
			// Committed before the subscriptions (its frameNavigated is
			// gone) but still loading: its load event is still to come.
			committed, url = true, st.URL
		}
	}
	for {
		select {
		case <-ctx.Done():
			msg := "no navigation loaded before the deadline"
			if urlContains != "" {
				msg = fmt.Sprintf("no navigation to a URL containing %q loaded before the deadline", urlContains)
			}
			return WaitForResult{}, &Error{Op: op, Code: CodeTimeout, Message: msg, Err: ctx.Err()}
		case raw, ok := <-navs:
			if !ok {
				return WaitForResult{}, closedWhileWaiting(op)
			}
			var ev page.EventFrameNavigated
			if decodeValue(raw, &ev) != nil || ev.Frame == nil || ev.Frame.ParentID != "" {
				continue
			}
			if urlContains == "" || strings.Contains(ev.Frame.URL, urlContains) {
				committed, url = true, ev.Frame.URL
				// The two subscriptions are separate channels, so this
				// document's load event may already have been read (and
				// skipped): ask the page once.
				var state string
				if err := p.evaluate(ctx, op, `document.readyState`, false, &state); err == nil && state == "complete" {
					return WaitForResult{Matched: "navigation", URL: url}, nil
				}
			}
		case _, ok := <-detaches:
			if !ok {
				detaches = nil
				continue
			}
			if err := p.sessionGone(ctx, op); err != nil {
				return WaitForResult{}, err
			}
		case _, ok := <-loads:
			if !ok {
				return WaitForResult{}, closedWhileWaiting(op)
			}
			if committed {
				return WaitForResult{Matched: "navigation", URL: url}, nil
			}
		}
	}
}

// sessionGone runs after a Target.detachedFromTarget event while an
// operation waits for page events: the event may be about the
// page's own session (its tab was closed), whose events then never come, or
// about another one. One cheap command tells which: it returns that
// command's error (the backend's session error) or nil when the page still
// answers.
func (p *Page) sessionGone(ctx context.Context, op string) error {
	var v int
	return p.evaluate(ctx, op, `1`, false, &v)
}
