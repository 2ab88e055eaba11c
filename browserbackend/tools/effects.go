package tools

import (
	"context"
	"errors"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/page"
)

// ActionNavigation is a navigation an input action started (a link, a
// form's submit, a script reacting to the input).
type ActionNavigation struct {
	URL   string `json:"url"`
	Title string `json:"title"`
	// SameDocument is a fragment or history.pushState navigation.
	SameDocument bool `json:"sameDocument,omitempty"`
	// StillLoading: the call's deadline passed after the new document
	// committed and before its load event.
	StillLoading bool `json:"stillLoading,omitempty"`
}

// Effects is what an input action caused in the page, beside a dialog
// (Call.Dialog).
type Effects struct {
	// Navigated is the main frame's navigation the action started, awaited
	// to its load event; nil when none started.
	Navigated *ActionNavigation `json:"navigated,omitempty"`
	// Opened lists the URLs of the windows and tabs the action opened
	// (window.open, target=_blank).
	Opened []string `json:"opened,omitempty"`
	// Downloads are the downloads the action started, awaited to their end
	// (bounded by the call's deadline) and saved where the backend can.
	Downloads []Download `json:"downloads,omitempty"`
	// FileChooser is the file chooser a click opened (intercepted: no
	// native dialog shows); FileUpload on the clicked element answers it.
	FileChooser *FileChooser `json:"fileChooser,omitempty"`
}

// FileChooser is a file chooser the page opened.
type FileChooser struct {
	// Multiple: the chooser takes several files.
	Multiple bool `json:"multiple,omitempty"`

	// node is the file input that opened it (0: not an input, e.g.
	// showOpenFilePicker).
	node cdp.BackendNodeID
}

// effects watches the page for what an input action causes. Open it before
// the input goes out, settle it after.
type effects struct {
	requested, starts, navigated, within, stops, windows <-chan jsonv2.Value
	stop                                                 []func()
	// rtt is the browser's round trip at the watch's start; the settle
	// window stretches with it (a loaded machine answers, and runs the
	// page's tasks, slower).
	rtt time.Duration

	// Downloads (see watchDownloads): the event streams (nil when the
	// backend does not report downloads), whether they are saved, where,
	// and whether the browser is the runtime's own; begun collects them.
	dlBegin, dlProgress <-chan jsonv2.Value
	saveDownloads       bool
	downloadDir         string
	ownBrowser          bool
	begun               []browser.EventDownloadWillBegin

	// choosers receives Page.fileChooserOpened while the watch intercepts
	// file choosers (watchClick); nil otherwise. p is the watched page.
	choosers <-chan jsonv2.Value
	p        *Page
}

// watchClick is watchEffects for a click: besides, it intercepts the file
// choosers the click opens (Page.setInterceptFileChooserDialog, turned off
// again at close), so that none shows as a native dialog and the click can
// report it. A backend that refuses the interception gets the plain watch.
func (p *Page) watchClick(ctx context.Context, op string) (*effects, error) {
	e, err := p.watchEffects(ctx, op)
	if err != nil {
		return nil, err
	}
	ch, stop := p.s.Subscribe(page.FileChooserOpened.Method)
	if _, err := cdp.Call(ctx, p.s, page.SetInterceptFileChooserDialog, page.SetInterceptFileChooserDialogParams{Enabled: true}); err != nil {
		stop()
		return e, nil
	}
	e.choosers, e.p = ch, p
	e.stop = append(e.stop, stop)
	return e, nil
}

func (p *Page) watchEffects(ctx context.Context, op string) (*effects, error) {
	e := &effects{}
	for _, sub := range []struct {
		ch     *<-chan jsonv2.Value
		method string
	}{
		{&e.requested, page.FrameRequestedNavigation.Method},
		{&e.starts, page.FrameStartedLoading.Method},
		{&e.navigated, page.FrameNavigated.Method},
		{&e.within, page.NavigatedWithinDocument.Method},
		{&e.stops, page.FrameStoppedLoading.Method},
		{&e.windows, page.WindowOpen.Method},
	} {
		ch, stop := p.s.Subscribe(sub.method)
		*sub.ch = ch
		e.stop = append(e.stop, stop)
	}
	// The Page domain must be on for the events; on a session that has it
	// already this is one cheap round trip.
	start := time.Now()
	if _, err := cdp.Call(ctx, p.s, page.Enable, page.EnableParams{}); err != nil {
		e.close()
		return nil, wrap(op, err)
	}
	e.rtt = time.Since(start)
	p.watchDownloads(ctx, e)
	return e, nil
}

