package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mxschmitt/playwright-go"

	"github.com/browserchain/browserchain/browserbackend"
)

// EnvExecutable names the environment variable that, when Options.ExecutablePath
// is empty, gives the browser executable to launch.
const EnvExecutable = "BROWSERCHAIN_CHROMIUM"

// DefaultExecutable is the browser launched when neither
// Options.ExecutablePath nor EnvExecutable is set: Debian's chromium package.
const DefaultExecutable = "/usr/bin/chromium"

// DefaultMaxPages is the page bound of an Options whose MaxPages is zero.
const DefaultMaxPages = 32

// DefaultPageIdle is the PageIdle of an Options whose PageIdle is zero: a
// conversation's page survives a pause of a minute between tool calls
// however many other conversations open pages meanwhile.
const DefaultPageIdle = time.Minute

// maxLostMemo bounds how many conversation ids whose page was evicted or
// lost a Browser remembers (to report CodePageEvicted or CodePageLost to
// them); the oldest are forgotten.
const maxLostMemo = 4096

// DefaultLaunchTimeout bounds one launch (driver start plus browser start)
// when Options.LaunchTimeout is zero.
const DefaultLaunchTimeout = 30 * time.Second

// quietArgs are the Chromium flags that keep a browser on a closed network
// quiet.
var quietArgs = []string{
	"--disable-gpu",
	"--disable-quic",
	"--no-first-run",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
}

// tempProfilePrefix names the temporary profile directories of Browsers
// whose Options.ProfileDir is empty.
const tempProfilePrefix = "browserchain-local-"

// configSubdir is the directory inside the profile that the browser gets as
// XDG_CONFIG_HOME. Chromium derives its crash-report database from it, so its
// chrome_crashpad_handler helpers, which leave the browser's process group,
// still name the profile on their command line (so that Close finds them), and
// nothing is written to the user's ~/.config/chromium. (The flag
// --disable-crashpad-for-testing would avoid the helpers but, with Chromium
// 156, makes every navigation fail with net::ERR_ABORTED.)
const configSubdir = "xdg-config"

// scratchPrefix names the directory, in the system's temporary directory,
// that a launched browser gets as TMPDIR. Chromium makes scratch
// directories of its own there (org.chromium.Chromium.*, its singleton
// socket among them) and removes them when it exits, but not when it is
// killed: they piled up in the system's temporary directory. teardown
// removes the whole scratch directory, and sweepStaleProfiles one a killed
// host left (its ownerLink names the host process). The name is short on
// purpose: the singleton socket's path must fit a Unix socket address
// (maxSocketPath); where it would not, the browser keeps the system's
// TMPDIR.
const scratchPrefix = "browserchain-t-"

// maxSocketPath bounds the path of Chromium's singleton socket under a
// scratch directory: a Unix socket address holds 108 bytes on Linux, 104
// on macOS, with its terminating NUL; Chromium exits (FATAL) on a longer
// one.
const maxSocketPath = 100

// chromiumSocketSuffix is what Chromium appends to TMPDIR for its
// singleton socket.
const chromiumSocketSuffix = "/org.chromium.Chromium.XXXXXX/SingletonSocket"

