// Package cdpinspect is the cdp-inspect backend: it drives a Chrome the user
// started with remote debugging (--remote-debugging-port, or "remote
// debugging" enabled at chrome://inspect) over the Chrome DevTools Protocol.
//
// Discovery (Discover) tries an explicit browser WebSocket URL, then
// the DevToolsActivePort files of known or configured profiles, then
// GET /json/version on the configured host:port through mafredri/cdp's
// devtool. Every network step is bounded by the probe timeout (default
// 500 ms); only loopback endpoints are accepted; failures carry a discovery
// code (unreachable, timeout, non_loopback, non_chrome, invalid_response,
// no_targets). Nothing is cached: every Dial rediscovers, so a restarted
// browser is found at its new address (a Provider's shared connection is
// reused only while it lives; see below).
//
// Connection (Dial and Backend): one browser-level WebSocket, one flat
// session (Target.attachToTarget with flatten: true) on a real page target,
// created when the browser has none. Commands without a session id run on
// that session; every command has a deadline; socket loss fails in-flight
// commands at once with a transport error; CDP error replies are protocol
// errors with their JSON-RPC code. Backend implements
// browserbackend.ScopedClient and browserbackend.EventSource.
//
// Ownership: Close detaches, or closes only a tab Dial opened itself;
// the user's browser and tabs stay open.
//
// Tab identity (Provider): a conversation works in one tab, remembered by
// its CDP target id, never in whatever tab Target.getTargets lists first
// (Chromium reorders that list as tabs navigate). Its first call opens a
// tab of the agent's own; a user tab is adopted only when the invocation asks
// (browserbackend.TabActive); a remembered tab that is gone fails the call
// with target_not_found instead of acting elsewhere;
// Provider.ReleaseConversation closes the agent's tab. The memory is LRU-bounded and keyed by the
// browser run, so a restarted browser is never matched with old target ids.
//
// # Crashed tabs and timeouts
//
// A renderer that dies fails the session's commands in flight with
// ClassTransport and code target_crashed (Inspector.targetCrashed). Attach
// sends Inspector.enable, which Chrome answers on an already crashed tab
// with that event, and a conversation whose session saw its tab crash keeps
// that knowledge in the new session its next Build attaches (the probe
// alone depends on how Chrome sees the tab's frame), so a Backend knows: on a
// crashed tab every command but Page.navigate and the Target domain fails
// at once with ClassClosed and code page_lost, and a Page.navigate gives
// the tab a new renderer (browserbackend/tools' Navigate does this by
// itself), instead of commands queueing until their deadline.
// A command that times out carries browserbackend.Diagnostics of its
// connection: commands in flight, the oldest one's age, the time since the
// browser last answered, and the connection's uptime. A deadline that
// passes while a Build still connects (discovery, the WebSocket, the attach,
// the conversation's tab lock) says the command was never sent, with the
// attach's connection diagnostics or, before a connection, the time since
// the Provider's last connection answered.
//
// # Design choices
//
// WebSocket and multiplexer: github.com/coder/websocket with a small
// JSON-RPC multiplexer of our own (conn.go), rather than mafredri/cdp's rpcc
// with a session-routing codec. rpcc has no notion of sessionId; routing
// flat sessions means smuggling it through a custom codec and re-parsing
// every frame, and rpcc's errors would have to be re-classified after the
// fact. Here the sessionId is a field of the one frame type, replies and
// events are routed in one place, errors are browserbackend errors where
// they arise (protocol vs transport vs timeout), the read limit is one call
// (SetReadLimit, 256 MiB by default: multi-MB screenshots pass), and writes
// honour deadlines without coder/websocket's close-on-cancel. The cost of
// the multiplexer over a bare socket is measured by
// BenchmarkRuntimeEvaluate.
//
// One shared connection per Provider, a session per conversation: a
// Provider's Builds share one browser WebSocket, and each conversation keeps
// one flat session on its tab while that socket lives, so an invocation
// after the first sends nothing to build (no discovery round trip,
// handshake, Target.getTargets or attach). Each Build returns a view of the shared
// connection: its Close ends only its own commands in flight and leaves the
// socket and the conversation's session for the next invocation; a view
// sees its own session's events and the browser-level ones, never another
// conversation's. The socket closes when no view has been open for the idle
// timeout (WithIdleTimeout, default 5 minutes), on Provider.Close, or when
// the browser drops it (killed, restarted): the next Build rediscovers and
// dials. While it is open, Build checks without network that discovery
// would still name the same browser run (the explicit URL, or the first
// DevToolsActivePort file; a /json/version browser keeps its port until it
// exits) and rediscovers otherwise. A stalled browser therefore shows as
// commands that time out (outcome unknown) rather than as a failed Build.
// Dial and Provider.DialConversation still give a Backend its own socket
// (the desktop bridge holds one per conversation).
//
// Browser-level auto-attach on a shared connection: Chrome keeps
// one Target.setAutoAttach setting per browser connection, and the guards
// of browserbackend/tools turn it on (waitForDebuggerOnStart, flat) on the
// browser session while a guarded call runs, to hold the windows a page
// opens. A view's Target.setAutoAttach on browserbackend.BrowserSessionID
// is therefore counted per shared connection: on when the first view asks,
// off only when the last one lets go (or closes); a view letting go earlier
// has the sessions routed to it detached, which releases its popups as
// turning auto-attach off would. An auto-attached target is routed by its
// openerId: its Target.attachedToTarget, and its session's events, go only
// to the holder whose page opened it, so no conversation's guard resumes,
// intercepts or closes another's popup; a waiting target no holder opened
// (a tab the user opens, another conversation's new tab) is resumed and
// detached by the connection.
package cdpinspect