// downloadBegan records a download the page started; it reports whether
// one of frames started it (any frame when frames is nil).
func (e *effects) downloadBegan(raw jsonv2.Value, frames map[cdp.FrameID]bool) bool {
	var ev browser.EventDownloadWillBegin
	if decodeValue(raw, &ev) != nil {
		return false
	}
	e.begun = append(e.begun, ev)
	return frames == nil || frames[ev.FrameID]
}

func (e *effects) close() {
	for _, stop := range e.stop {
		stop()
	}
	if e.choosers != nil {
		e.choosers = nil
		ctx, cancel := context.WithTimeout(context.Background(), guardCleanupTimeout)
		defer cancel()
		_, _ = cdp.Call(ctx, e.p.s, page.SetInterceptFileChooserDialog, page.SetInterceptFileChooserDialogParams{Enabled: false})
	}
}

// settleWindow is how long an action waits, after its input was answered,
// for a navigation or a window it may have started: a form's submission
// and a script's navigation reach the browser in a task of their own,
// after the input's answer. Chrome DevTools MCP waits as long.
const settleWindow = 100 * time.Millisecond

// settle finds out what the input caused: it waits up to settleWindow,
// stretched by four of the browser's round trips (on events, returning at
// the first), for a navigation of the page or a new window; with a
// navigation requested it then waits — bounded by ctx — for the frame to
// commit and, for the main frame, load. A deadline after the commit reports
// the document, still loading.
func (e *effects) settle(ctx context.Context, p *Page, op string) (Effects, error) {
	defer e.close()
	var out Effects
	frames := map[cdp.FrameID]bool{}
	window := time.NewTimer(settleWindow + 4*e.rtt)
	defer window.Stop()
	for len(frames) == 0 && len(out.Opened) == 0 && len(e.begun) == 0 && out.FileChooser == nil {
		select {
		case raw := <-e.choosers:
			var ev page.EventFileChooserOpened
			if decodeValue(raw, &ev) == nil {
				out.FileChooser = &FileChooser{Multiple: ev.Mode == page.FileChooserOpenedModeSelectMultiple, node: ev.BackendNodeID}
			}
		case raw := <-e.dlBegin:
			e.downloadBegan(raw, nil)
		case raw := <-e.requested:
			var ev page.EventFrameRequestedNavigation
			if decodeValue(raw, &ev) == nil && ev.Disposition == page.ClientNavigationDispositionCurrentTab {
				frames[ev.FrameID] = true
			}
		case raw := <-e.windows:
			var ev page.EventWindowOpen
			if decodeValue(raw, &ev) == nil {
				out.Opened = append(out.Opened, ev.URL)
			}
		case <-window.C:
			return out, nil
		case <-ctx.Done():
			return out, nil
		}
	}
	var err error
	if len(frames) > 0 {
		out.Navigated, err = e.await(ctx, p, op, frames)
	}
	if len(e.begun) > 0 {
		out.Downloads = e.finishDownloads(ctx, e.begun)
	}
	return out, err
}

// abandonWait is how long an action waits for a document to commit after
// the frame that requested it stopped loading without one.
const abandonWait = 2 * time.Second

// await waits for one of frames to commit (or navigate within its
// document, or stop loading without committing: a download, a 204, a
// cancelled navigation) and, for the main frame, for its load.
func (e *effects) await(ctx context.Context, p *Page, op string, frames map[cdp.FrameID]bool) (*ActionNavigation, error) {
	w := &navWait{p: p, op: op, frames: frames}
	defer w.stopAbandon()
	for {
		var done bool
		var nav *ActionNavigation
		var err error
		select {
		case <-ctx.Done():
			return w.atDeadline(ctx)
		case <-w.abandon:
			return nil, nil // no new document: the page is as it was
		case raw := <-e.dlBegin:
			if e.downloadBegan(raw, frames) && w.main == "" {
				return nil, nil // the navigation became a download
			}
		case raw, ok := <-e.navigated:
			if !ok {
				return nil, closedWhileWaiting(op)
			}
			done, nav, err = w.navigated(ctx, raw)
		case raw, ok := <-e.within:
			if !ok {
				return nil, closedWhileWaiting(op)
			}
			done, nav, err = w.within(ctx, raw)
		case raw, ok := <-e.starts:
			if !ok {
				return nil, closedWhileWaiting(op)
			}
			w.startedLoading(raw)
		case raw, ok := <-e.stops:
			if !ok {
				return nil, closedWhileWaiting(op)
			}
			done, nav, err = w.stopped(ctx, raw)
		}
		if done {
			return nav, err
		}
	}
}