// Options configures a Browser. The zero value launches the system Chromium
// headless in a temporary profile.
type Options struct {
	// ExecutablePath is the Chrome/Chromium binary. Empty means the value of
	// $BROWSERCHAIN_CHROMIUM, else DefaultExecutable.
	ExecutablePath string
	// ProfileDir is the user-data directory of the persistent context. Empty
	// means a fresh temporary directory, removed by Close. A directory given
	// here is left in place.
	ProfileDir string
	// Headed shows a browser window (needs a display); the default is headless.
	Headed bool
	// Args are extra Chromium flags, appended after the quiet flags.
	Args []string
	// DriverDirectory is the Playwright driver directory (with package/cli.js
	// and node). Empty means playwright-go's default: $PLAYWRIGHT_DRIVER_PATH,
	// else ~/.cache/ms-playwright-go/<version> as scripts/setup.sh lays it out.
	DriverDirectory string
	// MaxPages is a soft bound on the open conversation pages: opening one
	// more, or a client detaching while more are open, closes least recently
	// used pages that are evictable — no client attached and unused for at
	// least PageIdle — down to the bound. When no page is evictable (a burst
	// of concurrent conversations) the bound is exceeded rather than a page
	// that a conversation is still working on closed. The next command of a
	// conversation whose page was evicted fails once with ClassClosed /
	// CodePageEvicted (the one after it, or a Page.navigate, opens a fresh
	// page), so a closed page is never read as a blank one. 0 means DefaultMaxPages; negative means
	// no bound.
	MaxPages int
	// PageIdle is how long a page must have had no client (between two tool
	// calls of its conversation) before MaxPages may evict it. 0 means
	// DefaultPageIdle; negative means at once.
	PageIdle time.Duration
	// LaunchTimeout bounds one launch; 0 means DefaultLaunchTimeout.
	LaunchTimeout time.Duration
	// Logger receives launch and close records; nil means slog.Default().
	Logger *slog.Logger
	// Isolated gives each conversation a browser context of its own
	// (Playwright Browser.NewContext beside the persistent one): its
	// cookies, storage and cache are seen by no other conversation and
	// never reach ProfileDir, and CloseConversation disposes of them. The
	// provider then declares browserbackend.CapIsolated. Default false:
	// every conversation shares the persistent context of ProfileDir, so a
	// sign-in made in one is seen by all (Playwright MCP's default; its
	// --isolated is this option). A conversation's first page then opens
	// without the prepared spare page (≈ 50 ms more).
	Isolated bool
}

// Browser is one lazily launched, shared Chromium driven through
// Playwright. Nothing runs until the first command of some conversation
// needs a page; then one launch starts the Playwright driver and a
// persistent context, and every later invocation reuses it (a warm first
// command costs one CDP round trip). Each conversation id gets its own page
// and Playwright CDPSession, kept across invocations until
// CloseConversation or Close.
//
// If the browser dies (crash, killed), the next use launches a new one.
//
// A Browser is safe for concurrent use. Close releases everything.
type Browser struct {
	opts Options
	log  *slog.Logger
	done chan struct{} // closed by Close

	mu     sync.Mutex
	closed bool
	launch *launchCall // the current or last launch; nil before the first
	st     *state      // the live browser; nil when not launched or dead
	pages  map[string]*pageEntry
	// tabs holds the conversations with more than one page (see convTabs).
	tabs map[string]*convTabs
	// popupNoted is closed, and replaced, when a popup is noted.
	popupNoted chan struct{}
	// lost holds the conversations whose page MaxPages closed
	// (CodePageEvicted) or that went away under them (CodePageLost: crashed,
	// closed, its browser gone) and which have not been told yet, with that
	// code; lostOrder is its insertion order (bounded by maxLostMemo).
	lost      map[string]string
	lostOrder []string
	wg        sync.WaitGroup // launches, page openings, sends in flight

	tune tuning
	// openings counts the page opening attempts running (openPage).
	openings atomic.Int32

	// contexts are the isolated conversations' browser contexts
	// (Options.Isolated), by conversation id.
	contexts map[string]*isoContext

	// lastTrack is the command tracker of the last browser launched (nil
	// before the first; guarded by mu): a timeout while waiting for a
	// relaunch reports when that browser last answered.
	lastTrack *browserbackend.InFlight
}

// launchCall is one launch that concurrent first uses share.
type launchCall struct {
	done chan struct{}
	st   *state
	err  error
}

// state is one launched driver + browser.
type state struct {
	pw            *playwright.Playwright
	bctx          playwright.BrowserContext
	profileDir    string
	removeProfile bool
	profileLock   *os.File // the temporary profile's owner lock (claimTempDir); nil for Options.ProfileDir
	scratchDir    string   // the browser's TMPDIR, removed at teardown; "" for the system's
	scratchLock   *os.File // the scratch directory's owner lock
	driverPID     int
	driverWatch   chan struct{} // closed when the driver-exit watcher ended; nil without one
	browserPID    int           // the Chromium browser process; 0 when not found
	browserWatch  chan struct{} // closed when the browser-exit watcher ended; nil without one
	dead          chan struct{} // closed when the context closes, the driver or the browser exits, or the driver connection is lost
	deadOnce      sync.Once
	track         *browserbackend.InFlight // the browser's commands in flight, for timeout diagnostics
	spare         *spareTab                // a ready blank page for the next new conversation
	refilling     bool                     // a spare is being prepared
	refilled      chan struct{}            // closed when the current refill ends
}

