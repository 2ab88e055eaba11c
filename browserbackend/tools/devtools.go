package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
)

// Console and network limits.
const (
	// DefaultConsoleLimit is the number of messages Console returns when
	// Limit is 0; MaxConsoleLimit the largest Limit accepted.
	DefaultConsoleLimit = 100
	MaxConsoleLimit     = 1000
	// MaxConsoleText bounds one message's text, in runes.
	MaxConsoleText = 2000
	// DefaultNetworkLimit and MaxNetworkLimit are Network's.
	DefaultNetworkLimit = 100
	MaxNetworkLimit     = 1000
)

// ConsoleInput is the browser_console_messages tool input.
type ConsoleInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// Level keeps messages at this level or above: "debug" (every message,
	// the default when ""), "info", "warning" or "error".
	Level string `json:"level,omitempty"`
	// Search keeps messages whose text contains it (case-insensitive).
	Search string `json:"search,omitempty"`
	// Limit keeps the last Limit messages (default DefaultConsoleLimit, at
	// most MaxConsoleLimit).
	Limit int `json:"limit,omitempty"`
}

// ConsoleMessage is one console message, uncaught exception or browser log
// entry of the tab's current document.
type ConsoleMessage struct {
	// Level is "debug", "info", "warning" or "error".
	Level string `json:"level"`
	// Source is "console" (console.*), "exception" (uncaught) or the
	// browser's log source ("network", "security", "violation", …).
	Source string `json:"source"`
	// Text is the message, cut at MaxConsoleText runes.
	Text string `json:"text"`
	URL  string `json:"url,omitempty"`
	Line int64  `json:"line,omitempty"`
	// Time is when it was logged, in milliseconds since the Unix epoch.
	Time float64 `json:"time,omitempty"`
}

// ConsoleResult lists console messages, oldest first.
type ConsoleResult struct {
	Messages []ConsoleMessage `json:"messages"`
	// Matched is the number of messages that passed the filters, before
	// Limit.
	Matched int `json:"matched"`
	Call
}

var consoleLevels = map[string]int{"debug": 0, "verbose": 0, "log": 1, "info": 1, "warning": 2, "warn": 2, "error": 3, "assert": 3}

func checkConsole(in ConsoleInput) error {
	if _, ok := consoleLevels[in.Level]; in.Level != "" && !ok {
		return invalidInput("console_messages", "level must be debug, info, warning or error")
	}
	return checkRange("console_messages", "limit", in.Limit, MaxConsoleLimit)
}

// consoleSettle is how long Console waits, after the domains answered, for
// the messages the browser replays to arrive, when its mark does not come
// back (a page that replaced console.debug).
const consoleSettle = 50 * time.Millisecond

// consoleMark starts the text of the debug message Console logs after the
// replay: the browser sends events in order, so when the mark arrives every
// replayed message has. Marks are never reported.
const consoleMark = "\u2063browserchain console mark "

// markGrace is how long Console still reads the exception and log streams
// once its mark has come back.
const markGrace = 2 * time.Millisecond

