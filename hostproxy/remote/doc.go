// Package remote is the server side of remote browser connections: an
// assistant runtime on a server reaches the browser on its user's computer
// through one WebSocket that the extension dials out, authenticated by a
// device credential.
//
// The pieces:
//
//   - Store: pairing links and device grants in an SQLite file
//     (modernc.org/sqlite) that the server and the operator's CLI open at
//     the same time. Only SHA-256 hashes are stored; writers wait at most
//     500 ms for the lock (then ErrBusy, answered 503 + Retry-After); reads
//     never wait.
//   - Server: the two routes a host app mounts — SocketHandler at the
//     endpoint's path and AuthorizeHandler at PATH/authorize — plus the
//     operator API (CreateLink, Devices, Revoke, RevokeAll). Open sockets
//     re-check their grants every 250 ms and close on revocation (by the
//     CLI too), expiry or a failed read, failing their in-flight commands
//     with a transport error.
//   - The socket is a hub transport: a connected device is an ordinary hub
//     client (interface chrome-extension, so the selector's candidate for
//     it is extension) registered under the device's browser id and actor;
//     every result and event it sends is bound to that identity.
//   - Limits (capacity, authorize rate per peer with bounded counters, link
//     and grant lifetimes), SetupLimit (connections in setup, a share per
//     peer address) and NewHTTPServer (bounded header time and size).
//
// Wiring, with hub an *eventhub.InProcess and proxy its *hostproxy.Proxy:
//
//	store, err := remote.OpenStore(filepath.Join(dir, "remote.db"), remote.StoreOptions{})
//	srv, err := remote.New(remote.Options{Store: store, Proxy: proxy, Hub: hub,
//		Endpoint: "wss://browser.example.com/extension"})
//	mux := http.NewServeMux()
//	srv.Mount(mux) // GET /extension, POST /extension/authorize
//	limit := remote.NewSetupLimit(0, logger)
//	hs := remote.NewHTTPServer(mux, limit, tlsConfig, logger)
//	go hs.ServeTLS(limit.Listener(ln), "", "")
//	link, err := srv.CreateLink(ctx, "user-7") // hand link.URL to the user, once
//
// SocketHandler takes over its connection for the WebSocket, so mount it
// where it gets the server's own http.ResponseWriter (or a wrapper that
// implements http.Hijacker or unwraps to one with Unwrap, as
// http.ResponseController expects). Behind a middleware whose recording
// writer hides the connection, every upgrade is refused with 500
// not_hijackable and an error is logged; the browser only reports 1006.
//
// The pairing exchange: the extension cuts the secret from the link's
// fragment (it never travels in a URL) and POSTs PATH/authorize with
// Authorization: Bearer SECRET and {"action":"pair","next_token","label"};
// next_token (43 base64url characters, 256 bits) becomes its device token,
// sent on every upgrade as the one Sec-WebSocket-Protocol value
// "bsk-auth.TOKEN". Renewal is the same POST with the current token and
// {"action":"renew","next_token"}.
//
// The browser side is the reference extension's remote mode
// (examples/extension/lib/remote.js). It runs each task in its own Agent
// Window and enforces which tabs the task controls (created, borrowed with
// the browser user's confirmation, or observed popups); its refusals arrive
// as ClassProtocol errors matching ErrTabNotOwned, ErrBorrowDeclined,
// ErrUnsupported (remote upload and download) or ErrHelpPending. It also
// answers Vellum.requestHelp (HelpAnswered, HelpCancelled) and serves the
// UI channel: TaskPreview, TaskFocus and UICall send
// ui.* requests on a device's socket and wait for the extension's answer.
// Disconnect drops a device's socket without revoking it.
package remote
