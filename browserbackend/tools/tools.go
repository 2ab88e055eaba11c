package tools

import (
	lru "github.com/hashicorp/golang-lru/v2"

	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/catalog"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/recorder"
	"github.com/browserchain/browserchain/browserbackend/sessions"
	"github.com/chromedp/cdproto/cdp"
)

// Default deadlines of the tool calls, used when the input's TimeoutMs is 0.
// A ctx deadline that is earlier wins.
const (
	DefaultNavigateTimeout = 30 * time.Second
	DefaultWaitTimeout     = 10 * time.Second
	DefaultActionTimeout   = 15 * time.Second
	// MaxTimeout bounds every TimeoutMs.
	MaxTimeout = 5 * time.Minute
)

// Input bounds every tool checks before it contacts a backend
// (CodeInvalidInput): the conversation id goes into the selector's memo, the
// backends' per-conversation tabs and pages and every log line of the call.
const (
	// MaxConversationIDBytes bounds Invocation.ConversationID; control
	// characters are refused too.
	MaxConversationIDBytes = 256
	// MaxURLBytes bounds a URL to load: Chromium's own limit on a URL
	// (url::kMaxURLChars, 2 MiB).
	MaxURLBytes = 2 << 20
)

// checkInvocation checks what every tool call takes from inv.
func checkInvocation(op string, inv browserbackend.Invocation) error {
	return checkConversationID(op, inv.ConversationID)
}

// CheckConversationID returns nil when every tool accepts id as an
// Invocation.ConversationID, else an *Error with CodeInvalidInput (op
// "conversation"): at most MaxConversationIDBytes, no control characters.
// For a front end (an MCP server, say) that keeps state per conversation
// before the tool call checks it.
func CheckConversationID(id string) error {
	return checkConversationID("conversation", id)
}

func checkConversationID(op, id string) error {
	if len(id) > MaxConversationIDBytes {
		return invalidInput(op, fmt.Sprintf("conversation id is %d bytes; at most %d are accepted", len(id), MaxConversationIDBytes))
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x20 || id[i] == 0x7f {
			return invalidInput(op, "conversation id has a control character")
		}
	}
	return nil
}

// Call describes how a tool call was served: the backend that answered and
// every backend tried, in order.
type Call struct {
	Backend  browserbackend.Kind      `json:"backend,omitempty"`
	Attempts []browserbackend.Attempt `json:"attempts,omitempty"`
	// TabID is the backend's id of the tab the call ran in (a CDP target
	// id, or the extension's decimal tab id); "" when the backend does not
	// report tabs.
	TabID string `json:"tabId,omitempty"`
	// Dialog is the JavaScript dialog the call met: answered by the
	// dialog policy, answered by HandleDialog, or (Handled "") raised by
	// an action and still open.
	Dialog *DialogEvent `json:"dialog,omitempty"`
}

func (c *Call) setCall(x Call) {
	if x.Dialog == nil {
		x.Dialog = c.Dialog // the operation's own report
	}
	*c = x
}

