package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mxschmitt/playwright-go"

	"github.com/browserchain/browserchain/browserbackend"
)

// pageEntry is one conversation's page and its Playwright CDPSession. Its
// events fan out to the clients attached to it.
type pageEntry struct {
	b    *Browser
	st   *state
	conv string

	ready chan struct{} // closed when open finished; then page/sess/err are set
	page  playwright.Page
	sess  playwright.CDPSession
	err   error

	gone     chan struct{} // closed when the page, its session or the browser went away
	goneOnce sync.Once
	crashed  atomic.Bool // the page's renderer crashed (set before gone closes)

	lastUsed time.Time // guarded by b.mu

	mu       sync.Mutex
	sinks    map[*Client]struct{}
	targetID string            // the page's CDP target id, once a Build resolved it
	pwDialog playwright.Dialog // the dialog open on the page, answered through Send

	dialog browserbackend.DialogState
}

func newPageEntry(b *Browser, st *state, conv string) *pageEntry {
	return &pageEntry{
		b: b, st: st, conv: conv,
		ready:    make(chan struct{}),
		lastUsed: b.tune.now(),
		gone:     make(chan struct{}),
		sinks:    make(map[*Client]struct{}),
	}
}

// open claims the spare page (with its CDPSession) or creates a page and a
// CDPSession. It runs on its own goroutine so that waiters can honour their
// contexts; b.wg tracks it.
func (p *pageEntry) open(spare *spareTab) {
	defer p.b.wg.Done()
	defer close(p.ready)
	var page playwright.Page
	var sess playwright.CDPSession
	if spare != nil && spare.crashed.Load() {
		// Its renderer died while it waited: open another, and close it in
		// the background (closing a crashed page can take long).
		if dead := spare.page; p.b.track() {
			go func() {
				defer p.b.wg.Done()
				_ = dead.Close()
			}()
		}
		spare = nil
	}
	if spare != nil {
		page, sess = spare.page, spare.sess
	} else {
		var err error
		if page, sess, err = p.b.openConversationPage(p.st, conversationOf(p.conv)); err != nil {
			p.err = classifyOpenError(p.st, err)
			return
		}
	}
	p.page, p.sess = page, sess
	page.OnClose(func(playwright.Page) { p.b.pageClosed(p); p.shutdown() })
	sess.OnClose(func(playwright.CDPSession) { p.b.pageClosed(p); p.shutdown() })
	// A crashed renderer leaves the page open but dead, and Playwright fails
	// none of its pending CDPSession calls: mark it crashed and gone (Send
	// fails its in-flight commands with CodeTargetCrashed), drop it so that
	// the conversation's next command gets a fresh page, and close it.
	page.OnCrash(func(playwright.Page) { p.markCrashed() })
	if spare != nil && spare.crashed.Load() {
		p.markCrashed() // crashed between the check above and OnCrash
	}
	// The generic "event" carries every CDP event of the session as
	// {method, params}, so one listener serves subscribers of any method,
	// including Subscribe(""). It runs on playwright-go's dispatch goroutine
	// and must not block: EventBus.Publish never does.
	sess.On("event", p.onEvent)
	// A dialog stays open until the conversation answers it
	// (Page.handleJavaScriptDialog, see Send): with no listener Playwright
	// would dismiss it on its own, and the page would behave unlike the
	// user's own Chrome.
	page.OnDialog(p.onDialog)
	page.OnDialogClosed(func(d playwright.Dialog) { p.dialogClosed(d) })
	// A popup joins the conversation's tabs when they are next listed.
	page.OnPopup(func(pp playwright.Page) { p.b.notePopup(p, pp) })
}

// onDialog records the dialog the page opened and tells the attached
// clients, as Page.javascriptDialogOpening (Playwright's session holds the
// Page domain; the conversation's session need not).
func (p *pageEntry) onDialog(d playwright.Dialog) {
	dlg := browserbackend.Dialog{Type: d.Type(), Message: d.Message(), DefaultPrompt: d.DefaultValue(), URL: p.page.URL()}
	params, err := json.Marshal(dlg)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.pwDialog = d
	p.mu.Unlock()
	p.dialog.Observe(browserbackend.MethodDialogOpening, params)
	p.publish(browserbackend.Event{Method: browserbackend.MethodDialogOpening, Params: params})
}

func (p *pageEntry) dialogClosed(d playwright.Dialog) {
	p.mu.Lock()
	if p.pwDialog != d {
		p.mu.Unlock()
		return
	}
	p.pwDialog = nil
	p.mu.Unlock()
	p.dialog.Clear()
	p.publish(browserbackend.Event{Method: browserbackend.MethodDialogClosed, Params: json.RawMessage(`{}`)})
}

func (p *pageEntry) publish(ev browserbackend.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.sinks {
		c.bus.Publish(ev)
	}
}

