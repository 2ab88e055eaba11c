// Package wire holds the names the Vellum clients (the Chrome extension and
// the desktop bridges) and the runtime exchange on the wire: HTTP headers,
// route paths, interface ids, the SSE event type, message types and the
// Vellum.* pseudo-methods. They are defined here once, in a package that
// imports nothing but the standard library, so the hub (eventhub), the
// proxy (hostproxy), pairing (hostproxy/auth), the tools and any client can
// share them without importing each other. Values are exactly those of the
// seed documents; do not change one without changing every client.
package wire

import "strings"

// HTTP headers.
const (
	// HeaderClientID names the connecting or posting client. On
	// GET /v1/events its presence registers the stream as a client.
	HeaderClientID = "X-Vellum-Client-Id"
	// HeaderInterfaceID is the client's interface id (one of the Interface
	// constants); required with HeaderClientID on GET /v1/events and on
	// POST /v1/pair.
	HeaderInterfaceID = "X-Vellum-Interface-Id"
	// HeaderMachineName is an optional display name of the client's machine.
	HeaderMachineName = "X-Vellum-Machine-Name"
	// HeaderLastEventID is the standard SSE resume header.
	HeaderLastEventID = "Last-Event-ID"
	// QueryConversationID is the query parameter that filters a stream to
	// one conversation's events.
	QueryConversationID = "conversationId"
)

// Interface ids: the transport interface a client or a turn speaks through.
const (
	InterfaceChromeExtension = "chrome-extension"
	InterfaceMacOS           = "macos"
	InterfaceWindows         = "windows"
	InterfaceWeb             = "web"
	InterfaceCLI             = "cli"
)

// Route paths: the conventional mount points of the runtime's handlers.
const (
	// PathEvents is the SSE stream, PathPing the heartbeat
	// acknowledgement.
	PathEvents = "/v1/events"
	PathPing   = "/v1/ping"
	// PathHostBrowserResult, PathHostBrowserEvent and
	// PathHostBrowserSessionInvalidated are the client's answer routes;
	// PathHostBrowserResultSocket carries results over a WebSocket.
	PathHostBrowserResult             = "/v1/host-browser-result"
	PathHostBrowserEvent              = "/v1/host-browser-event"
	PathHostBrowserSessionInvalidated = "/v1/host-browser-session-invalidated"
	PathHostBrowserResultSocket       = "/v1/host-browser-result/ws"
	// PathPair mints a token; PathPairRefresh trades a refresh token.
	PathPair        = "/v1/pair"
	PathPairRefresh = "/v1/pair/refresh"
)

// Stream framing.
const (
	// EventTypeAssistant is the SSE event name of every hub event.
	EventTypeAssistant = "assistant_event"
	// HeartbeatPrefix starts the text of every heartbeat comment:
	// ": heartbeat <token>". A client echoes the token to PathPing.
	HeartbeatPrefix = "heartbeat "
)

// Message types: the "type" field of a message carried in an event's
// envelope.
const (
	// TypeHostBrowserRequest is one CDP command for the target client.
	TypeHostBrowserRequest = "host_browser_request"
	// TypeHostBrowserCancel tells the target client to drop a request; it
	// must then post no result for it.
	TypeHostBrowserCancel = "host_browser_cancel"
)

// Result-socket message types: the "type" of each JSON message on
// PathHostBrowserResultSocket.
const (
	SocketAuth     = "auth"
	SocketResult   = "result"
	SocketReady    = "ready"
	SocketAccepted = "accepted"
	SocketError    = "error"
)

// Pseudo-methods: commands in the Vellum.* namespace that only the Chrome
// extension implements.
const (
	MethodPrefix    = "Vellum."
	MethodListTabs  = "Vellum.listTabs"
	MethodSelectTab = "Vellum.selectTab"
	MethodCloseTab  = "Vellum.closeTab"
	MethodCreateTab = "Vellum.createTab"
	MethodFindTab   = "Vellum.findTab"
	MethodAttach    = "Vellum.attach"
	MethodDetach    = "Vellum.detach"
	// MethodRequestHelp ({"tabId"?, "message"}) waits for the browser user
	// to answer a help bar on the tab: {"outcome":"answered"|"cancelled"}.
	// The reference extension implements it; the Vellum extension does not.
	MethodRequestHelp = "Vellum.requestHelp"
)

// IsPseudoMethod reports whether method is in the Vellum.* namespace, which
// only chrome-extension clients implement.
func IsPseudoMethod(method string) bool { return strings.HasPrefix(method, MethodPrefix) }

// Remote device socket: the subprotocol prefix that carries the
// device token, and the "type" of the JSON frames besides the result-socket
// ones (SocketResult, SocketAccepted, SocketError, SocketReady).
const (
	// SubprotocolAuthPrefix starts the one Sec-WebSocket-Protocol value of
	// a remote upgrade: "bsk-auth." + DEVICE_TOKEN.
	SubprotocolAuthPrefix = "bsk-auth."
	// RemoteEvent carries one CDP event the client observed
	// ({"type","method","params","sessionId"?}, as POST
	// PathHostBrowserEvent's body).
	RemoteEvent = "host_browser_event"
	// RemoteSessionInvalidated carries an invalidation (as POST
	// PathHostBrowserSessionInvalidated's body).
	RemoteSessionInvalidated = "host_browser_session_invalidated"
	// RemoteHello is an optional client frame naming the browser id the
	// client believes it has; one that differs from the device's is refused.
	RemoteHello = "hello"
	// RemoteEnvelope frames one hub event to the client:
	// {"type":"assistant_event","event":<envelope>}.
	RemoteEnvelope = EventTypeAssistant
)

// The UI channel of a remote device socket: request frames
// {"id","method","params":{"session_id"}} the server sends and the extension
// answers with {"id","result"} or {"id","error":{"code","message","data":{"reason"}}}.
const (
	// UIMethodPrefix starts every UI channel method.
	UIMethodPrefix = "ui."
	// UITaskPreview asks for a JPEG (≤ 640 px wide) of the task's tab.
	UITaskPreview = "ui.task_preview"
	// UITaskFocus activates the task's tab and raises its window.
	UITaskFocus = "ui.task_focus"
)
