package natshub_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/natshub"
	"github.com/browserchain/browserchain/internal/natstest"
)

func TestNewRefusesBadConfig(t *testing.T) {
	ctx := context.Background()
	_, err := natshub.New(ctx, natshub.Config{Replica: "a"})
	require.ErrorContains(t, err, "Conn is nil")
	broker := natstest.Start(t)
	nc, err := nats.Connect(broker.URL())
	require.NoError(t, err)
	defer nc.Close()
	for _, name := range []string{"", "a.b", "a b", "a*"} {
		_, err = natshub.New(ctx, natshub.Config{Conn: nc, Replica: name})
		require.ErrorContains(t, err, "replica name", name)
	}
	_, err = natshub.New(ctx, natshub.Config{Conn: nc, Replica: "a", Prefix: "x.y"})
	require.ErrorContains(t, err, "prefix")
}

func TestPublishErrorsAndClose(t *testing.T) {
	_, rs := cluster(t, time.Second)
	h := rs[0].hub
	ctx := context.Background()
	_, err := h.Publish(ctx, eventhub.Target{}, "", map[string]string{})
	require.ErrorIs(t, err, eventhub.ErrEmptyTarget)
	_, err = h.Publish(ctx, eventhub.Target{ClientID: "x"}, "", func() {})
	require.ErrorContains(t, err, "marshal")
	_, err = h.Publish(ctx, eventhub.Target{Capability: eventhub.CapHostBrowser}, "", map[string]string{})
	require.ErrorIs(t, err, eventhub.ErrNoRecipients)
	_, err = h.Publish(ctx, eventhub.Target{ConversationID: "c"}, "c", map[string]string{})
	require.NoError(t, err, "a conversation event with no subscriber is kept for replay")
	held, err := h.Retract(ctx, "unknown")
	require.NoError(t, err)
	require.False(t, held)

	require.NoError(t, h.Close())
	require.NoError(t, h.Close(), "idempotent")
	_, err = h.Publish(ctx, eventhub.Target{ClientID: "x"}, "", map[string]string{})
	require.ErrorIs(t, err, eventhub.ErrClosed)
}

func TestCapabilityTargetReachesClientsOnEveryReplica(t *testing.T) {
	_, rs := cluster(t, time.Second)
	a, b, c := rs[0], rs[1], rs[2]
	sb := dial(t, b, "ext-b", "")
	sc := dial(t, c, "ext-c", "")
	waitListed(t, a.hub, "ext-b", true)
	waitListed(t, a.hub, "ext-c", true)
	_, err := a.hub.Publish(context.Background(), eventhub.Target{Capability: eventhub.CapHostBrowser}, "", map[string]string{"type": "all"})
	require.NoError(t, err)
	require.Equal(t, "all", next(t, sb)["type"])
	require.Equal(t, "all", next(t, sc)["type"])
}

// A context without a deadline is a valid one for New (the NATS client's
// flush needs a deadline; New supplies its own).
func TestNewAcceptsAContextWithoutDeadline(t *testing.T) {
	broker := natstest.Start(t)
	nc, err := nats.Connect(broker.URL())
	require.NoError(t, err)
	defer nc.Close()
	hub, err := natshub.New(context.Background(), natshub.Config{Conn: nc, Replica: "a", Logger: quiet()})
	require.NoError(t, err)
	require.NoError(t, hub.Close())
}