// answerDialog runs Page.handleJavaScriptDialog on the page's open dialog
// through Playwright, which holds it; no open dialog is Chrome's own error.
func (p *pageEntry) answerDialog(ctx context.Context, raw map[string]any) (json.RawMessage, error) {
	p.mu.Lock()
	d := p.pwDialog
	p.mu.Unlock()
	if d == nil {
		return nil, &browserbackend.Error{Class: browserbackend.ClassProtocol, Code: browserbackend.CodeCDPError,
			CDPCode: -32602, Method: browserbackend.MethodHandleDialog, Backend: browserbackend.KindLocal,
			Message: "No dialog is showing"}
	}
	accept, _ := raw["accept"].(bool)
	text, _ := raw["promptText"].(string)
	done := make(chan error, 1)
	if !p.b.track() {
		return nil, errClosed(browserbackend.MethodHandleDialog)
	}
	go func() {
		defer p.b.wg.Done()
		if accept {
			done <- d.Accept(text)
		} else {
			done <- d.Dismiss()
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			return nil, classifySendError(browserbackend.MethodHandleDialog, err, p)
		}
		p.dialogClosed(d)
		return json.RawMessage(`{}`), nil
	case <-ctx.Done():
		return nil, ctxErr(ctx, browserbackend.MethodHandleDialog, true)
	}
}

func (p *pageEntry) onEvent(m map[string]any) {
	method, _ := m["method"].(string)
	if method == "" {
		return
	}
	if method == browserbackend.MethodDialogOpening {
		return // told by onDialog, which Playwright's own session drives
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.sinks) == 0 {
		return
	}
	ev := browserbackend.Event{Method: method}
	if params, ok := m["params"]; ok && params != nil {
		raw, err := json.Marshal(params)
		if err != nil {
			return
		}
		ev.Params = raw
	}
	for c := range p.sinks {
		c.bus.Publish(ev)
	}
}

func (p *pageEntry) isGone() bool {
	select {
	case <-p.gone:
		return true
	default:
		return false
	}
}

// goneErr is the error of a command on p once p is gone: CodeTargetCrashed
// after a renderer crash, else the closed-page transport error.
func (p *pageEntry) goneErr(method string, dispatched bool) *browserbackend.Error {
	if p.crashed.Load() {
		return errTargetCrashed(method, dispatched)
	}
	e := errPageGone(method, nil)
	e.Dispatched = dispatched
	return e
}

// markCrashed records that the page's renderer crashed: the page is gone
// (its in-flight commands fail with CodeTargetCrashed), dropped so that the
// conversation's next command gets a fresh page, and closed. It runs when
// Playwright reports the crash and when a command's error says so first,
// whichever comes first; later calls do nothing.
func (p *pageEntry) markCrashed() {
	if p.crashed.Swap(true) {
		return
	}
	p.b.forget(p)
	p.shutdown()
	if page := p.page; page != nil && p.b.track() {
		go func() {
			defer p.b.wg.Done()
			_ = page.Close()
		}()
	}
}

// shutdown marks the page gone and ends its clients' event streams.
func (p *pageEntry) shutdown() {
	p.goneOnce.Do(func() { close(p.gone) })
	p.mu.Lock()
	sinks := p.sinks
	p.sinks = make(map[*Client]struct{})
	p.mu.Unlock()
	for c := range sinks {
		c.bus.Close()
	}
}

// close ends the page's streams and closes the page (once it is open).
func (p *pageEntry) close() error {
	p.shutdown()
	<-p.ready
	if p.page == nil {
		return nil
	}
	if err := p.page.Close(); err != nil && !errors.Is(err, playwright.ErrTargetClosed) {
		return fmt.Errorf("local: close page: %w", err)
	}
	return nil
}

// attached reports how many clients are attached.
func (p *pageEntry) attached() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sinks)
}

func (p *pageEntry) attach(c *Client) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.isGone() {
		return false
	}
	p.sinks[c] = struct{}{}
	return true
}

func (p *pageEntry) detach(c *Client) {
	p.mu.Lock()
	delete(p.sinks, c)
	p.mu.Unlock()
}

// Client is the local backend of one invocation: a browserbackend.ScopedClient
// and browserbackend.EventSource bound to its conversation's page.
// Create it with Browser.Client; the first Send (or Open) launches the browser
// if needed and opens or reuses the conversation's page.
//
// Send carries the command over the page's Playwright CDPSession, which
// routes no flat sessions itself. A cross-site frame of the page gets a
// session of its own: Target.attachToTarget (flatten) with the frame's
// target id opens a Playwright CDPSession on the frame and answers its
// sessionId, commands with that SessionID run on it, and
// Target.detachFromTarget or Close detaches it. Commands with any other
// SessionID are refused (ClassPolicy, not_supported).
//
// Events: Subscribe(method) delivers the page session's CDP events of method,
// or all of them for "", from the moment the client is attached to its page
// (at the first Send or Open); events are not replayed. Event.SessionID is
// always empty.
//
// Close detaches the client; the page stays open for the conversation's next
// invocation (Browser.CloseConversation closes it). Safe for concurrent use.
type Client struct {
	b       *Browser
	conv    string
	closing chan struct{}

	mu     sync.Mutex
	closed bool
	p      *pageEntry

	bus browserbackend.EventBus

	frames frameSessions
}