// spareTab is a blank page with its CDPSession, prepared ahead so that a new
// conversation's first command does not wait ≈ 200 ms for a page.
type spareTab struct {
	page playwright.Page
	sess playwright.CDPSession
	// crashed is set when the blank page's renderer crashed while it was
	// waiting: Playwright reports a crash once, so a conversation that
	// claimed it later would wait on a dead page forever.
	crashed atomic.Bool
}

// newSpareTab wraps a prepared page and its CDPSession, watching for a crash.
func newSpareTab(page playwright.Page, sess playwright.CDPSession) *spareTab {
	t := &spareTab{page: page, sess: sess}
	page.OnCrash(func(playwright.Page) { t.crashed.Store(true) })
	return t
}

func (s *state) markDead() { s.deadOnce.Do(func() { close(s.dead) }) }

func (s *state) isDead() bool {
	select {
	case <-s.dead:
		return true
	default:
		return false
	}
}

// New returns a Browser configured by opts. It launches nothing.
func New(opts Options) *Browser {
	if opts.ExecutablePath == "" {
		opts.ExecutablePath = os.Getenv(EnvExecutable)
	}
	if opts.ExecutablePath == "" {
		opts.ExecutablePath = DefaultExecutable
	}
	if opts.LaunchTimeout <= 0 {
		opts.LaunchTimeout = DefaultLaunchTimeout
	}
	if opts.MaxPages == 0 {
		opts.MaxPages = DefaultMaxPages
	}
	if opts.PageIdle == 0 {
		opts.PageIdle = DefaultPageIdle
	}
	lg := opts.Logger
	if lg == nil {
		lg = slog.Default()
	}
	return &Browser{
		opts:  opts,
		log:   lg.With("backend", string(browserbackend.KindLocal)),
		done:  make(chan struct{}),
		pages: make(map[string]*pageEntry),
		tabs:  make(map[string]*convTabs),

		popupNoted: make(chan struct{}),
		lost:       make(map[string]string),
		contexts:   make(map[string]*isoContext),
		tune:       defaultTuning,
	}
}

// tuning is a Browser's clock, the waits it bounds and how it opens a page.
// New sets defaultTuning; only the package's tests change it
// (export_test.go).
type tuning struct {
	// now is the clock of page idleness and timeout diagnostics.
	now func() time.Time
	// closeTimeout bounds a graceful close of the browser context; after it
	// the driver is killed.
	closeTimeout time.Duration
	// pageOpenHedge is how long one page-opening attempt runs before another
	// starts beside it.
	pageOpenHedge time.Duration
	// openAttempt is one attempt of openPage.
	openAttempt func(*state) openedPage
}

var defaultTuning = tuning{
	now:           time.Now,
	closeTimeout:  closeTimeout,
	pageOpenHedge: pageOpenHedge,
	openAttempt:   openPageOnce,
}

// ExecutablePath returns the browser binary this Browser launches.
func (b *Browser) ExecutablePath() string { return b.opts.ExecutablePath }

// Launched reports whether a live browser is running now.
func (b *Browser) Launched() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st != nil && !b.st.isDead()
}

// acquire returns the live browser, launching it when needed. Concurrent
// callers share one launch; each honours its own ctx while waiting (the launch
// itself continues, bounded by LaunchTimeout, so the next caller finds it
// warm). Errors are *browserbackend.Error: launch_failed (transport), closed,
// or the ctx's aborted/timeout.
func (b *Browser) acquire(ctx context.Context) (*state, error) {
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return nil, errClosed("")
		}
		if b.st != nil && !b.st.isDead() {
			st := b.st
			b.mu.Unlock()
			return st, nil
		}
		call := b.launch
		if call == nil || isDone(call.done) {
			// Nothing launched yet, the last launch failed, or its browser
			// died: start a new launch (a failed one is retried by the next
			// caller). A dead browser's driver is torn down first.
			old := b.st
			call = &launchCall{done: make(chan struct{})}
			b.launch = call
			b.st = nil
			b.wg.Add(1)
			go b.runLaunch(call, old)
		}
		b.mu.Unlock()

		select {
		case <-call.done:
			if call.err != nil {
				return nil, call.err
			}
			// Loop: the state may already have died; re-check under the lock.
		case <-ctx.Done():
			return nil, b.notSentErr(ctx, nil, "waiting for the browser to launch")
		case <-b.done:
			return nil, errClosed("")
		}
	}
}