// console reads the messages the tab's current document logged: the
// browser keeps them (up to 1000, cleared by a navigation) and replays them
// to a session that enables the Runtime and Log domains, which are disabled
// again afterwards. Only the conversation's tab is read.
func (p *Page) console(ctx context.Context, in ConsoleInput) (ConsoleResult, error) {
	const op = "console_messages"
	if err := checkConsole(in); err != nil {
		return ConsoleResult{}, err
	}
	api, stopAPI := p.s.Subscribe(runtime.ConsoleAPICalled.Method)
	defer stopAPI()
	exc, stopExc := p.s.Subscribe(runtime.ExceptionThrown.Method)
	defer stopExc()
	logs, stopLogs := p.s.Subscribe(cdplog.EntryAdded.Method)
	defer stopLogs()
	start := time.Now()
	if _, err := cdp.Call(ctx, p.s, runtime.Enable, cdp.Empty{}); err != nil {
		return ConsoleResult{}, wrap(op, err)
	}
	if _, err := cdp.Call(ctx, p.s, cdplog.Enable, cdp.Empty{}); err != nil {
		return ConsoleResult{}, wrap(op, err)
	}
	rtt := time.Since(start) / 2
	mark := consoleMark + strconv.FormatInt(time.Now().UnixNano(), 36)
	marked := false
	if _, err := cdp.Call(ctx, p.s, runtime.Evaluate, runtime.EvaluateParams{
		Expression: "console.debug(" + strconv.Quote(mark) + ")", Silent: new(true)}); err == nil {
		marked = true
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopLoadingTimeout)
		defer cancel()
		_, _ = cdp.Call(dctx, p.s, runtime.Disable, cdp.Empty{})
		_, _ = cdp.Call(dctx, p.s, cdplog.Disable, cdp.Empty{})
	}()
	var all []ConsoleMessage
	idle := time.NewTimer(consoleSettle + 2*rtt)
	defer idle.Stop()
	for done := false; !done; {
		var m ConsoleMessage
		var ok bool
		select {
		case raw := <-api:
			m, ok = consoleAPIMessage(raw)
			if ok && strings.HasPrefix(m.Text, consoleMark) {
				ok = false
				done = marked && m.Text == mark
			}
		case raw := <-exc:
			m, ok = exceptionMessage(raw)
		case raw := <-logs:
			m, ok = logMessage(raw)
		case <-idle.C:
			done = true
		case <-ctx.Done():
			done = true
		}
		if ok {
			all = append(all, m)
			idle.Reset(consoleSettle + 2*rtt)
		}
	}
	// The browser sent what the exception and log streams hold before the
	// mark; each stream is forwarded on its own, so they get a moment.
	grace := time.NewTimer(markGrace)
	defer grace.Stop()
	for drained := false; !drained && ctx.Err() == nil; {
		var m ConsoleMessage
		var ok bool
		select {
		case raw := <-exc:
			m, ok = exceptionMessage(raw)
		case raw := <-logs:
			m, ok = logMessage(raw)
		case <-grace.C:
			drained = true
		}
		if ok {
			all = append(all, m)
		}
	}
	// Runtime and Log messages arrive on separate streams: order by time.
	slices.SortStableFunc(all, func(a, b ConsoleMessage) int {
		switch {
		case a.Time < b.Time:
			return -1
		case a.Time > b.Time:
			return 1
		}
		return 0
	})
	return filterConsole(all, in), nil
}

func filterConsole(all []ConsoleMessage, in ConsoleInput) ConsoleResult {
	min := consoleLevels[in.Level]
	search := strings.ToLower(in.Search)
	out, matched := lastMatching(all, in.Limit, DefaultConsoleLimit, func(m ConsoleMessage) bool {
		return consoleLevels[m.Level] >= min && (search == "" || strings.Contains(strings.ToLower(m.Text), search))
	})
	return ConsoleResult{Messages: out, Matched: matched}
}

// lastMatching returns the last limit (def when 0) elements of all that
// keep accepts, in order, and how many it accepted.
func lastMatching[T any](all []T, limit, def int, keep func(T) bool) ([]T, int) {
	out := make([]T, 0, len(all))
	for _, x := range all {
		if keep(x) {
			out = append(out, x)
		}
	}
	if limit == 0 {
		limit = def
	}
	n := len(out)
	if n > limit {
		out = out[n-limit:]
	}
	return out, n
}

