package eventhub

import "context"

type actorKey struct{}

// WithActor returns a context carrying the authenticated actor principal id.
// An auth middleware (for example hostproxy's pairing-token middleware) sets
// it; the SSE handler and the result routes read it with ActorFrom. The actor
// never comes from a header the client sets freely (HUB-3).
func WithActor(ctx context.Context, actorPrincipalID string) context.Context {
	return context.WithValue(ctx, actorKey{}, actorPrincipalID)
}

// ActorFrom returns the authenticated actor set by WithActor.
func ActorFrom(ctx context.Context) (string, bool) {
	a, ok := ctx.Value(actorKey{}).(string)
	return a, ok
}
