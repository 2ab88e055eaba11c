package auth

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/browserchain/browserchain/eventhub"
)

// Middleware authenticates every request to next with an access token:
// "Authorization: Bearer <token>" must be an HS256 JWT signed with
// this Authority's key, with its issuer, audience and scope
// ScopeActorClient, and unexpired by the injected clock. On success the
// request context carries the actor (eventhub.WithActor).
//
// Answers, each with a JSON error body and an audit line:
//   - 401 missing_token / invalid_token / token_expired / wrong_token_kind,
//     with WWW-Authenticate: Bearer;
//   - 403 client_mismatch when the token is bound to a client id and the
//     request's X-Vellum-Client-Id names another;
//   - 403 interface_mismatch when the token was minted for one interface and
//     X-Vellum-Interface-Id names another (an extension token cannot register
//     as a desktop client and gain its capabilities);
//   - 403 cross_site when the request says a web page sent it
//     (Sec-Fetch-Site cross-site or same-site), 403 origin_not_allowed when
//     it carries an Origin that is not an allowed chrome-extension:// origin.
//     The extension's own requests carry Sec-Fetch-Site: none and
//     its allowed origin, desktop clients neither header.
//
// The request context also carries the client id the request acts as
// (eventhub.WithClientID): the token's bound client, else the
// X-Vellum-Client-Id header (which binds the token to that client for later
// requests without the header), else the client the token was last used
// with. The events stream is the one request on which the real extension
// sends both, so its event and invalidation posts are identified by it.
func (a *Authority) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		scheme, tok, ok := strings.Cut(h, " ")
		if h == "" || !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="browserchain"`)
			a.deny(w, r, http.StatusUnauthorized, "missing_token", "a bearer token is required")
			return
		}
		c, err := a.Verify(strings.TrimSpace(tok), ScopeActorClient)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="browserchain", error="invalid_token"`)
			a.deny(w, r, http.StatusUnauthorized, tokenCode(err), "bearer token rejected", slog.String("reason", reasonOf(err)))
			return
		}
		if cid := r.Header.Get(wire.HeaderClientID); c.ClientID != "" && cid != "" && cid != c.ClientID {
			a.deny(w, r, http.StatusForbidden, "client_mismatch", "token is bound to another client",
				slog.String("actorPrincipalId", c.Subject))
			return
		}
		if code, reason := a.crossSite(r); code != "" {
			a.deny(w, r, http.StatusForbidden, code, "requests from web pages are refused",
				slog.String("reason", reason), slog.String("actorPrincipalId", c.Subject))
			return
		}
		if iface := r.Header.Get(wire.HeaderInterfaceID); c.InterfaceID != "" && iface != "" && iface != c.InterfaceID {
			a.deny(w, r, http.StatusForbidden, "interface_mismatch", "token was issued for another interface",
				slog.String("tokenInterfaceId", c.InterfaceID), slog.String("actorPrincipalId", c.Subject))
			return
		}
		ctx := eventhub.WithActor(r.Context(), c.Subject)
		if cid := a.clientOf(c, r.Header.Get(wire.HeaderClientID)); cid != "" {
			ctx = eventhub.WithClientID(ctx, cid)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// RefuseWebPages answers 403 to a request a web page sent — cross_site for
// Sec-Fetch-Site cross-site or same-site, origin_not_allowed for an Origin
// that is not an allowed chrome-extension:// origin, each with the
// audit line Middleware writes — and passes every other request to next.
// Mount it in front of a rate limiter: Middleware refuses these requests
// too, but after the limiter has counted them, so a page the user merely
// visits could spend the loopback budget the paired clients need (every
// loopback peer shares one). Safe for concurrent use.
func (a *Authority) RefuseWebPages(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code, reason := a.crossSite(r); code != "" {
			a.deny(w, r, http.StatusForbidden, code, "requests from web pages are refused", slog.String("reason", reason))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Identify is a lenient companion of Middleware for placing in front of a
// rate limiter: when the request carries a valid access token it stores the
// actor (eventhub.WithActor), so the limiter can pick the
// authenticated budget; otherwise it passes the request on untouched and
// denies nothing (Middleware, mounted after it, does that).
func (a *Authority) Identify(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			if c, err := a.Verify(strings.TrimSpace(tok), ScopeActorClient); err == nil {
				r = r.WithContext(eventhub.WithActor(r.Context(), c.Subject))
			}
		}
		next.ServeHTTP(w, r)
	})
}

// crossSite returns a denial code and reason when r was sent by a web page,
// or "" when it was not.
func (a *Authority) crossSite(r *http.Request) (code, reason string) {
	switch site := strings.ToLower(r.Header.Get("Sec-Fetch-Site")); site {
	case "cross-site", "same-site":
		return "cross_site", "Sec-Fetch-Site: " + site
	}
	if o, ok := r.Header["Origin"]; ok && !a.origins[strings.TrimRight(strings.Join(o, ","), "/")] {
		return "origin_not_allowed", "origin " + strings.Join(o, ",")
	}
	return "", ""
}