func consoleAPIMessage(raw jsonv2.Value) (ConsoleMessage, bool) {
	var ev runtime.EventConsoleAPICalled
	if decodeValue(raw, &ev) != nil {
		return ConsoleMessage{}, false
	}
	parts := make([]string, 0, len(ev.Args))
	for _, a := range ev.Args {
		parts = append(parts, remoteText(a))
	}
	level := string(ev.Type)
	switch level {
	case "warning", "error", "debug", "info":
	case "assert":
		level = "error"
	case "log", "dir", "dirxml", "table", "trace", "count", "timeEnd", "group", "startGroup", "startGroupCollapsed":
		level = "info"
	default:
		level = "debug"
	}
	m := ConsoleMessage{Level: level, Source: "console", Text: cutRunes(strings.Join(parts, " "), MaxConsoleText)}
	m.Time = float64(ev.Timestamp)
	if ev.StackTrace != nil && len(ev.StackTrace.CallFrames) > 0 {
		f := ev.StackTrace.CallFrames[0]
		m.URL, m.Line = f.URL, f.LineNumber+1
	}
	return m, true
}

func exceptionMessage(raw jsonv2.Value) (ConsoleMessage, bool) {
	var ev runtime.EventExceptionThrown
	if decodeValue(raw, &ev) != nil || ev.ExceptionDetails == nil {
		return ConsoleMessage{}, false
	}
	d := ev.ExceptionDetails
	m := ConsoleMessage{Level: "error", Source: "exception", Text: cutRunes(exceptionText(d), MaxConsoleText), URL: d.URL}
	if d.URL != "" {
		m.Line = d.LineNumber + 1
	}
	m.Time = float64(ev.Timestamp)
	return m, true
}

func logMessage(raw jsonv2.Value) (ConsoleMessage, bool) {
	var ev cdplog.EventEntryAdded
	if decodeValue(raw, &ev) != nil || ev.Entry == nil {
		return ConsoleMessage{}, false
	}
	e := ev.Entry
	level := string(e.Level)
	if level == "verbose" {
		level = "debug"
	}
	m := ConsoleMessage{Level: level, Source: string(e.Source), Text: cutRunes(e.Text, MaxConsoleText), URL: e.URL, Line: e.LineNumber}
	m.Time = float64(e.Timestamp)
	return m, true
}

// remoteText is how a console argument reads: a primitive's value, an
// object's description.
func remoteText(o *runtime.RemoteObject) string {
	if o == nil {
		return ""
	}
	if len(o.Value) > 0 {
		var s string
		if decodeValue(jsonv2.Value(o.Value), &s) == nil {
			return s
		}
		return string(o.Value)
	}
	if o.UnserializableValue != "" {
		return string(o.UnserializableValue)
	}
	if o.Description != "" {
		return o.Description
	}
	return string(o.Type)
}

func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// NetworkInput is the browser_network_requests tool input.
type NetworkInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// Type keeps requests of this type: "document", "script", "stylesheet",
	// "image", "font", "fetch", "xhr", "beacon", "other" ("" keeps all).
	Type string `json:"type,omitempty"`
	// URLContains keeps requests whose URL contains it.
	URLContains string `json:"url_contains,omitempty"`
	// Limit keeps the last Limit requests (default DefaultNetworkLimit, at
	// most MaxNetworkLimit).
	Limit int `json:"limit,omitempty"`
}

// NetworkRequest is one request the tab's current document made (its own
// load included), as the page's resource timing records it.
type NetworkRequest struct {
	URL string `json:"url"`
	// Type is what made the request: "document", "script", "stylesheet",
	// "image", "font", "fetch", "xhr", "beacon", "link", "other", ….
	Type string `json:"type"`
	// Status is the HTTP status; 0 when the browser does not expose it (a
	// cross-origin response without Timing-Allow-Origin, or a failure).
	Status int `json:"status"`
	// Protocol is the protocol of the response ("http/1.1", "h2", …).
	Protocol string `json:"protocol,omitempty"`
	// Start is when the request started, in milliseconds after the
	// document's navigation began; Duration how long it took, in
	// milliseconds.
	Start    float64 `json:"start"`
	Duration float64 `json:"duration"`
	// TransferSize is the bytes received (0 from cache or cross-origin).
	TransferSize int64 `json:"transferSize"`
	// MediaType is the response's media type, when the browser exposes it.
	MediaType string `json:"mediaType,omitempty"`
}

