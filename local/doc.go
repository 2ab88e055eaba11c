// Package local is the last-resort browser backend:
// a sacrificial Chromium that the library launches itself through Playwright,
// shared by all invocations, with one page per conversation.
//
// # Use
//
//	b := local.New(local.Options{})             // launches nothing yet
//	defer b.Close()                              // no browser or driver survives it
//	sel := browserbackend.NewSelector(browserbackend.Options{
//		Providers: []browserbackend.Provider{ /* …, */ local.NewProvider(b)},
//	})
//
// NewProvider always proposes a candidate ("local: always last"); its Build
// returns a *Client bound to the invocation's conversation page. A Client can
// also be used directly: b.Client(conversationID).Send(ctx, cmd).
//
// # Lifecycle
//
// The first command that needs a page starts the Playwright driver (Node.js)
// and a persistent context in a profile directory (a temporary one by
// default, removed on Close), which takes about a second. Concurrent
// first uses share that single launch and each honours its own context while
// waiting. Later invocations reuse the running browser, so their first
// command costs a CDP round trip (a few ms). Each conversation id gets its
// own page and Playwright CDPSession, reused across invocations until
// Browser.CloseConversation, Close, or eviction. One blank page with its
// CDPSession is kept prepared (refilled when an invocation ends), so a new
// conversation does not wait ≈ 200 ms for a page.
//
// # Page cap: never a silently blank page
//
// Options.MaxPages (default 32) is a soft bound. A page is evictable only
// when no client is attached to it and its conversation has not used it for
// Options.PageIdle (default one minute); opening a page beyond the bound, or
// a client detaching while more are open, closes evictable pages, least
// recently used first. With more conversations at work than the bound (200
// agents at once), nothing is evictable and the bound is exceeded until they
// pause. A conversation whose page was evicted is told: its next command
// fails once with ClassClosed and CodePageEvicted ("navigate again"), and
// the command after it opens a fresh page — a fresh about:blank is never
// handed out as if it were the conversation's page.
//
// # Faults
//
// The browser process is watched (a pidfd on Linux) besides the Playwright
// driver: if either dies, commands in flight fail at once with ClassTransport
// and CodeBrowserGone — not at their deadline — and the next use launches a
// new browser; a lost driver connection marks the browser dead before the
// error returns, so the call after it relaunches rather than failing the same
// way. A crashed renderer (Page.crash, an out-of-memory kill) fails the
// page's commands in flight with ClassTransport and CodeTargetCrashed.
// Opening a page is hedged: Playwright never finishes opening a page whose
// renderer dies while it is being set up, so an opening still running after
// 10 s gets a second attempt beside it (three at most; none while more than
// four openings run, when a slow one is only waiting its turn); the first
// page to open serves the conversation and the others are closed.
//
// A conversation whose page went away under it (its renderer crashed, it
// was closed by someone else, its browser or driver exited) is told, like
// an evicted one: its next command other than Page.navigate fails once with
// ClassClosed and CodePageLost ("navigate again") instead of reading a
// fresh about:blank as the site's content; a Page.navigate, or the command
// after the notice, opens a fresh page. A timeout carries
// browserbackend.Diagnostics: the browser's commands in flight, the oldest
// one's age, the time since it last answered and its uptime; a deadline
// that passes before the command is sent (its page still opening, the
// browser still relaunching) says so, with nothing in flight and, during a
// relaunch, no uptime.
//
// # Errors
//
// All errors are *browserbackend.Error. A launch failure is ClassTransport
// with code launch_failed and a remediation hint (run scripts/setup.sh,
// install chromium, or set BROWSERCHAIN_CHROMIUM). A closed page, context or
// browser, or a lost driver, is ClassTransport (see Faults for the codes). A CDP error reply is
// ClassProtocol; because Playwright passes only the error text on, the CDP
// code is recovered from Chromium's fixed messages in one documented function
// (parseProtocolError), so errors.Is(err, browserbackend.ErrMethodNotFound)
// and friends work. Send honours ctx although Playwright's CDPSession.Send
// takes none: ctx's end returns ClassAborted or ClassTimeout with Dispatched
// set, and the abandoned call ends when the browser answers or the page closes.
//
// # Events
//
// Client implements browserbackend.EventSource. Playwright's CDPSession emits
// every CDP event of the page both under its method name and as a generic
// "event" carrying {method, params}; the package listens to the generic one,
// so Subscribe works for any method and for "" (all events) alike.
//
// # Processes
//
// Close closes the context (the browser exits), stops the driver (its stdin is
// closed and it exits), and then, on Linux, waits for every process that
// still names the profile directory or belongs to the browser's process group
// (pidfds, no sleeps; normally there is none) and SIGKILLs whatever has not
// exited within two seconds. A driver that does not complete the graceful
// close within 10 s is killed, so Close never hangs. The browser gets
// XDG_CONFIG_HOME=<profile>/xdg-config so that even Chromium's
// chrome_crashpad_handler helpers, which leave the browser's process group,
// are identifiable by the profile path (and nothing lands in ~/.config).
// It also gets TMPDIR=<a browserchain-t-* directory of its own> (unless that
// path would make Chromium's singleton socket path too long for a Unix
// socket), removed at teardown: Chromium's own scratch directories
// (org.chromium.Chromium.*) go there, and a browser killed before it could
// remove them leaves nothing in the system's temporary directory. (The
// Playwright driver's playwright-artifacts-* directory is the driver's:
// playwright-go offers no way to set the driver's environment.)
//
// When the host process is killed outright (SIGKILL, no cleanup), nothing in
// this package runs; playwright-go starts the driver without a parent-death
// signal and offers no hook to add one. What was verified instead
// (TestHostKilledLeavesNoProcess, Linux): the kernel closes the driver's
// stdin pipe, the driver exits on EOF, and on exit it kills the browser it
// launched; every browser process, crash handlers included, is gone
// shortly after the host dies. The temporary profile and the scratch
// directory such a host leaves behind are removed by the next launch on the
// machine (a profile whose Chromium lock names a dead process of this host,
// or an unlocked one older than a day; a scratch directory whose owner link
// names a dead process of this host).
//
// # Why github.com/mxschmitt/playwright-go
//
// The project's original module path, github.com/playwright-community/playwright-go,
// stopped at v0.5200.1 (Playwright 1.52, built for Chromium 136).
// The project's releases continue under github.com/mxschmitt/playwright-go;
// v0.6401.0 drives Playwright 1.64.1, which is built for Chromium 156 — the
// version Debian 12 ships — so the driver and the system browser speak the
// same protocol revision. Both paths can launch Debian's Chromium; the newer
// one is the maintained line and matches the browser.
//
// # Offline driver
//
// playwright-go normally downloads its driver from a CDN that this kind of
// machine cannot reach, and this package never asks it to install anything
// (no browser download either: the system Chromium is launched by path).
// scripts/setup.sh assembles the driver from npm instead:
//
//	npm pack playwright-core@1.64.1            # DriverVersion
//	tar -xzf playwright-core-1.64.1.tgz -C ~/.cache/ms-playwright-go/1.64.1   # → package/cli.js
//	ln -s "$(command -v node)" ~/.cache/ms-playwright-go/1.64.1/node
//
// which is exactly the layout playwright-go's Run looks for (it checks
// "<dir>/node <dir>/package/cli.js --version"). Options.DriverDirectory or
// $PLAYWRIGHT_DRIVER_PATH point elsewhere.
package local