// navWait is the state of one await. The event streams are read in no
// set order.
type navWait struct {
	p      *Page
	op     string
	frames map[cdp.FrameID]bool
	main   cdp.FrameID // the main frame, once its new document committed
	// started: a requested frame started loading. A frame may stop loading
	// before its new document commits (the renderer hands the navigation
	// to the browser), or for good (a 204, a download): after such a stop
	// the commit is awaited for abandonWait.
	started bool
	abandon <-chan time.Time
	timer   *time.Timer
}

func (w *navWait) stopAbandon() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

func (w *navWait) atDeadline(ctx context.Context) (*ActionNavigation, error) {
	if w.main == "" {
		return nil, nil // nothing committed: the page is as it was
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stillLoadingReadTimeout)
	defer cancel()
	nav, err := w.p.readNavigation(rctx, w.op)
	if nav != nil {
		nav.StillLoading = true
	}
	return nav, err
}

func (w *navWait) navigated(ctx context.Context, raw jsonv2.Value) (bool, *ActionNavigation, error) {
	var ev page.EventFrameNavigated
	if decodeValue(raw, &ev) != nil || ev.Frame == nil || !w.frames[ev.Frame.ID] {
		return false, nil, nil
	}
	if ev.Frame.ParentID != "" {
		return true, nil, nil // a frame's own navigation: the page stays
	}
	w.main = ev.Frame.ID
	w.stopAbandon()
	w.abandon = nil
	// Its stop may have been read already, and then the document has loaded.
	if w.p.reached(ctx, WaitLoad) {
		nav, err := w.p.readNavigation(ctx, w.op)
		return true, nav, err
	}
	return false, nil, nil
}

func (w *navWait) within(ctx context.Context, raw jsonv2.Value) (bool, *ActionNavigation, error) {
	var ev page.EventNavigatedWithinDocument
	if decodeValue(raw, &ev) != nil || !w.frames[ev.FrameID] {
		return false, nil, nil
	}
	nav, err := w.p.readNavigation(ctx, w.op)
	if nav != nil {
		nav.SameDocument = true
	}
	return true, nav, err
}

func (w *navWait) startedLoading(raw jsonv2.Value) {
	var ev page.EventFrameStartedLoading
	if decodeValue(raw, &ev) == nil && w.frames[ev.FrameID] {
		w.started = true
	}
}

func (w *navWait) stopped(ctx context.Context, raw jsonv2.Value) (bool, *ActionNavigation, error) {
	var ev page.EventFrameStoppedLoading
	if decodeValue(raw, &ev) != nil || !w.frames[ev.FrameID] {
		return false, nil, nil
	}
	if w.main == "" {
		if w.started && w.abandon == nil {
			w.timer = time.NewTimer(abandonWait)
			w.abandon = w.timer.C
		}
		return false, nil, nil // otherwise the previous document's, delivered late
	}
	if ev.FrameID == w.main && w.p.reached(ctx, WaitLoad) {
		nav, err := w.p.readNavigation(ctx, w.op)
		return true, nav, err
	}
	return false, nil, nil
}

// readNavigation reads the page's URL and title after a navigation.
func (p *Page) readNavigation(ctx context.Context, op string) (*ActionNavigation, error) {
	var loc struct {
		URL   string `json:"url"`
		Title string `json:"title"`
	}
	if err := p.evaluate(ctx, op, `({url: location.href, title: document.title})`, false, &loc); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, nil
		}
		return nil, err
	}
	return &ActionNavigation{URL: loc.URL, Title: loc.Title}, nil
}
