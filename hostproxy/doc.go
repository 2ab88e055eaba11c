// Package hostproxy sends CDP commands to browsers that hub clients reach —
// the user's Chrome through the paired Chrome extension, or through a desktop
// app's bridge — and serves the routes those clients answer on.
//
// A Proxy publishes each command on an eventhub.Hub to one client it picks
// from the live roster, waits for the client's POSTed result, and turns the
// outcome into the CDP result or a browserbackend.*Error. Its two backends,
// extension and host-bridge, are browserbackend.ScopedClients, and its two
// providers propose them to a browserbackend selector.
//
// # Wire contract
//
// This contract is shared with the reference extension (examples/extension)
// and the reference desktop bridge (hostproxy/bridge); the names are defined
// once in wire.go.
//
// Server → client, as the "message" of an eventhub envelope on GET /v1/events,
// published to the chosen client only:
//
//	{"type":"host_browser_request","requestId":"…","conversationId":"…",
//	 "cdpMethod":"Page.navigate","cdpParams":{…}?,"cdpSessionId":"…"?,"timeout_seconds":30?}
//	{"type":"host_browser_cancel","requestId":"…"}
//
// After a cancel the client must not post a result for that request.
//
// Client → server (results may also go over the result socket, below),
// each with the client's credentials (the host app's auth middleware puts
// the actor into the context with eventhub.WithActor) and, on results, the
// header X-Vellum-Client-Id (the client id it subscribed with). Event and
// invalidation posts may leave the header out, as the real Vellum extension
// does: the client is then the one the middleware derived from the
// token (eventhub.WithClientID; auth.Middleware binds a token to the client
// id its events stream named), or the invalidation body's clientId. Every
// refused post is logged once at warn with route, code and client id.
//
//	POST /v1/host-browser-result             {"requestId","content","isError"}  → {"accepted":true}
//	POST /v1/host-browser-event              {"type"?,"method","params","cdpSessionId"?,"sessionId"?,"tabId"?} → {"accepted":true}
//	POST /v1/host-browser-session-invalidated {"sessionId"?,"targetId"?,"reason"?} → {"accepted":true}
//
// content is a string holding JSON. On success (isError false) it is the CDP
// result object. On error it is {"code":…,"message":"…"} where code is either
//   - a string: transport_error, unreachable, timeout, non_loopback,
//     cdp_session_not_found, cancelled or target_crashed make a transport
//     error (the selector may fail over), a client's timeout with the
//     client's diagnostics; page_lost is ClassClosed; any other string is a
//     protocol-class error with that code (for example extension_required);
//   - a number: the CDP error code the browser answered, a protocol error.
//
// An error content that is plain text (the real extension's attach and
// resolve failures: "No tab with given id 7.", "Cannot access a chrome://
// URL") is a protocol error, target_not_found, forbidden_target or
// client_error, never a transport error; a CDP error encoded twice
// ({"code":-32000,"message":"{\"code\":-32601,…}"}) carries its innermost
// code (ParseErrorAnswer). An error object without a usable code is a
// transport error (invalid_response).
//
// Result route answers: 400 malformed JSON or no requestId; 404
// unknown or already answered; 409 the pending interaction is not
// host_browser; for a request sent to one client, 400 without
// X-Vellum-Client-Id, 403 when it names another client, 403 when the
// authenticated actor is not the target client's actor; 413 body larger than
// Options.MaxBodyBytes (64 MiB by default). Rejected posts leave the request
// pending, except an oversized result of the target client whose requestId
// comes before the cut: its caller fails at once with payload_too_large. Error answers are {"error":{"code","message"}}. Event posts are
// charged to a per-client event budget (Options.EventRate), never to the
// results' budget; beyond it they are answered 429 events_shed.
//
// # Result socket
//
// A client may send its results on one WebSocket instead of one POST each
// (from an MV3 service worker a fetch costs about 1 ms, a message on an open
// WebSocket about 0.2 ms). GET /v1/host-browser-result/ws
// (ResultSocketHandler, mounted outside the bearer-token middleware: a
// browser cannot set headers on a WebSocket). The handshake's Origin, when
// present, must be an allowed extension origin, and the peer must be
// loopback when the server is loopback-only (403 otherwise). Messages are
// JSON text:
//
//	client → server, first, within 5 s:
//	  {"type":"auth","token":"<access token>","clientId":"…"}
//	server → client: {"type":"ready","clientId":"…"}
//	client → server, then any number of:
//	  {"type":"result","requestId","content","isError"}
//	server → client, one per result:
//	  {"type":"accepted","requestId"}
//	  {"type":"error","requestId","status":403,"code":"client_mismatch","error":"…"}
//
// A missing, late or refused auth message closes the socket with status
// 1008 (policy violation); a message larger than Options.MaxBodyBytes with
// 1009. Each result goes through the same checks as the POST route, with the
// socket's client id and token actor, and an error reply carries the status
// and code the route would have answered; a refused result leaves its
// request pending and the socket open. Closing the socket affects no pending
// request: a client may always fall back to the POST route.
//
// Subscribed mode (SocketOptions.Subscriber set): an auth message with
// "subscribe":true (plus "interfaceId", "machineName", "lastEventId", the
// values of GET /v1/events' headers) makes the socket the client's hub
// stream, answered {"type":"ready","clientId","subscribed":true}. It then
// carries everything in the remote device socket's framing (package
// hostproxy/remote; ClientFrames.Handle is the one handler of both): hub
// events as {"type":"assistant_event","event":<envelope>}, and from the
// client results plus {"type":"host_browser_event",…} and
// {"type":"host_browser_session_invalidated",…}. Its end ends the
// registration, failing the client's commands in flight as a dropped
// stream does; a result over the cap that still arrives fails its own
// command with payload_too_large first (ClientFrames.FailOversize). A server
// without a Subscriber answers ready without
// "subscribed", so a client keeps SSE + POST, which clients that speak only
// that (the Vellum extension) always use.
//
// # Events and tabs
//
// Events go to the subscribers of the backends bound to the posting
// client, but only to those of the tab the event belongs to. A backend owns
// the tabs its commands name in cdpSessionId (a tab id in decimal digits, a
// CDP target id, or a flat child session id; not
// browserbackend.BrowserSessionID, which names the browser, whose events the
// reference bridge posts under its page's target id); a session invalidation is
// delivered as a Target.detachedFromTarget event carrying that sessionId.
// An event is attributed to a tab, in this order:
//
//  1. by the session it names: cdpSessionId or sessionId, else tabId (the
//     reference extension names the tab of every event; a tab-level event is
//     then delivered with that tab id as its SessionID); a child session
//     maps to the tab whose Target.attachToTarget answer or
//     Target.attachedToTarget event opened it; a real-extension
//     invalidation's decimal targetId names its tab;
//  2. by a frame id in its params (frameId, parentFrameId, frame.id,
//     frame.parentId, context.auxData.frameId; targetId outside the Target
//     domain): a tab's main frame id is its target id, learned from the
//     command naming a CDP target, from the answers of Page.navigate,
//     Page.getFrameTree and Target.getTargetInfo sent to the tab, and, for
//     child frames, from the tab's earlier frame events;
//  3. by a Network requestId or a Runtime executionContextId learned from
//     the tab's earlier events (a context id seen in two tabs attributes
//     nothing).
//
// The real Vellum extension's events name no tab. Once a client has posted
// such an event, a backend's first command naming a tab is preceded by
// Target.getTargetInfo on that tab (once per client and tab), so the tab's
// main frame is known before its first navigation. Likewise a host-bridge
// backend, once its client has posted an event, first asks with a
// sessionless Target.getTargetInfo which page its commands run on and owns
// that target (the reference bridge names its page's target id in every
// event). A probe that fails is the failure of the command it preceded,
// not dispatched, except that a protocol error of the extension probe is
// ignored.
//
// An attributed event reaches the backends that own its tab; when none does,
// those that name no tab at all (their commands go wherever the client sends
// sessionless commands, which the server cannot know); never a backend that
// owns another tab. An event that cannot be attributed (Page.loadEventFired
// and Page.domContentEventFired carry no frame; a console message of an
// unknown context) reaches every bound backend when they all serve one
// conversation, and nobody otherwise: it is counted (Stats.EventsUnattributed)
// and dropped. So with one conversation per client nothing is lost, and with
// several none receives an event known to be another tab's. What is learned
// is bounded (the most recent 16,384 ids over all clients).
//
// The tools match events by frame and loader as well (a navigation ends only
// on the load lifecycle event of the frame and loader id Page.navigate
// answered, or that frame's frameStoppedLoading), and every extension
// command of the tools names its conversation's tab in cdpSessionId.
//
// # Disconnects and replay
//
// When the target client's stream ends while a request waits, the request
// fails at once with a transport error, so the selector can fail
// over, unless the same client id (same actor) has already reconnected and
// its new registration holds the request (the hub replayed it, or the client
// resumed past it): then it keeps waiting. The proxy decides what a replay
// may carry and tells the hub in data: each request is published with its
// deadline as eventhub.Target.ReplayUntil and retracted (Hub.Retract) before
// any failure reaches its caller, so the client never runs a command whose
// caller failed and may already have run it on another browser. Retract is
// linearizable with registrations and answers whether the current
// registration holds the request, so no interleaving of disconnect,
// reconnect and proxy both fails the caller and replays its request. The hub
// never parses a request, so several Proxy values can share one hub.
//
// # Tab operations
//
// The extension implements these pseudo-methods (never sent to a desktop
// bridge). Package tabs sends them through the extension backend or a per-call
// Client and decodes their results, in one place. Params → result:
//
//	Vellum.listTabs  {}                 → {"tabs":[{"tabId","windowId","url","title","active","pinned"}…]}
//	Vellum.selectTab {"tabId"}          → {}
//	Vellum.closeTab  {"tabId"}          → {"closed":true,"tabId","clientId"}
//	Vellum.createTab {"url","active"}   → {"tabId":"<string>","clientId"}
//	Vellum.findTab   {"urlPattern"}     → {"tabId":"<string>","url","title"}
//	Vellum.attach    {"tabId"}          → {"attached":true,"target":{"tabId"}}
//	Vellum.detach    {"tabId"}          → {"detached":true,"target":{"tabId"}}
//
// # Client choice
//
// Only host_browser-capable clients are eligible; with a source actor only
// that actor's; an explicit target client pins one; Vellum.* methods go only
// to chrome-extension clients (else a protocol-class extension_required error,
// which does not fail over); raw CDP prefers chrome-extension clients over
// desktop bridges, most recently active first within each group. No eligible
// client is a transport error with code no_client.
package hostproxy
