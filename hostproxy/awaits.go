package hostproxy

import (
	"net/http"

	"github.com/browserchain/browserchain/eventhub/wire"
)

// AwaitsResult reports whether r is a POST to the result route
// (wire.PathHostBrowserResult) by a client that this Proxy has sent a
// request it still waits for: the client named as the route names it (the
// X-Vellum-Client-Id header, else the credential's client id).
//
// A host app's rate limiter (HUB-6) should let such a post through: it
// answers a command the server itself sent (PXY-3), so posts of this kind
// are bounded by the server's own requests, and refusing one loses a result
// the browser already produced — the caller then waits for its deadline and
// gets a timeout instead of the answer (SEL-10, PXY-5). Posts of a client
// with nothing pending (a late answer, or one naming an unknown request) get
// no pass and stay counted. It reads no body; the route still checks the
// request id, the client and its actor.
//
// The check is a map look-up (a count of awaited results per client, kept
// as requests are added and removed). Safe for concurrent use.
func (p *Proxy) AwaitsResult(r *http.Request) bool {
	if r.Method != http.MethodPost || r.URL.Path != wire.PathHostBrowserResult {
		return false
	}
	client := postingClient(r)
	if client == "" {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiting[client] > 0
}
