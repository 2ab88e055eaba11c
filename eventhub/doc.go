// Package eventhub carries events from an assistant runtime to connected
// clients (browser extensions, desktop apps) over Server-Sent Events, and
// tracks which clients are connected.
//
// # Pieces
//
//   - Hub (hub.go) is the abstraction hostproxy codes against; InProcess
//     (New) is the default implementation.
//   - Capabilities, Supports and IsDesktop encode which host-proxy
//     capabilities an interface grants.
//   - InProcess.EventsHandler serves GET /v1/events;
//     InProcess.PingHandler serves POST /v1/ping;
//     InProcess.Subscribe opens the same kind of stream in process.
//   - The wire names (headers, paths, interface ids, the assistant_event
//     event type) are in package wire; the per-actor rate limiter is package
//     ratelimit, mounted by the host app, not part of the hub.
//   - ReadFrames parses an SSE stream on the client side; package
//     eventhubtest wraps it in a test/tool client (Stream), a manual Clock,
//     and a loopback Server.
//
// # Mounting
//
// Auth runs first (it puts the actor into the context with WithActor), then
// the host app's rate limiter (package ratelimit picks the budget from
// ActorFrom), then the routes:
//
//	hub := eventhub.New(eventhub.WithLogger(logger))
//	defer hub.Close()
//	limiter := ratelimit.New(ratelimit.Config{Logger: logger})
//	mux := http.NewServeMux()
//	mux.Handle(wire.PathEvents, hub.EventsHandler())
//	mux.Handle(wire.PathPing, hub.PingHandler())
//	srv := &http.Server{Handler: auth(limiter.Handler(mux))}
//
// The events route is exempt from the limiter by path; the stream's memory is
// bounded by the queue bound and the subscriber cap instead.
//
// # Delivery, backpressure and shedding
//
// Publish renders an event once (envelope JSON framed by go-sse's Message),
// records it in the replay ring and offers it to each recipient's bounded
// queue without blocking. A full queue sheds that stream; a write that
// blocks past the write deadline (default 10 s, set per write with
// http.ResponseController, overriding the server's WriteTimeout) sheds it
// too; at the subscriber cap the oldest stream is evicted. Every shed ends
// the registration at once (Gone closes, Changed fires, publishes to it fail
// with ErrNotConnected), is logged at warn and reaches Hooks.OnShed with its
// reason and counters. Hooks run on one goroutine of their own, in order.
//
// # Replay and the fail-fast rule
//
// A publish to a client id with no open stream fails at once; it is
// not parked for a later reconnect, because hostproxy must fail over rather
// than wait. Replay covers the other gap: an event accepted for a stream the
// client then lost — queued but not yet written, or written into a
// connection that died before the client read it. The client reconnects
// with Last-Event-ID (the id of the last event it read) and the new stream
// first receives every recorded event after that id that matches it, then
// live ones, in publish order and without duplicates. Client-targeted
// events replay only to a stream of the same client id AND the same actor.
// The ring is bounded by count, bytes and age (ReplayLimits; defaults 1024,
// 8 MiB, 5 min); a Last-Event-ID older than the ring logs a replay gap. Ids
// are "<epoch>-<seq>" with a random epoch per hub, so an id from another hub
// instance replays nothing. A reconnect while the old stream is still open
// replaces it: the old Gone closes after the new registration is in place.
//
// A replayed event can be stale: a request whose caller already failed on
// the disconnect must not run on the client after all. The publisher says so
// in data, never through a callback: Target.ReplayUntil ends an event's
// replay eligibility at a deadline, and Hub.Retract ends it earlier and
// reports whether the target's current registration holds the event. The
// hub never reads a message to decide; several publishers (several
// hostproxy.Proxy values) share one hub, each retracting its own events.
//
// # Liveness
//
// LastActive moves on what the client does: registering, a result post
// (hostproxy calls Touch), or a ping that echoes the token of one of the two
// latest heartbeats written on its stream — proof that it reads. Server
// writes never move it. A client idle for longer than the unhealthy-after
// window (default 3 heartbeat intervals) is reported Healthy=false and sorts
// after every healthy client while its connection may still be open;
// Changed and Hooks.OnHealth announce the transition at the stream's next
// heartbeat tick. A client that stops reading also stops acknowledging
// heartbeats, so it loses its place within one window, long before TCP
// notices; once its socket buffers fill, the queue or write deadline sheds it.
//
// # Why go-sse is used for framing only
//
// github.com/tmaxmax/go-sse renders every frame (sse.Message: id, event,
// data lines, comments). Its Server/Joe provider is not used: it has no
// client registry keyed by client id and actor, no per-stream bounded queue
// that sheds with an observable reason, and no per-write deadline; those
// are what this hub is for. Its reader (sse.Read) drops comments, and the
// hub's heartbeats are comments whose tokens a client must echo, so
// ReadFrames is a small parser of its own (fuzzed, FuzzReadFrames).
package eventhub