var (
	_ browserbackend.ScopedClient  = (*Client)(nil)
	_ browserbackend.EventSource   = (*Client)(nil)
	_ browserbackend.DialogWatcher = (*Client)(nil)
)

// OpenDialog implements browserbackend.DialogWatcher: the dialog open on
// the conversation's page, once the client is attached to it.
func (c *Client) OpenDialog() (browserbackend.Dialog, bool) {
	c.mu.Lock()
	p := c.p
	c.mu.Unlock()
	if p == nil {
		return browserbackend.Dialog{}, false
	}
	return p.dialog.Open()
}

// ConversationID returns the conversation the client serves.
func (c *Client) ConversationID() string { return c.conv }

// Open launches the browser if needed and attaches the client to its
// conversation's page, opening the page if there is none. It honours ctx
// while waiting. Errors are *browserbackend.Error: transport/launch_failed
// when the browser cannot start, transport when the page cannot be opened,
// closed after Close, aborted/timeout from ctx.
//
// When the conversation's page was evicted or went away (CodePageEvicted,
// CodePageLost), Open only launches the browser: the first command reports
// it, or, when that command is Page.navigate, opens a fresh page.
func (c *Client) Open(ctx context.Context) error {
	_, err := c.open(ctx, intentOpen)
	return err
}

// open attaches c to its conversation's page (see Browser.page for intent).
// For intentOpen it may return no page and no error.
func (c *Client) open(ctx context.Context, intent openIntent) (*pageEntry, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errClosed("")
	}
	if c.p != nil {
		p := c.p
		c.mu.Unlock()
		return p, nil
	}
	c.mu.Unlock()

	p, err := c.b.page(ctx, c.conv, c, intent) // attaches c
	if err != nil || p == nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		p.detach(c)
		return nil, errClosed("")
	}
	if c.p == nil {
		c.p = p
	} else if c.p != p {
		p.detach(c) // a concurrent open attached c to another page first
	}
	return c.p, nil
}

type sendResult struct {
	res any
	err error
}

// Send implements browserbackend.ScopedClient. It returns the raw JSON result
// of cmd (an object; "{}" for commands without result fields) and honours ctx
// even though Playwright's CDPSession.Send takes none: the call runs on its
// own goroutine and Send returns at ctx's end with ClassAborted (cancelled) or
// ClassTimeout (deadline), Dispatched true. The abandoned call finishes when
// the browser answers or the page closes. Errors: launch failure →
// transport/launch_failed; a closed page, context or browser → transport;
// the browser's CDP error → protocol with the CDP code; a sessionId →
// policy/not_supported; after Close → closed.
//
// Numbers in results pass through float64 (playwright-go decodes JSON that
// way), so integers beyond 2^53 lose precision.
func (c *Client) Send(ctx context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
	params, err := c.sendable(ctx, cmd)
	if err != nil {
		return nil, err
	}
	intent := intentCommand
	if cmd.Method == "Page.navigate" {
		intent = intentNavigate
	}
	p, err := c.open(ctx, intent)
	if err != nil {
		return nil, withMethod(err, cmd.Method)
	}
	if p.isGone() {
		return nil, p.goneErr(cmd.Method, false)
	}
	if p.st.isDead() {
		return nil, errBrowserGone(cmd.Method, false)
	}
	if cmd.Method == browserbackend.MethodHandleDialog {
		return p.answerDialog(ctx, params)
	}
	if e := p.dialog.Blocked(browserbackend.KindLocal, cmd.Method); e != nil {
		return nil, e
	}

	do := c.frameCommand(p, cmd, params)
	if do == nil {
		do = func() (any, error) { return p.sess.Send(cmd.Method, params) }
	}
	ch := make(chan sendResult, 1)
	if !c.b.track() {
		return nil, errClosed(cmd.Method)
	}
	go func() {
		defer c.b.wg.Done()
		res, err := do()
		ch <- sendResult{res, err}
	}()
	end := p.st.track.Begin()
	defer end(false) // given up or failed; an answer ends it first

	select {
	case r := <-ch:
		return answer(cmd.Method, r, p, end)
	case <-p.gone:
		// Crashed or closed under the command: Playwright would leave it
		// pending until the deadline.
		if c.closingOrClosed() {
			return nil, errClosedDispatched(cmd.Method)
		}
		return nil, p.goneErr(cmd.Method, true)
	case <-p.st.dead:
		if c.closingOrClosed() {
			return nil, errClosedDispatched(cmd.Method)
		}
		return nil, errBrowserGone(cmd.Method, true)
	case <-ctx.Done():
		e := ctxErr(ctx, cmd.Method, true)
		if e.Class == browserbackend.ClassTimeout {
			// Counted before end: the timed-out command is among them.
			e.Diagnostics = p.st.track.Diagnostics()
		}
		return nil, e
	case <-c.closing:
		return nil, errClosedDispatched(cmd.Method)
	case <-c.b.done:
		return nil, errClosedDispatched(cmd.Method)
	}
}

