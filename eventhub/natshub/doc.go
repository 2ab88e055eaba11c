// Package natshub is an eventhub.Hub that spans several runtime replicas
// through a NATS broker (SPEC §12, DHUB-1…DHUB-7), so an extension or
// desktop bridge subscribed to one replica serves tool calls made on any
// other.
//
// Each replica creates one Hub with its own broker connection and a unique
// replica name, serves its clients' SSE streams with EventsHandler and
// PingHandler, and builds its hostproxy.Proxy with NewProxy, which adds the
// relay that carries results posted to the wrong replica to the one where
// the caller waits:
//
//	nc, _ := nats.Connect(url, nats.MaxReconnects(-1))
//	hub, err := natshub.New(ctx, natshub.Config{Conn: nc, Replica: "a"})
//	proxy := hub.NewProxy(hostproxy.Options{})
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
// Latency: a request from replica A to a client on B costs two broker
// messages on its round trip (the request to B, the result with B's
// delivery answer back to A) and, off that path, the verdict A returns to
// B for the client's post. A result posted to a third replica costs one
// more message (A asks B for its answer). Results over the broker's
// max_payload travel in parts, with one confirmation per 8 parts; a broker
// with a larger max_payload sends them whole (fewer copies).
//
// Bounds: a client connected nowhere fails a publish at once; a crashed
// replica's clients are gone within (DeadAfter+1)·Config.Heartbeat (4 s by
// default) plus the broker's latency; roster changes reach the other
// replicas in about a millisecond on loopback, activity within
// Config.TouchFlush (0.5 s).
package natshub
