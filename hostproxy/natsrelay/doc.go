// Package natsrelay runs a hostproxy.Proxy on a replica of a natshub.Hub:
// results posted to one replica reach the caller waiting on another, and a
// client's CDP events reach the backends bound to it on every replica.
//
//	nc, _ := nats.Connect(url, nats.MaxReconnects(-1))
//	hub, err := natshub.New(ctx, nc, "a")
//	proxy := natsrelay.NewProxy(hub, hostproxy.Options{})
//	mux.Handle("GET /v1/events", auth(hub.EventsHandler()))
//	proxy.Mount(mux)
//
// A request id is "<replica>.<id>", naming the replica where its caller
// waits; a result is relayed there with natshub.Hub.Send under the request
// id as correlation id, so the holder's delivery answer rides with it, and
// answered with the proxy's verdict (hostproxy.RelayInbox.AcceptResult).
// Events travel with natshub.Hub.Broadcast.
package natsrelay