// Options configures Tools. Selector is required; the rest has defaults.
type Options struct {
	// Selector picks the backend of every call (one Client per call).
	Selector *browserbackend.Selector
	// ScreenshotDir is where screenshots are written; "" means
	// DefaultScreenshotDir().
	ScreenshotDir string
	// Logger receives one debug record per call (op, backend, outcome; never
	// typed text or params); nil means slog.Default().
	Logger *slog.Logger
	// Guard, optional, puts every tool call under a browser policy (page
	// allow-list, private-network block, write and credential guards), and
	// between calls too: conversations keep their Client (see KeepClients).
	// A ctx made with guard.NewContext overrides it for one invocation. nil:
	// no guard, every tool behaves as without this field.
	Guard *guard.Guard
	// Catalog, optional, stores screenshots taken with as_file;
	// Links, optional, mints the signed link of each. Without Catalog an
	// as_file screenshot fails feature_not_configured.
	Catalog catalog.Catalog
	Links   *catalog.Links
	// Vault, optional, supplies the login tool's credentials; nil
	// makes Login fail feature_not_configured.
	Vault Vault
	// KeepClients makes a conversation keep its Client between calls
	// instead of opening one per call, so consecutive calls skip the
	// backend's connection, target attachment and selection (for
	// cdp-inspect: discovery, a WebSocket dial and Target.attachToTarget).
	// The Client is dropped, and the next call selects afresh, when a call
	// fails with a transport, closed, session-gone or crashed error, when
	// new_tab or use_active_tab asks for another tab, and by Close and
	// Detach of the conversation; Shutdown drops them all. The backend
	// stays the one first selected until the Client is dropped (the
	// attempts of every call are those of that selection). Default false:
	// a Client per call, except that a non-nil Guard keeps Clients too, so
	// that its interception holds between calls (a page's own navigation
	// or popup to an off-list host is refused before its request leaves);
	// a guard passed per call with guard.NewContext holds only during the
	// call unless KeepClients is set. With kept Clients the host calls
	// Shutdown when it is done with the Tools.
	KeepClients bool
	// DownloadDir is where downloads that input actions start are saved,
	// each conversation in a directory of its own under it, when the
	// browser is the runtime's own (browserbackend.CapDownloads); "" makes
	// such a browser refuse downloads. On the user's own browser a
	// download is reported, never saved here. The directory is created
	// (0700) as needed; the host application removes what it no longer
	// wants.
	DownloadDir string
	// UploadDir is the directory FileUpload reads files from (nothing
	// outside it, no symlink out of it); "" makes FileUpload fail
	// feature_not_configured.
	UploadDir string
	// Dialogs is what calls do with a JavaScript dialog the page opens;
	// WithDialogPolicy overrides it for one call. Default DialogReport.
	Dialogs DialogPolicy
	// Recorder, optional, records every tool call (selection, CDP commands,
	// guard decisions, dialogs, screenshots) per conversation; a ctx made
	// with recorder.NewContext overrides it for one call. nil: nothing is
	// recorded.
	Recorder *recorder.Recorder
	// Approvals names the actions that wait for an approval (ApproveGoto,
	// ApproveClick, …: see ApprovalActions and the ops each gates); New
	// panics on an unknown name (CheckApprovals). Approve decides them; a
	// ctx made with WithApprover overrides it for one call. A gated call
	// asks after its input and guard checks and before any backend is
	// contacted, within its own deadline, and the outcome goes into its
	// record. nil Approvals: nothing waits.
	Approvals []string
	Approve   ApprovalFunc
	// Model, optional, carries out the plain-language tools (Plain); nil
	// makes them fail feature_not_configured.
	Model Model
	// Sessions, optional, keeps a managed session per conversation (a
	// record begun when the conversation opens its browser, active once a
	// backend serves it, closed by Close or Detach; New sweeps the
	// records orphaned by an earlier process) and the saved logins of
	// SaveContext and NavigateInput.ContextName. nil: no records, and
	// ContextName is feature_not_configured.
	Sessions *sessions.Store
}

// Tools runs the browser tools for a host application: each method is one
// tool call, takes the invocation (conversation, interface, actor, target
// client) and the tool's input with its browser_mode, validates browser_mode
// with Selector.ParseMode and the input before any CDP command, gets a
// per-call Client from the Selector (or the conversation's kept one), runs
// the operation on the conversation's tab and closes the Client.
//
// The tab is the backend's business: the invocation says which one it wants
// (browserbackend.TabRequest: the conversation's own by default, a new one
// for new_tab, the user's active tab for use_active_tab), and the provider
// that serves the call resolves and pins it at Build. Close and Detach end
// the conversation on every provider (Selector.ReleaseConversation).
//
// A Tools is safe for concurrent use. Every method returns within its
// deadline (the input's timeout_ms, the op's default, or ctx's, whichever is
// first); every failure is an *Error.
type Tools struct {
	sel      *browserbackend.Selector
	pageOpts PageOptions
	log      *slog.Logger
	guard    *guard.Guard
	vault    Vault
	catalog  catalog.Catalog
	links    *catalog.Links

	keepClients bool
	kept        keptClients
	snaps       snapMemory
	dialogs     DialogPolicy
	uploadDir   string
	viewports   *lru.Cache[string, ViewportInput]
	downloads   *downloads
	rec         *recorder.Recorder
	gated       map[string]string // op → the Approvals action that gates it
	approve     ApprovalFunc
	model       Model
	managed     *managed
}

