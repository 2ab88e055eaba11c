package natshub_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/natshub"
	"github.com/browserchain/browserchain/eventhub/wire"
)

// The holder's delivery answer is never sent on its own here (the timer
// and the publish's wait are far beyond the test): a request's round trip
// completes only because the answer rides in the result posted to the
// holder.
func TestDeliveryAnswerRidesWithTheResultPostedToTheHolder(t *testing.T) {
	natshub.SetWaitsForTest(t, time.Hour, time.Hour)
	_, rs := cluster(t, time.Second)
	a, b := rs[0], rs[1]
	s := dial(t, b, "ext-1", "")
	waitListed(t, a.hub, "ext-1", true)

	out := request(a.proxy, context.Background(), "ext-1")
	msg := next(t, s)
	require.Equal(t, wire.TypeHostBrowserRequest, msg["type"])
	code, _ := postResult(t, b, "ext-1", actor, msg["requestId"].(string), `{"result":{"value":2}}`)
	require.Equal(t, http.StatusOK, code)
	o := wait(t, out)
	require.NoError(t, o.err)
	require.JSONEq(t, `{"result":{"value":2}}`, string(o.res))

	// The request was retracted as held by the live registration: nothing
	// of it is delivered again.
	_, err := a.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1"}, "", map[string]string{"type": "marker"})
	require.NoError(t, err)
	require.Equal(t, "marker", next(t, s)["type"])
}

// A result posted to a third replica reaches the caller on A, which then
// asks the holder B for its delivery answer: the request completes though
// B would otherwise keep it for an hour.
func TestResultPostedToAThirdReplicaGetsTheHolderToAnswerAtOnce(t *testing.T) {
	natshub.SetWaitsForTest(t, time.Hour, time.Hour)
	_, rs := cluster(t, time.Second)
	a, b, c := rs[0], rs[1], rs[2]
	s := dial(t, b, "ext-1", "")
	waitListed(t, a.hub, "ext-1", true)

	out := request(a.proxy, context.Background(), "ext-1")
	msg := next(t, s)
	code, _ := postResult(t, c, "ext-1", actor, msg["requestId"].(string), `{"ok":true}`)
	require.Equal(t, http.StatusOK, code)
	o := wait(t, out)
	require.NoError(t, o.err)
	require.JSONEq(t, `{"ok":true}`, string(o.res))
}

// The holder crashes while it keeps the delivery answer: A's request fails
// with a transport error once B is found dead (its client's roster entry
// ends), not when the publish's own wait (an hour here) runs out.
func TestHolderCrashingWhileItKeepsTheAnswerFailsTheRequestWithinTheBound(t *testing.T) {
	natshub.SetWaitsForTest(t, time.Hour, time.Hour)
	_, rs := cluster(t, 100*time.Millisecond)
	a, b := rs[0], rs[1]
	s := dial(t, b, "ext-1", "")
	waitListed(t, a.hub, "ext-1", true)

	out := request(a.proxy, context.Background(), "ext-1")
	next(t, s)
	b.crash()
	o := wait(t, out)
	requireClass(t, o.err, browserbackend.ClassTransport)
	require.Contains(t, o.err.Error(), "disconnected")
	waitListed(t, a.hub, "ext-1", false)
}
