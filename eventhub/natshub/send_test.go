package natshub_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/natshub"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/internal/natstest"
)

// node is one hub replica with a Handler recording what it receives.
type node struct {
	nc  *nats.Conn
	hub *natshub.Hub
	got chan natshub.Message
}

func (n *node) ServeMessage(m natshub.Message) []byte {
	n.got <- m
	return append([]byte("answer:"), m.Data...)
}

func (n *node) ServeBroadcast(m natshub.Message) { n.got <- m }

func startNode(t *testing.T, url, name string, opts ...natshub.Option) *node {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hub, err := natshub.New(ctx, nc, name, append([]natshub.Option{natshub.WithLogger(quiet())}, opts...)...)
	require.NoError(t, err)
	n := &node{nc: nc, hub: hub, got: make(chan natshub.Message, 16)}
	hub.Peers().Handle(n)
	t.Cleanup(func() {
		_ = hub.Close()
		nc.Close()
	})
	return n
}

// nodes starts three replicas a, b, c whose holders keep a delivery answer
// and whose publishes wait far beyond the test: a correlated publish
// completes only through the seam under test.
func nodes(t *testing.T, hb time.Duration) [3]*node {
	srv := natstest.Start(t)
	var ns [3]*node
	for i, name := range []string{"a", "b", "c"} {
		ns[i] = startNode(t, srv.URL(), name, natshub.WithHeartbeat(hb), natshub.WithWaits(time.Hour, time.Hour))
	}
	return ns
}

// subscribe registers clientID on n's replica and waits until on lists it.
func subscribe(t *testing.T, n, on *node, clientID string) *eventhub.Subscription {
	t.Helper()
	sub, err := n.hub.Subscribe(eventhub.SubscribeRequest{ClientID: clientID, InterfaceID: wire.InterfaceChromeExtension, Actor: "alice"})
	require.NoError(t, err)
	t.Cleanup(sub.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		ch := on.hub.Changed()
		if _, ok := on.hub.Client(clientID); ok {
			return sub
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("client %q never listed", clientID)
		}
	}
}

type published struct {
	id  string
	err error
}

// publishCorrelated publishes an awaited event for clientID under cid from
// n, in the background.
func publishCorrelated(n *node, clientID, cid string) chan published {
	out := make(chan published, 1)
	go func() {
		id, err := n.hub.Publish(context.Background(), eventhub.Target{ClientID: clientID, CorrelationID: cid,
			ReplayUntil: time.Now().Add(time.Minute)}, "", map[string]string{"type": "req"})
		out <- published{id, err}
	}()
	return out
}

func nextEvent(t *testing.T, sub *eventhub.Subscription) eventhub.Envelope {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	env, err := sub.Next(ctx)
	require.NoError(t, err)
	return env
}

func wait[T any](t *testing.T, ch chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatal("nothing arrived")
		panic("unreachable")
	}
}

// The holder's delivery answer rides with the holder's Send under the same
// correlation id: the publish completes with the holder's envelope id, and
// the receiver's Handler sees the payload, headers and correlation id.
func TestCorrelatedPublishIsConfirmedBySendFromTheHolder(t *testing.T) {
	ns := nodes(t, time.Second)
	a, b := ns[0], ns[1]
	sub := subscribe(t, b, a, "ext-1")

	out := publishCorrelated(a, "ext-1", "a.r1")
	env := nextEvent(t, sub)
	hdr := nats.Header{}
	hdr.Set("Relay-Test", "v")
	answer, err := b.hub.Peers().Send(context.Background(), "a", "a.r1", hdr, []byte("result"))
	require.NoError(t, err)
	require.Equal(t, "answer:result", string(answer))
	m := wait(t, a.got)
	require.Equal(t, "a.r1", m.CorrelationID)
	require.Equal(t, "v", m.Header.Get("Relay-Test"))
	require.Equal(t, "result", string(m.Data))

	p := wait(t, out)
	require.NoError(t, p.err)
	require.Equal(t, env.ID, p.id, "the holder's envelope id")
	held, err := a.hub.Retract(context.Background(), p.id)
	require.NoError(t, err)
	require.True(t, held)
}

// A Send under the correlation id from a third replica makes the publisher
// ask the holder for its answer.
func TestCorrelatedPublishIsConfirmedBySendFromAThirdReplica(t *testing.T) {
	ns := nodes(t, time.Second)
	a, b, c := ns[0], ns[1], ns[2]
	sub := subscribe(t, b, a, "ext-1")

	out := publishCorrelated(a, "ext-1", "a.r1")
	env := nextEvent(t, sub)
	_, err := c.hub.Peers().Send(context.Background(), "a", "a.r1", nil, []byte("result"))
	require.NoError(t, err)
	p := wait(t, out)
	require.NoError(t, p.err)
	require.Equal(t, env.ID, p.id)
}

// The holder crashes while it keeps the answer: the publish returns once
// the holder is found dead, with an id Retract reports not held.
func TestCorrelatedPublishEndsWhenTheHolderCrashes(t *testing.T) {
	ns := nodes(t, 100*time.Millisecond)
	a, b := ns[0], ns[1]
	sub := subscribe(t, b, a, "ext-1")

	out := publishCorrelated(a, "ext-1", "a.r1")
	nextEvent(t, sub)
	b.nc.Close()
	p := wait(t, out)
	require.NoError(t, p.err)
	held, err := a.hub.Retract(context.Background(), p.id)
	require.NoError(t, err)
	require.False(t, held)
}

// Send to itself, to a bad name, or to a replica without a Handler is
// ErrNoReplica; a broadcast reaches every other replica's Handler.
func TestSendAndBroadcast(t *testing.T) {
	srv := natstest.Start(t)
	a := startNode(t, srv.URL(), "a")
	b := startNode(t, srv.URL(), "b")
	ctx := context.Background()
	_, err := a.hub.Peers().Send(ctx, "a", "", nil, []byte("x"))
	require.ErrorIs(t, err, natshub.ErrNoReplica)
	_, err = a.hub.Peers().Send(ctx, "bad.name", "", nil, []byte("x"))
	require.ErrorIs(t, err, natshub.ErrNoReplica)

	answer, err := a.hub.Peers().Send(ctx, "b", "", nil, []byte("x"))
	require.NoError(t, err)
	require.Equal(t, "answer:x", string(answer))
	require.Equal(t, "x", string(wait(t, b.got).Data))

	require.NoError(t, a.hub.Peers().Broadcast(nil, []byte("ev")))
	require.Equal(t, "ev", string(wait(t, b.got).Data))

	nc, err := nats.Connect(srv.URL())
	require.NoError(t, err)
	defer nc.Close()
	c, err := natshub.New(ctx, nc, "c", natshub.WithLogger(quiet()))
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	_, err = a.hub.Peers().Send(ctx, "c", "", nil, []byte("x"))
	require.ErrorIs(t, err, natshub.ErrNoReplica, "no Handler")
}
