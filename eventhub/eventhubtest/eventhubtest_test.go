package eventhubtest_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"go.uber.org/goleak"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/eventhubtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestClockFiresDueTickersOnceAndStopRemovesThem(t *testing.T) {
	c := eventhubtest.NewClock(time.Unix(0, 0))
	tk := c.NewTicker(time.Second)
	if c.Tickers() != 1 {
		t.Fatalf("tickers = %d", c.Tickers())
	}
	c.Advance(999 * time.Millisecond)
	select {
	case <-tk.C():
		t.Fatal("fired early")
	default:
	}
	c.Advance(5 * time.Second) // several periods: one pending tick, like time.Ticker
	if got := <-tk.C(); !got.Equal(time.Unix(5, 999e6)) {
		t.Fatalf("tick at %v", got)
	}
	select {
	case <-tk.C():
		t.Fatal("more than one pending tick")
	default:
	}
	tk.Stop()
	if c.Tickers() != 0 {
		t.Fatal("stopped ticker still counted")
	}
	c.Advance(time.Hour)
	select {
	case <-tk.C():
		t.Fatal("stopped ticker fired")
	default:
	}
}

func TestStreamReportsStatusErrorsAndPingFollowsHeartbeats(t *testing.T) {
	hub := eventhub.New(eventhub.WithLogger(slog.New(slog.DiscardHandler)))
	srv := eventhubtest.NewServer(t, hub, nil)
	ctx := context.Background()
	_, err := eventhubtest.Dial(ctx, srv.EventsURL(), eventhubtest.DialOptions{ClientID: "x"})
	se, ok := err.(*eventhubtest.StatusError)
	if !ok || se.Code != http.StatusBadRequest {
		t.Fatalf("want a 400 StatusError, got %v", err)
	}
	s, err := eventhubtest.Dial(ctx, srv.EventsURL(), eventhubtest.DialOptions{
		ClientID: "x", InterfaceID: wire.InterfaceMacOS, Header: eventhubtest.ActorHeader("alice")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tok, _, err := s.NextHeartbeat(ctx)
	if err != nil || tok != s.LastHeartbeat {
		t.Fatalf("heartbeat %q %v", tok, err)
	}
	code, err := eventhubtest.Ping(ctx, srv.PingURL(), "x", tok, eventhubtest.ActorHeader("alice"))
	if err != nil || code != http.StatusOK {
		t.Fatalf("ping: %d %v", code, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Next(cctx); err == nil {
		t.Fatal("Next with a cancelled context must fail")
	}
}

// A test reads the hub's stream through Stream.
func ExampleDial() {
	srv := eventhubtest.StartServer(eventhub.New(eventhub.WithLogger(slog.New(slog.DiscardHandler))), nil)
	defer srv.Close()

	ctx := context.Background()
	s, err := eventhubtest.Dial(ctx, srv.EventsURL(), eventhubtest.DialOptions{ConversationID: "c1"})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	_, _, _ = s.NextHeartbeat(ctx)
	_, _ = srv.Hub.Publish(ctx, eventhub.Target{ConversationID: "c1"}, "c1", map[string]int{"n": 1})
	env, _ := s.NextEvent(ctx)
	fmt.Println(env.ConversationID, string(env.Message), s.LastEventID == env.ID)
	// Output: c1 {"n":1} true
}
