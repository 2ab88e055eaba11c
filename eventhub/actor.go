package eventhub

import "context"

type actorKey struct{}

// WithActor returns a context carrying the authenticated actor principal id.
// An auth middleware (for example hostproxy's pairing-token middleware) sets
// it; the SSE handler and the result routes read it with ActorFrom. The actor
// never comes from a header the client sets freely.
func WithActor(ctx context.Context, actorPrincipalID string) context.Context {
	return context.WithValue(ctx, actorKey{}, actorPrincipalID)
}

// ActorFrom returns the authenticated actor set by WithActor.
func ActorFrom(ctx context.Context) (string, bool) {
	a, ok := ctx.Value(actorKey{}).(string)
	return a, ok
}

type clientKey struct{}

// WithClientID returns a context carrying the client id an auth middleware
// derived from the request's credential: the id the token is bound to, or
// the id the token was bound to when it opened its events stream.
// Routes a client posts to without an X-Vellum-Client-Id header read it
// with ClientIDFrom.
func WithClientID(ctx context.Context, clientID string) context.Context {
	return context.WithValue(ctx, clientKey{}, clientID)
}

// ClientIDFrom returns the client id set by WithClientID.
func ClientIDFrom(ctx context.Context) (string, bool) {
	c, ok := ctx.Value(clientKey{}).(string)
	return c, ok && c != ""
}
