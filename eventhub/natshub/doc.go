// Package natshub is an eventhub.Hub that spans several runtime replicas
// through a NATS broker, so an extension or desktop bridge subscribed to
// one replica serves tool calls made on any other.
//
// Each replica creates one Hub with its own broker connection and a unique
// replica name, and serves its clients' SSE streams with EventsHandler and
// PingHandler. The hub carries opaque bytes: besides events for clients it
// sends the host's own messages between replicas (Send, with a correlation
// id that may confirm a delivery, and Broadcast), handed to the Handler the
// host installs with Handle. Package hostproxy/natsrelay builds a
// hostproxy.Proxy on a Hub this way:
//
//	nc, _ := nats.Connect(url, nats.MaxReconnects(-1))
//	hub, err := natshub.New(ctx, nc, "a")
//	proxy := natsrelay.NewProxy(hub, hostproxy.Options{})
//	mux.Handle("GET /v1/events", auth(hub.EventsHandler()))
//	proxy.Mount(mux)
//
// The broker must run with JetStream. The package depends on the client
// library (github.com/nats-io/nats.go) only; the server is a separate
// program (scripts/setup.sh builds it for the tests).
//
// Trust: the broker is the replicas' private backplane. Whoever may publish
// on its subjects can post results and events as any client, so give the
// replicas their own NATS account or credentials and keep the broker off
// any network the clients reach. The replay stream keeps the requests sent
// to each client (CDP methods and parameters) on the broker's store for up
// to ReplayAge.
//
// Latency: a correlated request from replica A to a client on B costs two
// broker messages on its round trip (the request to B, the reply with B's
// delivery answer back to A) and, off that path, A's answer to B's Send.
// A reply sent from a third replica costs one more message (A asks B for
// its answer). Payloads over the broker's
// max_payload travel in parts, with one confirmation per 8 parts; a broker
// with a larger max_payload sends them whole (fewer copies).
//
// Bounds: a client connected nowhere fails a publish at once; a crashed
// replica's clients are gone within (DeadAfter+1) heartbeats (4 s by
// default) plus the broker's latency; roster changes reach the other
// replicas in about a millisecond on loopback, activity within
// the touch flush period (0.5 s).
package natshub
