package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/eventhubtest"
	"github.com/browserchain/browserchain/eventhub/natshub"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/hostproxy/natsrelay"
	"github.com/browserchain/browserchain/internal/natstest"
)

// DistributedResult compares the distributed hub (two replicas on one real
// nats-server process) with the in-process hub, in one run: a
// Runtime.evaluate-shaped request from the proxy to a client that answers
// at once (no browser: the figure is the hub and proxy path), a 10 MB result,
// and how long a new client takes to appear in another replica's roster.
type DistributedResult struct {
	InProcess, AcrossReplicas Durations
	// BareRequest is a core NATS request answered at once by a subscriber
	// on another connection to the same broker (a 40-byte payload), timed
	// in the same loop: the two broker hops (request to B, result to A)
	// that a request crossing replicas cannot avoid, with nothing of ours.
	BareRequest Durations
	// ShotInProcess and ShotAcross are round trips with a 10 MB result;
	// the Alloc fields are bytes allocated per round trip (whole process).
	ShotInProcess, ShotAcross           Durations
	ShotAllocInProcess, ShotAllocAcross float64
	ShotBytes                           int
	// Convergence is SSE registration on B → listed on A.
	Convergence Durations
}

// answerer is a fake host client over real SSE and HTTP: it answers every
// host_browser_request with content.
type answerer struct {
	s    *eventhubtest.Stream
	post string
	id   string
	body func(requestID string) []byte
	done chan struct{}
}

func startAnswerer(ctx context.Context, base, clientID string, body func(string) []byte) (*answerer, error) {
	s, err := eventhubtest.Dial(ctx, base+wire.PathEvents, eventhubtest.DialOptions{ClientID: clientID,
		InterfaceID: wire.InterfaceChromeExtension, Header: eventhubtest.ActorHeader("bench")})
	if err != nil {
		return nil, err
	}
	a := &answerer{s: s, post: base + wire.PathHostBrowserResult, id: clientID, body: body, done: make(chan struct{})}
	go a.run()
	return a, nil
}

func (a *answerer) run() {
	defer close(a.done)
	for {
		env, err := a.s.NextEvent(context.Background())
		if err != nil {
			return
		}
		var m hostproxy.RequestMessage
		if json.Unmarshal(env.Message, &m) != nil || m.Type != wire.TypeHostBrowserRequest {
			continue
		}
		req, _ := http.NewRequest(http.MethodPost, a.post, bytes.NewReader(a.body(m.RequestID)))
		req.Header.Set(wire.HeaderClientID, a.id)
		req.Header.Set(eventhubtest.TestActorHeader, "bench")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
}

func (a *answerer) close() { a.s.Close(); <-a.done }

// serveProxy serves the events, ping and result routes of one hub/proxy.
func serveProxy(events, ping http.Handler, p *hostproxy.Proxy) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle(wire.PathEvents, events)
	mux.Handle(wire.PathPing, ping)
	p.Mount(mux)
	return httptest.NewServer(eventhubtest.ActorFromHeader(mux))
}

type benchReplica struct {
	nc  *nats.Conn
	hub *natshub.Hub
	p   *hostproxy.Proxy
	srv *httptest.Server
}

func (r *benchReplica) close() {
	r.p.Close()
	_ = r.hub.Close()
	r.srv.CloseClientConnections()
	r.srv.Close()
	r.nc.Close()
}

func startBenchReplica(ctx context.Context, url, name string) (*benchReplica, error) {
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		return nil, err
	}
	h, err := natshub.New(ctx, nc, name, natshub.WithLogger(discard))
	if err != nil {
		nc.Close()
		return nil, err
	}
	p := natsrelay.NewProxy(h, hostproxy.Options{Logger: discard})
	return &benchReplica{nc: nc, hub: h, p: p, srv: serveProxy(h.EventsHandler(), h.PingHandler(), p)}, nil
}

func waitListedOn(ctx context.Context, h eventhub.Hub, clientID string) error {
	for {
		ch := h.Changed()
		if _, ok := h.Client(clientID); ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("harness: %s never listed: %w", clientID, ctx.Err())
		}
	}
}