// notSentErr classifies ctx's end while a command waited for something
// before it could be sent (waiting says what): a timeout carries the
// diagnostics of st, the live browser, or when there is none (a launch in
// progress) those of the last browser with nothing in flight and no uptime,
// so that it says how long ago the backend last answered.
func (b *Browser) notSentErr(ctx context.Context, st *state, waiting string) *browserbackend.Error {
	e := ctxErr(ctx, "", false)
	if e.Class != browserbackend.ClassTimeout {
		return e
	}
	e.Message += ", " + waiting
	switch {
	case st != nil:
		e.Diagnostics = st.track.Diagnostics()
	default:
		b.mu.Lock()
		last := b.lastTrack
		b.mu.Unlock()
		e.Diagnostics = &browserbackend.Diagnostics{}
		if at := lastAnswer(last); !at.IsZero() {
			e.Diagnostics.SinceLastAnswer = b.tune.now().Sub(at)
		}
	}
	return e
}

func lastAnswer(f *browserbackend.InFlight) time.Time {
	if f == nil {
		return time.Time{}
	}
	return f.LastAnswer()
}

func isDone(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// runLaunch performs one launch and publishes its result.
func (b *Browser) runLaunch(call *launchCall, old *state) {
	defer b.wg.Done()
	if old != nil {
		if err := b.teardown(old); err != nil {
			b.log.Warn("local: tearing down a dead browser", "error", err)
		}
	}
	start := time.Now()
	st, err := b.doLaunch()
	b.mu.Lock()
	if err == nil {
		b.st = st // after Close, Close itself tears st down
		b.lastTrack = st.track
	}
	call.st, call.err = st, err
	close(call.done)
	b.mu.Unlock()
	if err != nil {
		b.log.Warn("local: launch failed", "executable", b.opts.ExecutablePath, "error", err)
		return
	}
	b.log.Info("local: browser launched", "executable", b.opts.ExecutablePath,
		"profile", st.profileDir, "driverPid", st.driverPID, "elapsed", time.Since(start))
}

// doLaunch starts the driver and the persistent context. On failure it
// leaves nothing running and returns a launch_failed transport error: with
// DetailNotInstalled when the executable or the driver is missing (see
// Preflight), else with the driver's or the browser's own error as cause.
func (b *Browser) doLaunch() (*state, error) {
	if err := b.Preflight(context.Background()); err != nil {
		return nil, err
	}
	st := &state{dead: make(chan struct{}), track: browserbackend.NewInFlight(b.tune.now)}
	sweepStaleProfiles(os.TempDir(), time.Now(), b.log)
	if b.opts.ProfileDir != "" {
		if err := os.MkdirAll(b.opts.ProfileDir, 0o700); err != nil {
			return nil, launchFailed("cannot create profile directory", err)
		}
		st.profileDir = b.opts.ProfileDir
	} else {
		dir, lock, err := claimTempDir(tempProfilePrefix)
		if err != nil {
			return nil, launchFailed("cannot create a temporary profile directory", err)
		}
		st.profileDir, st.profileLock, st.removeProfile = dir, lock, true
	}
	if abs, err := filepath.Abs(st.profileDir); err == nil {
		st.profileDir = abs
	}
	fail := func(msg string, err error) (*state, error) {
		_ = b.teardown(st) // leaves nothing running; the launch error is what matters
		return nil, launchFailed(msg, err)
	}
	st.scratchDir, st.scratchLock = makeScratch(b.log)

	// Stdout/Stderr stay nil on purpose: a non-nil Stderr without Logger makes
	// playwright-go redirect the global log package; Verbose stays false, so
	// playwright-go itself writes nothing. The driver's stderr is inherited.
	pw, err := playwright.Run(&playwright.RunOptions{
		DriverDirectory:     b.opts.DriverDirectory,
		SkipInstallBrowsers: true,
	})
	if err != nil {
		return fail("cannot start the Playwright driver", err)
	}
	st.pw, st.driverPID = pw, pw.Pid()
	// A driver that dies (killed, crashed) closes no BrowserContext in
	// playwright-go: only its exit tells that this state is dead, so that the
	// next use relaunches instead of failing on the lost connection forever.
	st.driverWatch = make(chan struct{})
	if !watchExit(st.driverPID, st.markDead, st.driverWatch) {
		st.driverWatch = nil
	}

	args := make([]string, 0, len(quietArgs)+len(b.opts.Args)+1)
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox") // root needs it
	}
	args = append(args, quietArgs...)
	args = append(args, b.opts.Args...)
	bctx, err := pw.Chromium.LaunchPersistentContext(st.profileDir, playwright.BrowserTypeLaunchPersistentContextOptions{
		ExecutablePath: playwright.String(b.opts.ExecutablePath),
		Headless:       playwright.Bool(!b.opts.Headed),
		Args:           args,
		Env:            browserEnv(filepath.Join(st.profileDir, configSubdir), st.scratchDir),
		Timeout:        playwright.Float(float64(b.opts.LaunchTimeout.Milliseconds())),
	})
	if err != nil {
		return fail("cannot launch "+b.opts.ExecutablePath, err)
	}
	st.bctx = bctx
	bctx.OnClose(func(playwright.BrowserContext) { st.markDead() })
	// A killed browser (not the driver) is noticed by Playwright only late,
	// and pending CDPSession calls are not failed: watch the browser process
	// itself, so that its exit fails in-flight commands at once (Send waits
	// on st.dead) and the next use relaunches.
	if pid := browserProcess(st.driverPID, st.profileDir); pid > 0 {
		st.browserPID = pid
		st.browserWatch = make(chan struct{})
		if !watchExit(pid, st.markDead, st.browserWatch) {
			st.browserWatch = nil
		}
	}
	if ps := bctx.Pages(); len(ps) > 0 {
		// The context's initial blank page becomes the first spare.
		if sess, err := bctx.NewCDPSession(ps[0]); err == nil {
			st.spare = newSpareTab(ps[0], sess)
		}
	}
	return st, nil
}

