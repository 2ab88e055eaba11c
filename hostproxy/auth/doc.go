// Package auth pairs clients with a self-hosted assistant runtime and
// authenticates their later requests.
//
// An Authority holds an HS256 signing key and mints short-lived access tokens
// (JWT, github.com/golang-jwt/jwt/v5) whose subject is the actor principal the
// client acts for. It serves three things a host application mounts:
//
//   - PairHandler: POST /v1/pair, loopback only, rate-limited per peer
//     (10 per 60 s by default), requires X-Vellum-Interface-Id, and for the
//     chrome-extension interface an allow-listed chrome-extension:// Origin.
//     Answers {"token","expiresAt","actorPrincipalId","refreshToken"?}; a
//     refresh token is issued only when the body names a deviceId and is bound
//     to it.
//   - RefreshHandler: POST /v1/pair/refresh, same guards, trades a refresh
//     token (plus the deviceId it is bound to) for a new access token and a new
//     refresh token; each refresh token works once.
//   - Middleware: turns "Authorization: Bearer <token>" into the actor with
//     eventhub.WithActor; a missing,
//     malformed, badly signed or expired token is a 401 with a JSON error.
//
// Every denial is logged at warn level with the reason, the route and the
// peer; tokens, refresh tokens and keys are never logged. Error bodies have
// the shape {"error":{"code":"…","message":"…"}}.
//
// The reference server (examples/server) keeps its key in a file created
// with mode 0600 by LoadOrCreateKey.
package auth
