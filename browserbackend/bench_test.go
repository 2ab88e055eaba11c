package browserbackend_test

import (
	"context"
	"testing"

	bb "github.com/browserchain/browserchain/browserbackend"
	bbt "github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
)

// BenchmarkStickySend measures the per-command overhead of a Client once its
// backend is sticky (fake backend answering {}).
func BenchmarkStickySend(b *testing.B) {
	sel := bb.NewSelector(bb.Options{Providers: []bb.Provider{&bbt.Provider{K: bb.KindLocal}}, Logger: bbt.DiscardLogger()})
	c := sel.Client(bb.Invocation{})
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Send(ctx, evalCommand); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Send(ctx, evalCommand); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInvocationWithFailover measures a whole invocation through the
// reference providers: candidate list from the roster, one transport
// failure, failover, stick, close.
func BenchmarkInvocationWithFailover(b *testing.B) {
	r := newRig(aliceExt)
	r.farm.FailSend(bb.KindExtension, bbt.TransportErr(""))
	sel := bb.NewSelector(bb.Options{Providers: r.ref().Providers(), Logger: bbt.DiscardLogger()})
	ctx := context.Background()
	inv := bb.Invocation{InterfaceID: hostproxytest.InterfaceMacOS, ActorPrincipalID: alice}
	b.ReportAllocs()
	for b.Loop() {
		c := sel.Client(inv)
		if _, err := c.Send(ctx, evalCommand); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}