// teardown closes the context and the driver of st and removes a temporary
// profile. As a last resort (Linux) it kills any process still carrying the
// profile directory, so nothing outlives it, unless the browser never
// started on a profile given by Options.ProfileDir.
func (b *Browser) teardown(st *state) error {
	if st == nil {
		return nil
	}
	var errs []error
	if st.bctx != nil {
		if err := b.closeContext(st); err != nil && !errors.Is(err, playwright.ErrTargetClosed) {
			errs = append(errs, fmt.Errorf("local: close browser context: %w", err))
		}
	}
	st.markDead()
	if st.pw != nil {
		// Stop closes the driver's stdin and waits for it to exit; the driver
		// kills any browser it still owns on exit.
		if err := st.pw.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("local: stop playwright driver: %w", err))
		}
		if st.driverWatch != nil {
			// Stop normally waits for the driver's exit; if it could not,
			// kill the driver so that the watcher (and Close) end.
			timer := time.NewTimer(closeTimeout)
			select {
			case <-st.driverWatch:
			case <-timer.C:
				if p, err := os.FindProcess(st.driverPID); err == nil {
					_ = p.Kill()
				}
				<-st.driverWatch
			}
			timer.Stop()
		}
	}
	// A launch that failed on a given profile may have failed because
	// another browser uses it (Chromium's ProcessSingleton): that browser's
	// processes are not ours to reap.
	if st.bctx != nil || st.removeProfile {
		if killed := reapProfileProcesses(st.profileDir); killed > 0 {
			b.log.Warn("local: killed leftover browser processes", "count", killed, "profile", st.profileDir)
		}
	}
	if st.browserWatch != nil {
		// The browser has exited (reaped above); its watcher ends at once.
		timer := time.NewTimer(closeTimeout)
		select {
		case <-st.browserWatch:
		case <-timer.C:
			errs = append(errs, errors.New("local: the browser process did not exit"))
		}
		timer.Stop()
	}
	if st.removeProfile {
		if err := releaseTempDir(st.profileDir, st.profileLock); err != nil {
			errs = append(errs, fmt.Errorf("local: remove profile: %w", err))
		}
	}
	if err := releaseTempDir(st.scratchDir, st.scratchLock); err != nil {
		errs = append(errs, fmt.Errorf("local: remove the browser's scratch directory: %w", err))
	}
	return errors.Join(errs...)
}

// closeTimeout bounds a graceful context close (the default of
// tuning.closeTimeout) and each wait at teardown for the driver or the
// browser process to exit.
const closeTimeout = 10 * time.Second