// MeasureDistributed runs the distributed-hub rows: rounds small round
// trips and shots 10 MB round trips per path, interleaved, and convergence
// samples. It needs the nats-server scripts/setup.sh builds.
func MeasureDistributed(ctx context.Context, rounds, shots, convergence int) (DistributedResult, error) {
	var res DistributedResult
	dir, err := os.MkdirTemp("", "bench-nats-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	broker, err := natstest.Launch(dir)
	if err != nil {
		return res, err
	}
	defer broker.Kill()

	// In-process: one hub and proxy.
	ih := eventhub.New(eventhub.WithLogger(discard))
	defer ih.Close()
	ip := hostproxy.New(hostproxy.Options{Hub: ih, Logger: discard})
	defer ip.Close()
	isrv := serveProxy(ih.EventsHandler(), ih.PingHandler(), ip)
	defer func() { isrv.CloseClientConnections(); isrv.Close() }()

	a, err := startBenchReplica(ctx, broker.URL(), "a")
	if err != nil {
		return res, err
	}
	defer a.close()
	b, err := startBenchReplica(ctx, broker.URL(), "b")
	if err != nil {
		return res, err
	}
	defer b.close()

	small := func(id string) []byte {
		return []byte(`{"requestId":"` + id + `","content":"{\"result\":{\"type\":\"number\",\"value\":2}}"}`)
	}
	res.ShotBytes = 10 << 20
	shot := `{\"data\":\"` + strings.Repeat("A", res.ShotBytes) + `\"}`
	big := func(id string) []byte { return []byte(`{"requestId":"` + id + `","content":"` + shot + `"}`) }

	run := func(p *hostproxy.Proxy, client string) (time.Duration, error) {
		start := time.Now()
		_, err := p.Request(ctx, hostproxy.Req{Method: "Runtime.evaluate", TargetClientID: client,
			Params: json.RawMessage(`{"expression":"1+1","returnByValue":true}`)})
		return time.Since(start), err
	}
	// Small round trips.
	ia, err := startAnswerer(ctx, isrv.URL, "c-in", small)
	if err != nil {
		return res, err
	}
	ba, err := startAnswerer(ctx, b.srv.URL, "c-b", small)
	if err != nil {
		ia.close()
		return res, err
	}
	if err := errors.Join(waitListedOn(ctx, ih, "c-in"), waitListedOn(ctx, a.hub, "c-b")); err != nil {
		return res, err
	}
	bare, err := bareRequester(broker.URL())
	if err != nil {
		return res, err
	}
	defer bare.close()
	for i := range rounds + rounds/10 {
		d1, err1 := run(ip, "c-in")
		d2, err2 := run(a.p, "c-b")
		d3, err3 := bare.request(ctx)
		if err := errors.Join(err1, err2, err3); err != nil {
			return res, err
		}
		if i >= rounds/10 { // warm-up first
			res.InProcess = append(res.InProcess, d1)
			res.AcrossReplicas = append(res.AcrossReplicas, d2)
			res.BareRequest = append(res.BareRequest, d3)
		}
	}
	ia.close()
	ba.close()

	// 10 MB results.
	ia, err = startAnswerer(ctx, isrv.URL, "s-in", big)
	if err != nil {
		return res, err
	}
	defer ia.close()
	ba, err = startAnswerer(ctx, b.srv.URL, "s-b", big)
	if err != nil {
		return res, err
	}
	defer ba.close()
	if err := errors.Join(waitListedOn(ctx, ih, "s-in"), waitListedOn(ctx, a.hub, "s-b")); err != nil {
		return res, err
	}
	var ms runtime.MemStats
	alloc := func() uint64 { runtime.ReadMemStats(&ms); return ms.TotalAlloc }
	var inAlloc, acAlloc uint64
	for range shots {
		before := alloc()
		d1, err1 := run(ip, "s-in")
		mid := alloc()
		d2, err2 := run(a.p, "s-b")
		after := alloc()
		if err := errors.Join(err1, err2); err != nil {
			return res, err
		}
		res.ShotInProcess = append(res.ShotInProcess, d1)
		res.ShotAcross = append(res.ShotAcross, d2)
		inAlloc += mid - before
		acAlloc += after - mid
	}
	res.ShotAllocInProcess = float64(inAlloc) / float64(shots)
	res.ShotAllocAcross = float64(acAlloc) / float64(shots)

	// Roster convergence: a registration on B until A lists it.
	for i := range convergence {
		id := fmt.Sprintf("conv-%d", i)
		start := time.Now()
		s, err := eventhubtest.Dial(ctx, b.srv.URL+wire.PathEvents, eventhubtest.DialOptions{ClientID: id,
			InterfaceID: wire.InterfaceChromeExtension, Header: eventhubtest.ActorHeader("bench")})
		if err != nil {
			return res, err
		}
		err = waitListedOn(ctx, a.hub, id)
		res.Convergence = append(res.Convergence, time.Since(start))
		s.Close()
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// bareNATS is a requester and a responder on two connections of their own
// to one broker: the floor row of the distributed phase.
type bareNATS struct {
	req, resp *nats.Conn
}

func bareRequester(url string) (*bareNATS, error) {
	resp, err := nats.Connect(url)
	if err != nil {
		return nil, err
	}
	if _, err := resp.Subscribe("bench.bare", func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
		resp.Close()
		return nil, err
	}
	if err := resp.Flush(); err != nil {
		resp.Close()
		return nil, err
	}
	req, err := nats.Connect(url)
	if err != nil {
		resp.Close()
		return nil, err
	}
	return &bareNATS{req: req, resp: resp}, nil
}

var barePayload = []byte(`{"result":{"type":"number","value":2}}`)

func (b *bareNATS) request(ctx context.Context) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err := b.req.RequestWithContext(ctx, "bench.bare", barePayload)
	return time.Since(start), err
}

func (b *bareNATS) close() { b.req.Close(); b.resp.Close() }