// NetworkResult lists the requests of the tab's current document, oldest
// first.
type NetworkResult struct {
	Requests []NetworkRequest `json:"requests"`
	// Matched is the number of requests that passed the filters, before
	// Limit.
	Matched int `json:"matched"`
	Call
}

// networkScript reads the document's navigation and resource timing
// entries (up to the browser's buffer, which it raises to MaxNetworkLimit
// for what follows).
const networkScript = `(() => {
	performance.setResourceTimingBufferSize(Math.max(1000, performance.getEntriesByType('resource').length));
	const es = performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'));
	return es.map(e => ({url: e.name, type: e.entryType === 'navigation' ? 'document' : (e.initiatorType || 'other'),
		status: e.responseStatus || 0, protocol: e.nextHopProtocol || '', start: e.startTime, duration: e.duration,
		transferSize: e.transferSize || 0, mediaType: e.contentType || ''}));
})()`

// network reads the requests of the tab's current document from the page's
// resource timing (the same on every backend: nothing has to listen before
// the requests go out). A navigation starts a new list.
func (p *Page) network(ctx context.Context, in NetworkInput) (NetworkResult, error) {
	const op = "network_requests"
	if err := checkRange(op, "limit", in.Limit, MaxNetworkLimit); err != nil {
		return NetworkResult{}, err
	}
	var all []NetworkRequest
	if err := p.evaluate(ctx, op, networkScript, false, &all); err != nil {
		return NetworkResult{}, err
	}
	out, matched := lastMatching(all, in.Limit, DefaultNetworkLimit, func(r NetworkRequest) bool {
		return (in.Type == "" || strings.EqualFold(r.Type, in.Type)) && (in.URLContains == "" || strings.Contains(r.URL, in.URLContains))
	})
	return NetworkResult{Requests: out, Matched: matched}, nil
}

// PDFInput is the browser_pdf tool input.
type PDFInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// Landscape prints in landscape orientation.
	Landscape bool `json:"landscape,omitempty"`
	// PrintBackground prints background graphics.
	PrintBackground bool `json:"print_background,omitempty"`
	// Scale of the rendering, 0.1–2 (0: 1).
	Scale float64 `json:"scale,omitempty"`
	// PaperWidth and PaperHeight in inches (0: US Letter, 8.5 × 11).
	PaperWidth  float64 `json:"paper_width,omitempty"`
	PaperHeight float64 `json:"paper_height,omitempty"`
	// PageRanges prints only these pages, e.g. "1-3, 5" ("": all).
	PageRanges string `json:"page_ranges,omitempty"`
}

// PDFResult describes the PDF file written.
type PDFResult struct {
	// Path is the absolute path of the PDF file (mode 0600), in the
	// screenshot directory.
	Path string `json:"path"`
	// SHA256 is the hex SHA-256 of the file's bytes.
	SHA256    string `json:"sha256"`
	Size      int64  `json:"size"`
	MediaType string `json:"mediaType"`
	URL       string `json:"url"`
	Call
}

func checkPDF(in PDFInput) error {
	if in.Scale != 0 && (in.Scale < 0.1 || in.Scale > 2) {
		return invalidInput("pdf", "scale must be 0.1–2 (0: 1)")
	}
	if in.PaperWidth < 0 || in.PaperHeight < 0 || in.PaperWidth > 200 || in.PaperHeight > 200 {
		return invalidInput("pdf", "paper_width and paper_height must be 0–200 inches")
	}
	return nil
}