// closeContext closes st's browser context (the browser exits). If that
// takes longer than b.tune.closeTimeout (a wedged driver), it kills the
// driver process, which makes the pending close fail at once, so Close never
// hangs.
func (b *Browser) closeContext(st *state) error {
	done := make(chan error, 1)
	go func() { done <- st.bctx.Close() }()
	timer := time.NewTimer(b.tune.closeTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
	}
	b.log.Warn("local: the browser did not close in time; killing the Playwright driver", "driverPid", st.driverPID)
	if p, err := os.FindProcess(st.driverPID); err == nil && st.driverPID > 0 {
		_ = p.Kill()
	}
	return <-done
}

// Close releases every page, the browser context and the driver, and removes
// a temporary profile: when it returns, no Chromium or driver process
// of this Browser runs. In-flight and later sends fail with ClassClosed. A
// launch in progress is waited for (the browser start is bounded by
// LaunchTimeout) and then torn down.
// Idempotent; safe to call concurrently with everything else.
func (b *Browser) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	close(b.done)
	call := b.launch
	pages := b.pages
	b.pages = make(map[string]*pageEntry)
	b.lost, b.lostOrder = make(map[string]string), nil
	b.contexts = make(map[string]*isoContext) // they close with the browser
	b.mu.Unlock()

	for _, p := range pages {
		p.shutdown()
	}
	if call != nil {
		<-call.done
	}
	b.mu.Lock()
	st := b.st
	b.st = nil
	b.mu.Unlock()
	err := b.teardown(st)
	b.wg.Wait() // every background call returns once the driver is gone
	b.log.Info("local: browser closed")
	return err
}

