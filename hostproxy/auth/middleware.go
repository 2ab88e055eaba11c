package auth

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/browserchain/browserchain/eventhub"
)

// Middleware authenticates every request to next with an access token
// (PXY-8): "Authorization: Bearer <token>" must be an HS256 JWT signed with
// this Authority's key, with its issuer, audience and scope
// ScopeActorClient, and unexpired by the injected clock. On success the
// request context carries the actor (eventhub.WithActor) and the claims
// (ClaimsFrom).
//
// Answers, each with a JSON error body and an audit line:
//   - 401 missing_token / invalid_token / token_expired / wrong_token_kind,
//     with WWW-Authenticate: Bearer;
//   - 403 client_mismatch when the token is bound to a client id and the
//     request's X-Vellum-Client-Id names another;
//   - 403 interface_mismatch when the token was minted for one interface and
//     X-Vellum-Interface-Id names another (an extension token cannot register
//     as a desktop client and gain its capabilities).
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
				slog.String("clientId", cid), slog.String("actorPrincipalId", c.Subject))
			return
		}
		if iface := r.Header.Get(wire.HeaderInterfaceID); c.InterfaceID != "" && iface != "" && iface != c.InterfaceID {
			a.deny(w, r, http.StatusForbidden, "interface_mismatch", "token was issued for another interface",
				slog.String("tokenInterfaceId", c.InterfaceID), slog.String("actorPrincipalId", c.Subject))
			return
		}
		ctx := eventhub.WithActor(r.Context(), c.Subject)
		ctx = contextWithClaims(ctx, c)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// Identify is a lenient companion of Middleware for placing in front of a
// rate limiter: when the request carries a valid access token it stores the
// actor (eventhub.WithActor) and the claims, so the limiter can pick the
// authenticated budget; otherwise it passes the request on untouched and
// denies nothing (Middleware, mounted after it, does that).
func (a *Authority) Identify(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			if c, err := a.Verify(strings.TrimSpace(tok), ScopeActorClient); err == nil {
				r = r.WithContext(contextWithClaims(eventhub.WithActor(r.Context(), c.Subject), c))
			}
		}
		next.ServeHTTP(w, r)
	})
}
