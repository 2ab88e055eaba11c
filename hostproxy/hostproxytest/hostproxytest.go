// Package hostproxytest helps test code that talks to hostproxy: a loopback
// assistant runtime (the in-process hub, a Proxy and their routes behind a
// bearer-token auth), a roster wait woken by hub changes, a latency
// measurement for benchmarks, and Reference: the four reference providers'
// real rules (extension, host-bridge, cdp-inspect, local) over a fake hub
// roster and a browserbackendtest.Farm, so a host app can test its selector
// wiring, cooldowns and reconnect grace without a hub or a browser. It is for
// tests only.
package hostproxytest

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/hostproxy"
)

// ServerOptions configures NewServer; the zero value works.
type ServerOptions struct {
	// Tokens maps bearer tokens to actor principal ids. A request with an
	// Authorization header naming an unknown token is answered 401; a
	// request without one runs with no actor.
	Tokens map[string]string
	// Wrap, optional, wraps the routes after authentication (to record or
	// alter requests).
	Wrap func(http.Handler) http.Handler
	// Logger is given to the hub and the proxy; nil discards.
	Logger *slog.Logger
	// ResultSocket also serves the result socket (GET
	// /v1/host-browser-result/ws), its auth message checked against Tokens;
	// a handshake with an Origin must name one of SocketOrigins.
	ResultSocket  bool
	SocketOrigins []string
}

// Server is an assistant runtime on 127.0.0.1: GET /v1/events, POST
// /v1/ping and the three host-browser routes.
type Server struct {
	*httptest.Server
	Hub   *eventhub.InProcess
	Proxy *hostproxy.Proxy
}

// NewServer starts a Server; tb's cleanup closes the proxy, the hub (ending
// every stream) and the server.
func NewServer(tb testing.TB, o ServerOptions) *Server {
	tb.Helper()
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{Hub: eventhub.New(eventhub.WithLogger(log))}
	s.Proxy = hostproxy.New(hostproxy.Options{Hub: s.Hub, Logger: log})
	mux := http.NewServeMux()
	mux.Handle(wire.PathEvents, s.Hub.EventsHandler())
	mux.Handle(wire.PathPing, s.Hub.PingHandler())
	s.Proxy.Mount(mux)
	var routes http.Handler = mux
	if o.Wrap != nil {
		routes = o.Wrap(mux)
	}
	var socket http.Handler
	if o.ResultSocket {
		socket = s.Proxy.ResultSocketHandler(hostproxy.SocketOptions{
			Verify: func(_ context.Context, token, _, iface string) (string, string, error) {
				if actor, ok := o.Tokens[token]; ok {
					return actor, iface, nil
				}
				return "", "", errors.New("hostproxytest: unknown token")
			},
			AllowedOrigins: o.SocketOrigins,
		})
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if socket != nil && r.URL.Path == wire.PathHostBrowserResultSocket {
			socket.ServeHTTP(w, r) // outside the bearer check: the token is in the first message
			return
		}
		if h := r.Header.Get("Authorization"); h != "" {
			actor, ok := o.Tokens[strings.TrimPrefix(h, "Bearer ")]
			if !ok {
				http.Error(w, "hostproxytest: unknown token", http.StatusUnauthorized)
				return
			}
			r = r.WithContext(eventhub.WithActor(r.Context(), actor))
		}
		routes.ServeHTTP(w, r)
	}))
	tb.Cleanup(func() {
		_ = s.Proxy.Close()
		_ = s.Hub.Close()
		s.CloseClientConnections()
		s.Close()
	})
	return s
}

// WaitClient blocks until hub lists clientID as connected (present true) or
// as gone (present false). It is woken by roster changes, never polls, and
// fails tb after 30 s as a guard against a broken test.
func WaitClient(tb testing.TB, hub eventhub.Hub, clientID string, present bool) {
	tb.Helper()
	guard := time.NewTimer(30 * time.Second)
	defer guard.Stop()
	for {
		changed := hub.Changed()
		if _, ok := hub.Client(clientID); ok == present {
			return
		}
		select {
		case <-changed:
		case <-guard.C:
			tb.Fatalf("hostproxytest: client %s present=%v never happened", clientID, present)
		}
	}
}

// MeasureSends sends cmd b.N times on sc (after 50 warm-up sends) and
// reports the median and 90th-percentile latency as "median-µs" and
// "p90-µs".
func MeasureSends(b *testing.B, sc browserbackend.ScopedClient, cmd browserbackend.Command) {
	b.Helper()
	ctx := b.Context()
	for range 50 {
		if _, err := sc.Send(ctx, cmd); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		_, err := sc.Send(ctx, cmd)
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "median-µs")
	b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds()), "p90-µs")
}

// CodesByClass receives n errors from errs, each a *browserbackend.Error
// (the test fails at once otherwise), and returns their codes by class: the
// shape a test asserts when several calls end at once in different ways.
func CodesByClass(t testing.TB, errs <-chan error, n int) map[browserbackend.Class]string {
	t.Helper()
	got := make(map[browserbackend.Class]string, n)
	for range n {
		var be *browserbackend.Error
		if err := <-errs; !errors.As(err, &be) {
			t.Fatalf("hostproxytest: want a *browserbackend.Error, got %v", err)
		}
		got[be.Class] = be.Code
	}
	return got
}