// New returns Tools over opts.Selector; it panics when Selector is nil
// (a wiring bug, not a runtime condition) and with CheckApprovals' error on
// an unknown Approvals name.
func New(opts Options) *Tools {
	if opts.Selector == nil {
		panic("tools: Options.Selector is nil")
	}
	gated := gatedOps(opts.Approvals)
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.Sessions != nil {
		ctx, cancel := context.WithTimeout(context.Background(), DefaultActionTimeout)
		if n, err := opts.Sessions.Sweep(ctx); err != nil {
			log.Warn("tools: sweeping the session records failed", "error", err)
		} else if n > 0 {
			log.Info("tools: swept orphaned or timed-out session records", "count", n)
		}
		cancel()
	}
	return &Tools{
		sel:      opts.Selector,
		pageOpts: PageOptions{ScreenshotDir: opts.ScreenshotDir},
		log:      log.With("module", "browser-tools"),
		guard:    opts.Guard,
		vault:    opts.Vault,
		catalog:  opts.Catalog,
		links:    opts.Links,

		keepClients: opts.KeepClients || opts.Guard != nil,
		dialogs:     opts.Dialogs,
		uploadDir:   opts.UploadDir,
		viewports:   newViewports(),
		downloads:   &downloads{root: opts.DownloadDir},
		rec:         opts.Recorder,
		gated:       gated,
		approve:     opts.Approve,
		model:       opts.Model,
		managed:     &managed{store: opts.Sessions, m: map[string]*managedSession{}},
	}
}

// Selector returns the selector the tools use.
func (t *Tools) Selector() *browserbackend.Selector { return t.sel }

// ActTools are the tools that act on the conversation's page: click, hover,
// type, press a key, scroll, select an option. It is a view of its Tools
// (same options, guard and kept clients) and as safe for concurrent use.
type ActTools struct{ t *Tools }

// Act returns the tools that act on the page.
func (t *Tools) Act() ActTools { return ActTools{t} }

// ReadTools are the tools that read the conversation's page: snapshot,
// screenshot, extract, links, wait for. It is a view of its Tools and as
// safe for concurrent use.
type ReadTools struct{ t *Tools }

// Read returns the tools that read the page.
func (t *Tools) Read() ReadTools { return ReadTools{t} }

// parseMode validates the caller's browser_mode; it is the first thing every
// tool does.
func parseMode(sel *browserbackend.Selector, op, mode string, inv browserbackend.Invocation) (browserbackend.Mode, error) {
	if mode == "" {
		mode = string(inv.Mode)
	}
	m, err := sel.ParseMode(mode)
	if err != nil {
		return "", &Error{Op: op, Code: CodeInvalidMode, Message: "browser_mode is not accepted", Err: err}
	}
	return m, nil
}