// sendable checks cmd before anything is sent: no sessionId but one of a
// frame session c attached, ctx not done,
// c and its Browser not closed, params one JSON object (or absent or null,
// nil then). It returns the params decoded with integers kept exact.
func (c *Client) sendable(ctx context.Context, cmd browserbackend.Command) (map[string]any, error) {
	if _, frame := c.frames.get(cmd.SessionID); cmd.SessionID != "" && !frame {
		return nil, &browserbackend.Error{
			Class: browserbackend.ClassPolicy, Code: browserbackend.CodeNotSupported,
			Method: cmd.Method, Backend: browserbackend.KindLocal,
			Message: "local: commands with a sessionId are not supported; the local backend sends on its page session",
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxErr(ctx, cmd.Method, false)
	}
	select {
	case <-c.b.done:
		return nil, errClosed(cmd.Method)
	case <-c.closing:
		return nil, errClosed(cmd.Method)
	default:
	}
	raw := bytes.TrimSpace(cmd.Params)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var params map[string]any
	dec := json.NewDecoder(bytes.NewReader(cmd.Params))
	dec.UseNumber() // keep integers exact on the way out
	if err := dec.Decode(&params); err != nil {
		e := browserbackend.CheckParams(cmd.Method, cmd.Params)
		if e == nil { // valid JSON object that still does not decode
			e = &browserbackend.Error{Class: browserbackend.ClassPolicy, Code: browserbackend.CodeInvalidParams,
				Method: cmd.Method, Message: "params must be one JSON object", Err: err}
		}
		e.Backend = browserbackend.KindLocal
		return nil, e
	}
	return params, nil
}

// answer turns page p's answer r to method into Send's result, ending the
// command's tracking with whether the browser answered.
func answer(method string, r sendResult, p *pageEntry, end func(bool)) (json.RawMessage, error) {
	var be *browserbackend.Error
	if errors.As(r.err, &be) {
		end(true) // classified already (a frame session's failure)
		return nil, be
	}
	if r.err != nil {
		e := classifySendError(method, r.err, p)
		end(e.Class == browserbackend.ClassProtocol) // a CDP error is the browser's answer
		return nil, e
	}
	end(true)
	if r.res == nil {
		return json.RawMessage("{}"), nil
	}
	raw, err := encodeResult(r.res)
	if err != nil {
		return nil, &browserbackend.Error{
			Class: browserbackend.ClassProtocol, Code: browserbackend.CodeInvalidResponse,
			Method: method, Backend: browserbackend.KindLocal, Dispatched: true,
			Message: "local: cannot encode the result", Err: err,
		}
	}
	return raw, nil
}

// closingOrClosed reports whether c or its Browser is being closed: a page
// or browser going away then is Close's doing, reported as ClassClosed.
func (c *Client) closingOrClosed() bool {
	select {
	case <-c.closing:
		return true
	case <-c.b.done:
		return true
	default:
		return false
	}
}

func errClosedDispatched(method string) *browserbackend.Error {
	e := errClosed(method)
	e.Dispatched = true
	return e
}

// Subscribe implements browserbackend.EventSource: events of method ("" for
// all) of the conversation's page session. The channel closes on cancel, on
// Close, or when the page goes away.
func (c *Client) Subscribe(method string) (<-chan browserbackend.Event, func()) {
	return c.bus.Subscribe(method)
}

// SubscribeBuffer implements browserbackend.BufferedEventSource: Subscribe with a
// channel of capacity buffer (0 or less: the default).
func (c *Client) SubscribeBuffer(method string, buffer int) (<-chan browserbackend.Event, func()) {
	return c.bus.SubscribeBuffer(method, buffer)
}

// Close implements browserbackend.ScopedClient: it detaches the client from
// its page (which stays open for the conversation), ends its event streams,
// and makes in-flight and later Sends fail with ClassClosed. Idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.closing)
	p := c.p
	c.mu.Unlock()
	c.frames.detachAll()
	if p != nil {
		p.detach(c)
		c.b.trimPages()
		c.b.maybeRefill()
	}
	c.bus.Close()
	return nil
}
