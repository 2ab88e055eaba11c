// Package runtime composes the reference assistant runtime of
// examples/server: the in-process event hub, the host browser proxy and its
// routes, pairing and bearer authentication, the per-client-IP rate limiter
// (hostproxy/ratelimit) and a backend selector, plus a small command
// endpoint that runs one CDP command for a conversation so a person (or a
// test) can drive any backend by hand.
//
// Routes of Runtime.Handler:
//
//	POST /v1/pair, /v1/pair/refresh      pairing (loopback only, own rate limit; hostproxy/auth)
//	GET  /v1/events                      SSE stream (bearer token)
//	POST /v1/ping                        liveness ping (bearer token)
//	POST /v1/host-browser-result         command results (bearer token)
//	GET  /v1/host-browser-result/ws      result socket: a WebSocket whose first message carries the token
//	                                     (loopback only, allowed extension origins; hostproxy.ResultSocketHandler);
//	                                     in its subscribed mode it carries requests, cancels, results and events
//	POST /v1/host-browser-event          CDP events (bearer token)
//	POST /v1/host-browser-session-invalidated
//	POST /v1/browser/command             run one command (loopback only, no Origin, JSON)
//
// The rate limiter counts every authenticated route but the events stream,
// the event and invalidation posts (they have the proxy's own per-client
// budget) and a result post of a client the proxy is waiting on
// (hostproxy.Proxy.AwaitsResult): that post answers a command the server
// sent, and a 429 would turn a command the browser ran into a timeout at its
// deadline. Result posts of a client with nothing pending are counted.
//
// It lives in its own package so the end-to-end tests of the reference
// extension run against exactly the composition the example server runs.
package runtime