// CloseConversation closes the page of conversationID, if any; the next
// invocation of that conversation opens a new page. Use it when a
// conversation is detached or closed.
func (b *Browser) CloseConversation(conversationID string) error {
	b.mu.Lock()
	keys := []string{conversationID}
	var popups []popup
	if ct := b.tabs[conversationID]; ct != nil {
		keys, popups = ct.keys, ct.popups
		delete(b.tabs, conversationID)
	}
	var ps []*pageEntry
	for _, k := range keys {
		if p := b.pages[k]; p != nil {
			ps = append(ps, p)
		}
		delete(b.pages, k)
		delete(b.lost, k) // closed on purpose: nothing to report
	}
	b.mu.Unlock()
	var errs []error
	for _, pp := range popups {
		if !pp.page.IsClosed() {
			_ = pp.page.Close()
		}
	}
	for _, p := range ps {
		if err := p.close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := b.closeContextOf(conversationID); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Conversations returns the conversation ids that hold a page, sorted.
func (b *Browser) Conversations() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	ids := make([]string, 0, len(b.pages))
	for id := range b.pages {
		if !strings.Contains(id, "\x00") {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// page returns the open page of conversationID, opening one (and launching
// the browser) when needed. Concurrent callers for the same conversation share
// one page.
//
// A conversation whose page was evicted or lost is told once, with
// CodePageEvicted or CodePageLost, instead of getting a fresh blank page —
// unless its command is Page.navigate (intentNavigate), which replaces the
// content anyway: then the notice is dropped and a fresh page opened. Open
// (intentOpen) leaves the notice to the first command and returns no page.
//
// The page is returned with c attached (as an event sink), which also keeps
// it from being evicted (MaxPages) before c uses it.
func (b *Browser) page(ctx context.Context, conversationID string, c *Client, intent openIntent) (*pageEntry, error) {
	for {
		st, err := b.acquire(ctx)
		if err != nil {
			return nil, err
		}
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return nil, errClosed("")
		}
		p := b.pages[conversationID]
		if p != nil && (p.st != st || p.isGone()) {
			// From a dead browser, or closed under the conversation: its
			// URL and content are gone.
			delete(b.pages, conversationID)
			b.rememberLostLocked(conversationID, CodePageLost)
			p = nil
		}
		var victim *pageEntry
		if p == nil {
			if code, ok := b.lost[conversationID]; ok {
				// Its page was evicted or lost: say so once instead of
				// handing out a blank page that would be read as the
				// site's content; a navigation replaces the content anyway.
				switch intent {
				case intentOpen:
					b.mu.Unlock()
					return nil, nil // the first command decides
				case intentCommand:
					delete(b.lost, conversationID)
					b.mu.Unlock()
					return nil, b.errLost(code)
				}
				delete(b.lost, conversationID)
			}
			victim = b.evictLocked()
			p = newPageEntry(b, st, conversationID)
			b.pages[conversationID] = p
			var spare *spareTab
			if !b.opts.Isolated { // the spare is a page of the shared context
				spare, st.spare = st.spare, nil
			}
			if spare != nil && spare.page.IsClosed() {
				spare = nil // went away with nobody waiting on it
			}
			b.wg.Add(1)
			if victim != nil {
				b.wg.Add(1)
			}
			b.mu.Unlock()
			go p.open(spare)
			if victim != nil {
				go func() {
					defer b.wg.Done()
					victim.close()
				}()
			}
		} else {
			p.lastUsed = b.tune.now()
			b.mu.Unlock()
		}
		select {
		case <-p.ready:
			if p.err != nil {
				b.mu.Lock()
				if b.pages[conversationID] == p {
					delete(b.pages, conversationID)
				}
				b.mu.Unlock()
				if st.isDead() {
					continue // the browser died under us: relaunch once more
				}
				return nil, p.err
			}
			b.mu.Lock()
			ok := b.pages[conversationID] == p && p.attach(c)
			if ok {
				p.lastUsed = b.tune.now()
			} else {
				// Evicted or closed between its opening and c attaching:
				// the conversation never saw that page, so there is
				// nothing to tell it (a notice still pending would have
				// been returned above, before the page was opened).
				delete(b.lost, conversationID)
			}
			b.mu.Unlock()
			if !ok {
				continue // get a fresh page
			}
			return p, nil
		case <-ctx.Done():
			return nil, b.notSentErr(ctx, st, "waiting for the page to open")
		case <-b.done:
			return nil, errClosed("")
		}
	}
}

// evictLocked makes room for a new page when MaxPages is reached: it removes
// from the map and returns the least recently used page that no client is
// attached to, or nil (also when every page is in use: then the limit is
// exceeded rather than a busy page closed). b.mu must be held.
func (b *Browser) evictLocked() *pageEntry {
	if b.opts.MaxPages <= 0 || len(b.pages) < b.opts.MaxPages {
		return nil
	}
	return b.takeIdleLocked()
}

// takeIdleLocked removes from the map and returns the least recently used
// evictable page (open, no client attached, unused for PageIdle), or nil.
// Its conversation is remembered, to be told at its next command. b.mu must
// be held.
func (b *Browser) takeIdleLocked() *pageEntry {
	var victim *pageEntry
	now := b.tune.now()
	for _, p := range b.pages {
		if !isDone(p.ready) || p.attached() > 0 || p.isGone() {
			continue
		}
		if b.opts.PageIdle > 0 && now.Sub(p.lastUsed) < b.opts.PageIdle {
			continue
		}
		if victim == nil || p.lastUsed.Before(victim.lastUsed) {
			victim = p
		}
	}
	if victim != nil {
		delete(b.pages, victim.conv)
		b.rememberLostLocked(victim.conv, CodePageEvicted)
		b.log.Info("local: closing least recently used page", "conversationId", victim.conv, "maxPages", b.opts.MaxPages)
	}
	return victim
}

// rememberLostLocked records that conv's page was evicted or lost (code),
// forgetting the oldest record beyond maxLostMemo. b.mu must be held.
func (b *Browser) rememberLostLocked(conv, code string) {
	if _, ok := b.lost[conv]; ok {
		return
	}
	b.lost[conv] = code
	b.lostOrder = append(b.lostOrder, conv)
	for len(b.lostOrder) > maxLostMemo {
		delete(b.lost, b.lostOrder[0])
		b.lostOrder = b.lostOrder[1:]
	}
	if len(b.lostOrder) > 2*len(b.lost)+64 {
		// Drop the ids already told, so lostOrder stays proportional.
		kept := b.lostOrder[:0]
		for _, id := range b.lostOrder {
			if _, ok := b.lost[id]; ok {
				kept = append(kept, id)
			}
		}
		b.lostOrder = kept
	}
}

// errLost is the notice of a conversation whose page was evicted or lost.
func (b *Browser) errLost(code string) *browserbackend.Error {
	if code == CodePageEvicted {
		return errPageEvicted(b.opts.MaxPages)
	}
	return errPageLost()
}

// trimPages closes least recently used idle pages while more than MaxPages
// are open. A burst of concurrent conversations can exceed the bound (busy
// pages are never evicted); clients call this as they detach so the excess
// does not stay open until some later conversation opens a page.
func (b *Browser) trimPages() {
	b.mu.Lock()
	if b.closed || b.opts.MaxPages <= 0 {
		b.mu.Unlock()
		return
	}
	var victims []*pageEntry
	for len(b.pages) > b.opts.MaxPages {
		v := b.takeIdleLocked()
		if v == nil {
			break
		}
		victims = append(victims, v)
	}
	b.wg.Add(len(victims))
	b.mu.Unlock()
	for _, v := range victims {
		go func() {
			defer b.wg.Done()
			_ = v.close()
		}()
	}
}

// openIntent is why a client needs its page (see Browser.page).
type openIntent int

const (
	intentOpen     openIntent = iota // Client.Open, before any command
	intentCommand                    // a command other than Page.navigate
	intentNavigate                   // Page.navigate
)

// pageClosed handles p closing under its conversation (not by a renderer
// crash): besides forget, it drops the spare of p's browser, since a page
// closing may be the first sign of its browser going away, and a spare
// claimed from a dead browser would fail the next conversation's command.
// A page then opens with a round trip to the browser, which tells whether
// it lives (see openPageOnce).
func (b *Browser) pageClosed(p *pageEntry) {
	if !b.forget(p) || p.crashed.Load() {
		return
	}
	b.mu.Lock()
	spare := p.st.spare
	p.st.spare = nil
	track := spare != nil && !b.closed
	if track {
		b.wg.Add(1)
	}
	b.mu.Unlock()
	if track {
		go func() {
			defer b.wg.Done()
			_ = spare.page.Close()
		}()
	}
}

// forget drops p from the page map if it is still the conversation's page:
// then it went away under the conversation (crashed, closed by someone
// else, its browser gone), which the conversation's next command is told
// (CodePageLost). Pages closed on purpose (CloseConversation, eviction,
// Close) have left the map before. It reports whether p was dropped.
func (b *Browser) forget(p *pageEntry) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pages[p.conv] != p {
		return false
	}
	delete(b.pages, p.conv)
	if !b.closed {
		b.rememberLostLocked(p.conv, CodePageLost)
	}
	return true
}

// Client returns the per-invocation ScopedClient of a conversation.
// It launches nothing: the browser and the conversation's page are opened by
// the first Send (or by Open). The client is also an EventSource of the page's
// CDP events.
func (b *Browser) Client(conversationID string) *Client {
	return &Client{b: b, conv: conversationID, closing: make(chan struct{})}
}

// track registers one background call with b.wg unless b is closed.
func (b *Browser) track() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.wg.Add(1)
	return true
}

// browserEnv returns this process's environment with XDG_CONFIG_HOME set to
// configHome and TMPDIR to tmp unless it is "" (Playwright replaces the
// browser's whole environment by Env).
func browserEnv(configHome, tmp string) map[string]string {
	env := make(map[string]string)
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			env[k] = v
		}
	}
	env["XDG_CONFIG_HOME"] = configHome
	if tmp != "" {
		env["TMPDIR"] = tmp
	}
	return env
}

