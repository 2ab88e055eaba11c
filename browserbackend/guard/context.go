package guard

import "context"

type ctxKey struct{}

// NewContext returns ctx carrying g, the guard of one invocation: the tools
// use it instead of their Options.Guard for calls made with that ctx (a nil g
// turns the guards off for them).
func NewContext(ctx context.Context, g *Guard) context.Context {
	return context.WithValue(ctx, ctxKey{}, ctxGuard{g})
}

type ctxGuard struct{ g *Guard }

// FromContext returns the guard NewContext put in ctx, and whether there was
// one (g may be nil when the invocation turned the guards off).
func FromContext(ctx context.Context) (g *Guard, ok bool) {
	v, ok := ctx.Value(ctxKey{}).(ctxGuard)
	return v.g, ok
}
