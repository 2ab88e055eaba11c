package hostproxy

import "net/http"

// The routes Mount registers, one by one.

func (p *Proxy) resultHandler() http.Handler { return p.resultRoute() }
func (p *Proxy) eventHandler() http.Handler  { return p.eventRoute(true, decodeEventRoute) }
func (p *Proxy) invalidationHandler() http.Handler {
	return p.eventRoute(false, decodeInvalidationRoute)
}