// maybeRefill starts preparing a spare page when the live browser has none.
// Clients call it as their invocation ends, so that preparing the page does
// not compete with the commands of the conversation that took the last one.
func (b *Browser) maybeRefill() {
	b.mu.Lock()
	st := b.st
	start := st != nil && b.startRefillLocked(st)
	b.mu.Unlock()
	if start {
		go b.refillSpare(st)
	}
}

// startRefillLocked reports whether the caller must start refillSpare for st:
// st has no spare, none is being prepared, and b is open. It registers the
// refill with b.wg. b.mu must be held.
func (b *Browser) startRefillLocked(st *state) bool {
	if b.closed || b.opts.Isolated || st.spare != nil || st.refilling || st.isDead() {
		return false
	}
	st.refilling = true
	st.refilled = make(chan struct{})
	b.wg.Add(1)
	return true
}

// refillSpare prepares a blank page and its CDPSession as st's next spare.
// Failures are ignored: the next new conversation then opens its own page.
func (b *Browser) refillSpare(st *state) {
	defer b.wg.Done()
	var spare *spareTab
	if page, sess, err := b.openPage(st); err == nil {
		spare = newSpareTab(page, sess)
	}
	b.mu.Lock()
	st.refilling = false
	close(st.refilled)
	keep := spare != nil && !b.closed && !st.isDead() && st.spare == nil
	if keep {
		st.spare = spare
	}
	b.mu.Unlock()
	if spare != nil && !keep {
		_ = spare.page.Close()
	}
}
