// Package eventhubtest is a test kit for eventhub, in the spirit of
// net/http/httptest: a manual Clock for heartbeats and liveness without
// sleeps, a Stream client that reads the SSE endpoint frame by frame (and
// can stop reading, to stall the server), a Ping helper, a loopback Server
// with the events and ping routes, and ActorFromHeader, a test-only auth
// middleware. Other packages' tests (hostproxy, the desktop bridge) use it
// to consume the hub's stream.
package eventhubtest
