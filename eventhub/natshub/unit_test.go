package natshub_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/eventhub/natshub"
	"github.com/browserchain/browserchain/internal/natstest"
)

func TestNewRefusesBadConfig(t *testing.T) {
	ctx := context.Background()
	_, err := natshub.New(ctx, nil, "a")
	require.ErrorContains(t, err, "nil connection")
	broker := natstest.Start(t)
	nc, err := nats.Connect(broker.URL())
	require.NoError(t, err)
	defer nc.Close()
	for _, name := range []string{"", "a.b", "a b", "a*"} {
		_, err = natshub.New(ctx, nc, name)
		require.ErrorContains(t, err, "replica name", name)
	}
	_, err = natshub.New(ctx, nc, "a", natshub.WithPrefix("x.y"))
	require.ErrorContains(t, err, "prefix")
}

// A context without a deadline is a valid one for New (the NATS client's
// flush needs a deadline; New supplies its own).
func TestNewAcceptsAContextWithoutDeadline(t *testing.T) {
	broker := natstest.Start(t)
	nc, err := nats.Connect(broker.URL())
	require.NoError(t, err)
	defer nc.Close()
	hub, err := natshub.New(context.Background(), nc, "a", natshub.WithLogger(quiet()))
	require.NoError(t, err)
	require.NoError(t, hub.Close())
}