func deadline(ctx context.Context, op string, timeoutMs int, def time.Duration) (context.Context, context.CancelFunc, error) {
	d := def
	switch {
	case timeoutMs < 0 || time.Duration(timeoutMs)*time.Millisecond > MaxTimeout:
		return nil, nil, invalidInput(op, "timeout_ms must be 0–"+MaxTimeout.String())
	case timeoutMs > 0:
		d = time.Duration(timeoutMs) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, cancel, nil
}

// spec is what run needs to know about one tool call.
type spec struct {
	op        string
	mode      string
	timeoutMs int
	def       time.Duration
	check     func() error
	tab       browserbackend.TabRequest
	// navURL is the URL navigate loads, checked by the guard before any
	// backend is contacted.
	navURL string
	// typed is text the call types, checked by the credential guard
	// before any backend is contacted.
	typed *string
	// act is the write/credential check of an input action, run under a
	// guard once the page passed its check.
	act func(ctx context.Context, p *Page, g *guard.Guard) error
	// input: the call sends input to the page, and a dialog it raises is
	// its outcome rather than its failure.
	input bool
	// dialogOK: the call runs with a dialog open (it answers it).
	dialogOK bool
	// script: the call runs the agent's JavaScript, which a guard refuses
	// unless its policy allows scripts.
	script bool
	// secret: the call's commands may carry a secret (a credential, a
	// file's bytes, a prompt's answer); a recorder keeps none of their
	// params.
	secret bool
	// about is what the call acts on, for its approval request (never
	// typed text); "" means navURL.
	about string
	// open is how the conversation's browser opens, when this call opens
	// it (navigate's SessionInput).
	open *SessionInput
	// read: the call returns page content, which a browser that reopened
	// a saved login gives only with allow_extract.
	read bool
}

type callResult interface {
	setCall(Call)
	call() Call
}

func (c *Call) call() Call { return *c }

// CallOf returns the Call record of a pointer to a tool result (a
// *NavigateResult, *ActionResult, …), and false for anything else.
func CallOf(result any) (Call, bool) {
	if r, ok := result.(callResult); ok {
		return r.call(), true
	}
	return Call{}, false
}

// run validates, opens the call's client, runs fn on the conversation's tab
// and fills in the Call record; the call's recorder, if any, records it.
func run[R any, PR interface {
	*R
	callResult
}](t *Tools, ctx context.Context, inv browserbackend.Invocation, s spec, fn func(ctx context.Context, p *Page) (R, error)) (R, error) {
	if err := checkInvocation(s.op, inv); err != nil {
		var zero R
		return zero, err
	}
	ctx, rc := t.recorderFor(ctx).Begin(ctx, inv.ConversationID, s.op)
	if rc == nil {
		return runCall[R, PR](t, ctx, inv, s, nil, fn)
	}
	if s.secret || s.typed != nil {
		rc.Sensitive()
	}
	res, err := runCall[R, PR](t, ctx, inv, s, rc, fn)
	recordEnd(rc, t.guardFor(ctx) != nil, err)
	return res, err
}

// checkBeforeBrowser runs the checks of g (nil: none) that need no
// browser: the URL a call loads, running the agent's scripts, and the text
// it types.
func checkBeforeBrowser(ctx context.Context, g *guard.Guard, s spec) error {
	if g == nil {
		return nil
	}
	if s.navURL != "" {
		if err := g.CheckURL(ctx, s.navURL); err != nil {
			return guardErr(s.op, err)
		}
	}
	if s.script && !g.AllowScripts() {
		return guardErr(s.op, &guard.Error{Code: guard.CodeForbidden, Param: "allow_scripts", Rule: guard.RuleAllowScripts,
			Message: "running the agent's JavaScript in the page needs allow_scripts"})
	}
	if s.typed != nil {
		return checkTypedText(s.op, *s.typed)
	}
	return nil
}

// runCall is run once the invocation is checked; rc, possibly nil, records
// the call.
func runCall[R any, PR interface {
	*R
	callResult
}](t *Tools, ctx context.Context, inv browserbackend.Invocation, s spec, rc *recorder.Call, fn func(ctx context.Context, p *Page) (R, error)) (R, error) {
	var zero R
	mode, err := parseMode(t.sel, s.op, s.mode, inv)
	if err != nil {
		return zero, err
	}
	if s.check != nil {
		if err := s.check(); err != nil {
			return zero, err
		}
	}
	ctx, cancel, err := deadline(ctx, s.op, s.timeoutMs, s.def)
	if err != nil {
		return zero, err
	}
	defer cancel()
	inv.Mode = mode
	g := t.guardFor(ctx)
	if err := checkBeforeBrowser(ctx, g, s); err != nil {
		return zero, err
	}
	about := s.about
	if about == "" {
		about = s.navURL
	}
	if err := t.askApproval(ctx, rc, inv, s.op, about); err != nil {
		return zero, err
	}

	ms, fresh, err := t.managed.open(ctx, s.op, inv, s.open)
	if err != nil {
		return zero, err
	}
	defer t.managed.settle(inv.ConversationID, ms, fresh)
	if refuse, _ := t.managed.gated(ms); refuse && s.read {
		return zero, guardErr(s.op, &guard.Error{Code: guard.CodeForbidden, Param: "allow_extract",
			Message: "this browser reopened a saved login; reading its pages needs allow_extract"})
	}

	inv.Tab = s.tab
	client := t.client(inv)
	var callErr error
	defer func() { client.done(callErr) }()
	var session cdp.Session = client.Client
	popts := t.pageOpts
	popts.downloads = &pageDownloads{downloads: t.downloads}
	if t.downloads.root != "" {
		popts.downloads.dir = t.downloads.conversationDir(inv.ConversationID)
	}
	page := NewPage(session, popts)
	page.s = rc.Session(session)             // session itself when not recording
	kept := rc != nil && client.Kind() != "" // selected by an earlier call
	call1 := func(ctx context.Context) (R, error) {
		if err := t.managed.ready(ctx, s.op, ms, client); err != nil {
			var zero R
			return zero, err
		}
		t.restoreViewport(ctx, s.op, inv, page)
		if g == nil {
			return fn(ctx, page)
		}
		w, err := client.watch(ctx, g, s.op)
		if err != nil {
			var zero R
			return zero, err
		}
		return guarded(ctx, g, s.op, page, w, s.act, fn)
	}
	var res R
	var met *DialogEvent
	if s.dialogOK {
		res, err = call1(ctx)
	} else {
		res, met, err = withDialogs(ctx, client.Client, t.dialogPolicy(ctx), s.input, s.op, call1)
	}
	call := Call{Backend: client.Kind(), Attempts: client.Attempts(), Dialog: met}
	if tab, ok := client.Tab(); ok {
		call.TabID = tab.ID
	}
	recordServed(rc, call, kept)
	if err != nil {
		t.log.Debug("browser tool failed", "op", s.op, "mode", mode, "backend", call.Backend,
			"conversationId", inv.ConversationID, "error", err)
		callErr = err
		return zero, withBackend(wrap(s.op, err), call.Backend)
	}
	PR(&res).setCall(call)
	recordResult(rc, PR(&res))
	t.log.Debug("browser tool done", "op", s.op, "mode", mode, "backend", call.Backend,
		"conversationId", inv.ConversationID)
	return res, nil
}

// Navigate is the browser_navigate tool; see Page.Navigate. NewTab runs it in
// a new tab of the conversation's own, UseActiveTab in the user's active tab
// (adopted); either becomes the conversation's tab.
func (t *Tools) Navigate(ctx context.Context, inv browserbackend.Invocation, in NavigateInput) (NavigateResult, error) {
	return run(t, ctx, inv, spec{op: "navigate", mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultNavigateTimeout,
		check: func() error {
			if err := checkURL("navigate", in.URL); err != nil {
				return err
			}
			return checkWaitUntil("navigate", in.WaitUntil)
		}, navURL: in.URL,
		tab: tabWanted(in.NewTab, in.UseActiveTab), open: &in.SessionInput},
		func(ctx context.Context, p *Page) (NavigateResult, error) {
			res, err := p.Navigate(ctx, in)
			t.managed.visited(t.managed.session(inv.ConversationID), res.URL)
			return res, err
		})
}

// Snapshot is the browser_snapshot tool; see Page.Snapshot. Tools keeps
// each conversation's last snapshot (the whole tree, whatever the call
// narrowed it to) for the next call's Diff; a conversation's Close or
// Detach drops it, and so does the bound on what is kept (the least
// recently used conversations' go first), after which Diff shows the whole
// snapshot.
func (r ReadTools) Snapshot(ctx context.Context, inv browserbackend.Invocation, in SnapshotInput) (SnapshotResult, error) {
	return run(r.t, ctx, inv, spec{op: "snapshot", mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultActionTimeout,
		check: func() error {
			if err := checkRange("snapshot", "max_nodes", in.MaxNodes, MaxSnapshotNodes); err != nil {
				return err
			}
			_, err := viewOf("snapshot", in)
			return err
		}},
		func(ctx context.Context, p *Page) (SnapshotResult, error) {
			var prev *keptSnapshot
			if in.Diff {
				if k, ok := r.t.snaps.get(inv.ConversationID); ok {
					prev = &k
				}
			}
			res, kept, err := p.snapshot(ctx, in, prev)
			if err == nil {
				kept.conv = inv.ConversationID
				r.t.snaps.put(kept)
			}
			return res, err
		})
}

// Screenshot is the browser_screenshot tool; see Page.Screenshot.
func (r ReadTools) Screenshot(ctx context.Context, inv browserbackend.Invocation, in ScreenshotInput) (ScreenshotResult, error) {
	return run(r.t, ctx, inv, spec{op: "screenshot", mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultActionTimeout, read: true,
		check: func() error {
			if in.AsFile && r.t.catalog == nil {
				return guardErr("screenshot", &guard.Error{Code: guard.CodeFeatureNotConfigured, Param: "as_file",
					Message: "no file catalogue is configured"})
			}
			return in.check()
		}},
		func(ctx context.Context, p *Page) (ScreenshotResult, error) {
			res, err := p.Screenshot(ctx, in)
			if r.t.redacting(inv) {
				res.URL = Redact(res.URL)
			}
			if err != nil || !in.AsFile {
				return res, err
			}
			return r.t.catalogue(ctx, res)
		})
}

// Click is the browser_click tool; see Page.Click.
func (a ActTools) Click(ctx context.Context, inv browserbackend.Invocation, in ElementInput) (ActionResult, error) {
	return run(a.t, ctx, inv, spec{op: "click", input: true, mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultActionTimeout,
		check: func() error { return checkTarget("click", in.Target) }, act: actionCheck("click", in.Target, false, false), about: in.Target.about()},
		func(ctx context.Context, p *Page) (ActionResult, error) { return p.Click(ctx, in) })
}

// Hover is the browser_hover tool; see Page.Hover.
func (a ActTools) Hover(ctx context.Context, inv browserbackend.Invocation, in ElementInput) (ActionResult, error) {
	return run(a.t, ctx, inv, spec{op: "hover", input: true, mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultActionTimeout,
		check: func() error { return checkTarget("hover", in.Target) }},
		func(ctx context.Context, p *Page) (ActionResult, error) { return p.Hover(ctx, in) })
}

// Type is the browser_type tool; see Page.Type.
func (a ActTools) Type(ctx context.Context, inv browserbackend.Invocation, in TypeInput) (ActionResult, error) {
	return run(a.t, ctx, inv, spec{op: "type", input: true, mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultActionTimeout,
		check: func() error { return checkTarget("type", in.Target) }, typed: &in.Text, about: in.Target.about(),
		act: actionCheck("type", in.Target, in.Submit, true)},
		func(ctx context.Context, p *Page) (ActionResult, error) { return p.Type(ctx, in) })
}

// PressKey is the browser_press_key tool; see Page.PressKey.
func (a ActTools) PressKey(ctx context.Context, inv browserbackend.Invocation, in PressKeyInput) (ActionResult, error) {
	return run(a.t, ctx, inv, spec{op: "press_key", input: true, mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultActionTimeout,
		check: func() error { _, _, err := parseKey("press_key", in.Key); return err },
		act:   actionCheck("press_key", in.Target, isEnter(in.Key), false)},
		func(ctx context.Context, p *Page) (ActionResult, error) { return p.PressKey(ctx, in) })
}

// Scroll is the browser_scroll tool; see Page.Scroll.
func (a ActTools) Scroll(ctx context.Context, inv browserbackend.Invocation, in ScrollInput) (ActionResult, error) {
	return run(a.t, ctx, inv, spec{op: "scroll", input: true, mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultActionTimeout},
		func(ctx context.Context, p *Page) (ActionResult, error) { return p.Scroll(ctx, in) })
}

// SelectOption is the browser_select_option tool; see Page.SelectOption.
func (a ActTools) SelectOption(ctx context.Context, inv browserbackend.Invocation, in SelectOptionInput) (SelectOptionResult, error) {
	return run(a.t, ctx, inv, spec{op: "select_option", input: true, mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultActionTimeout,
		check: func() error {
			if len(in.Values) == 0 {
				return invalidInput("select_option", "values is required")
			}
			return checkTarget("select_option", in.Target)
		}, act: actionCheck("select_option", in.Target, false, false), about: in.Target.about()},
		func(ctx context.Context, p *Page) (SelectOptionResult, error) { return p.SelectOption(ctx, in) })
}

// WaitFor is the browser_wait_for tool; see Page.WaitFor.
func (r ReadTools) WaitFor(ctx context.Context, inv browserbackend.Invocation, in WaitForInput) (WaitForResult, error) {
	return run(r.t, ctx, inv, spec{op: "wait_for", mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultWaitTimeout,
		check: func() error {
			n := 0
			for _, set := range []bool{in.Selector != "", in.Text != "", in.Navigation || in.URLContains != ""} {
				if set {
					n++
				}
			}
			if n != 1 {
				return invalidInput("wait_for", "exactly one of selector, text and navigation/url_contains is required")
			}
			return nil
		}},
		func(ctx context.Context, p *Page) (WaitForResult, error) { return p.WaitFor(ctx, in) })
}

// Extract is the browser_extract tool; see Page.Extract. With an
// Instruction or a Schema it is PlainTools.Extract.
func (r ReadTools) Extract(ctx context.Context, inv browserbackend.Invocation, in ExtractInput) (ExtractResult, error) {
	if in.Instruction != "" || len(in.Schema) > 0 {
		return r.t.Plain().Extract(ctx, inv, in)
	}
	return run(r.t, ctx, inv, spec{op: "extract", mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultActionTimeout, read: true,
		check: func() error { return checkRange("extract", "max_chars", in.MaxChars, MaxExtractChars) }, about: in.Target.about()},
		func(ctx context.Context, p *Page) (ExtractResult, error) {
			res, err := p.Extract(ctx, in)
			if r.t.redacting(inv) {
				res.Text, res.URL = Redact(res.Text), Redact(res.URL)
			}
			return res, err
		})
}

// Links is the links tool; see Page.Links.
func (r ReadTools) Links(ctx context.Context, inv browserbackend.Invocation, in LinksInput) (LinksResult, error) {
	return run(r.t, ctx, inv, spec{op: "links", mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultActionTimeout, read: true,
		check: func() error { return checkRange("links", "limit", in.Limit, MaxLinksLimit) }},
		func(ctx context.Context, p *Page) (LinksResult, error) {
			res, err := p.Links(ctx, in)
			if r.t.redacting(inv) {
				res.URL = Redact(res.URL)
				for i := range res.Links {
					res.Links[i].Href, res.Links[i].Text = Redact(res.Links[i].Href), Redact(res.Links[i].Text)
				}
			}
			return res, err
		})
}

func checkRange(op, field string, v, max int) error {
	if v < 0 || v > max {
		return invalidInput(op, field+" must be 0–"+strconv.Itoa(max)+" (0: default)")
	}
	return nil
}

func checkTarget(op string, t Target) error {
	if t.empty() {
		return invalidInput(op, "ref or selector is required")
	}
	if t.Ref != "" {
		if _, _, err := parseAnyRef(t.Ref); err != nil {
			return invalidInput(op, err.Error())
		}
	}
	return nil
}

// tabWanted is the tab request of a call's new_tab and use_active_tab.
func tabWanted(newTab, useActive bool) browserbackend.TabRequest {
	switch {
	case useActive:
		return browserbackend.TabRequest{Want: browserbackend.TabActive}
	case newTab:
		return browserbackend.TabRequest{Want: browserbackend.TabNew}
	}
	return browserbackend.TabRequest{}
}