// pdf prints the page (Page.printToPDF) to a new file in the screenshot
// directory. A browser that cannot print (Chrome shows the page in a window
// and refuses) is CodeBackend with the browser's message.
func (p *Page) pdf(ctx context.Context, in PDFInput) (PDFResult, error) {
	const op = "pdf"
	if err := checkPDF(in); err != nil {
		return PDFResult{}, err
	}
	var url string
	if err := p.evaluate(ctx, op, `location.href`, false, &url); err != nil {
		return PDFResult{}, err
	}
	params := page.PrintToPDFParams{Landscape: &in.Landscape, PrintBackground: &in.PrintBackground, Scale: in.Scale,
		PaperWidth: in.PaperWidth, PaperHeight: in.PaperHeight, PageRanges: in.PageRanges}
	res, err := cdp.Call(ctx, p.s, page.PrintToPDF, params)
	if err != nil {
		return PDFResult{}, wrap(op, err)
	}
	f, err := newShotFile(p.opts.ScreenshotDir)
	if err != nil {
		return PDFResult{}, &Error{Op: op, Code: CodeIO, Message: "cannot write the PDF file", Err: err}
	}
	defer f.discard()
	if _, err := f.f.Write(res.Data); err != nil {
		return PDFResult{}, &Error{Op: op, Code: CodeIO, Message: "cannot write the PDF file", Err: err}
	}
	path, err := f.keepAs("page", "pdf")
	if err != nil {
		return PDFResult{}, &Error{Op: op, Code: CodeIO, Message: "cannot write the PDF file", Err: err}
	}
	sum := sha256.Sum256(res.Data)
	return PDFResult{Path: path, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(res.Data)), MediaType: "application/pdf", URL: url}, nil
}

// ViewportInput is the browser_resize tool input. Width and Height 0 clear
// the override: the tab gets its window's size back.
type ViewportInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// Width and Height in CSS pixels, 1–MaxScreenshotSide each, or both 0.
	Width  int `json:"width"`
	Height int `json:"height"`
	// DeviceScale is the device pixel ratio (0: the browser's own).
	DeviceScale float64 `json:"device_scale,omitempty"`
	// Mobile emulates a mobile device (meta viewport, overlay scrollbars).
	Mobile bool `json:"mobile,omitempty"`
}

// ViewportResult is the viewport the page reports after the change.
type ViewportResult struct {
	Width       int     `json:"width"`
	Height      int     `json:"height"`
	DeviceScale float64 `json:"deviceScale"`
	Call
}

func checkViewport(in ViewportInput) error {
	ok := (in.Width == 0 && in.Height == 0) ||
		(in.Width > 0 && in.Height > 0 && in.Width <= MaxScreenshotSide && in.Height <= MaxScreenshotSide)
	if !ok || in.DeviceScale < 0 || in.DeviceScale > 10 {
		return invalidInput("resize", fmt.Sprintf("width and height must be both 0 or both 1–%d; device_scale 0–10", MaxScreenshotSide))
	}
	return nil
}

// applyViewport sets (or, for 0 × 0, clears) the tab's device metrics
// override on p's session. A DevTools session's override ends with the
// session; Tools applies a conversation's viewport again on every call.
func (p *Page) applyViewport(ctx context.Context, op string, in ViewportInput) error {
	var err error
	if in.Width == 0 {
		_, err = cdp.Call(ctx, p.s, emulation.ClearDeviceMetricsOverride, cdp.Empty{})
	} else {
		_, err = cdp.Call(ctx, p.s, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: int64(in.Width), Height: int64(in.Height),
			DeviceScaleFactor: in.DeviceScale, Mobile: in.Mobile})
	}
	if err != nil {
		return wrap(op, err)
	}
	return nil
}

func (p *Page) viewport(ctx context.Context, in ViewportInput) (ViewportResult, error) {
	const op = "resize"
	if err := checkViewport(in); err != nil {
		return ViewportResult{}, err
	}
	if err := p.applyViewport(ctx, op, in); err != nil {
		return ViewportResult{}, err
	}
	var v ViewportResult
	err := p.evaluate(ctx, op, `({width: innerWidth, height: innerHeight, deviceScale: devicePixelRatio})`, false, &v)
	return v, err
}
