// Package bridge is the reference desktop bridge: a client that
// connects a user's local Chrome to an assistant runtime's event hub, the way
// a desktop app does.
//
// A Bridge subscribes to GET /v1/events as a desktop interface ("macos" by
// default, which grants host_browser) with X-Vellum-Client-Id,
// X-Vellum-Interface-Id and, when a token is given, Authorization: Bearer.
// For each host_browser_request it runs the CDP command against the local
// Chrome's DevTools endpoint — discovered and attached as cdp-inspect does,
// through a Dialer — and POSTs the result to /v1/host-browser-result; a
// result refused for the moment (429 or 503) is posted again, after
// Retry-After when the answer says, for up to 30 s. A host_browser_cancel
// stops the command and no result is posted for it. Failures are posted as
// structured codes (numeric CDP codes; unreachable, timeout, non_loopback,
// cdp_session_not_found, cancelled, transport_error); see ErrorContentFor
// and the hostproxy package documentation for the wire contract.
//
// With Options.DialConversation (CDPInspectTabs), each conversation works in
// a tab of its own, remembered by CDP target id exactly as the cdp-inspect
// backend remembers it (one connection per conversation, at most
// Options.MaxConversations open); without it every command runs on the one
// page Dial attached to, and once that page goes away the next request
// fails with target_not_found (the agent's page is gone; it is not run on
// another tab as if it were the same) and the one after attaches again; a
// lost browser connection is dialled again at once.
//
// CDP events of an attached page are forwarded to /v1/host-browser-event
// with the page's target id as sessionId, so the server routes them to the
// conversation working in that tab, and so are the events of the
// connection's browser (root) session, which serves that page alone (the
// Target.attachedToTarget of an auto-attach the guards turn on through
// browserbackend.BrowserSessionID); events of other flat sessions keep
// theirs, and a detached flat session is posted to
// /v1/host-browser-session-invalidated. Heartbeat tokens are echoed to
// /v1/ping so the hub sees the bridge reading.
//
// A lost stream is reopened with jittered exponential backoff and
// Last-Event-ID, so requests published during the gap are replayed; a
// stream that stays silent longer than IdleTimeout is treated as lost. SSE
// framing is parsed by eventhub.ReadFrames (it yields the heartbeat comments
// that go-sse's reader drops).
//
// examples/bridge wraps this package in a command.
package bridge
