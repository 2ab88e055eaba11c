package hostproxy

import (
	"net/http"

	"github.com/browserchain/browserchain/eventhub/wire"
)

// AwaitsResult reports whether r is a POST to the result route
// (wire.PathHostBrowserResult) by a client this Proxy has sent a request it
// still waits for, the client named as the route names it (the
// X-Vellum-Client-Id header, else the credential's client id). It reads no
// body and costs a map look-up.
//
// A host app's rate limiter should let such a post through: it answers a
// command the server itself sent, and refusing it turns an answer the
// browser already produced into a timeout. The route still checks the
// request id, the client and its actor.
func (p *Proxy) AwaitsResult(r *http.Request) bool {
	if r.Method != http.MethodPost || r.URL.Path != wire.PathHostBrowserResult {
		return false
	}
	client := postingClient(r)
	return client != "" && p.calls.awaits(client)
}
