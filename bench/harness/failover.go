package harness

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/local"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
)

// FailoverResult is the time to the first answer of a fresh invocation whose
// first candidate fails in one way (or does not fail: the baseline).
type FailoverResult struct {
	Scenario string
	// Attempts is the attempt summary of the last sample (kind@stage[code]).
	Attempts string
	D        Durations
}

// Failover scenarios, in report order.
const (
	FailNone      = "no failed candidate (baseline)"
	FailCooldown  = "first candidate in cooldown"
	FailRefused   = "first candidate refused (nothing listening)"
	FailBlackhole = "first candidate blackholed (accepts, never answers)"
)

// noClose is a ScopedClient whose Close leaves the shared backend open.
type noClose struct{ bb.ScopedClient }

func (noClose) Close() error { return nil }

// blackhole accepts TCP connections on 127.0.0.1 and never answers.
type blackhole struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	done  chan struct{}
}

func newBlackhole() (*blackhole, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &blackhole{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns = append(b.conns, c)
			b.mu.Unlock()
		}
	}()
	return b, nil
}

func (b *blackhole) port() int { return b.ln.Addr().(*net.TCPAddr).Port }

func (b *blackhole) close() {
	b.ln.Close()
	<-b.done
	b.mu.Lock()
	for _, c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
}

// refusedPort returns a loopback port nothing listens on (it was free a
// moment ago).
func refusedPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	p := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return p, nil
}

// desktopAuto is the cdp-inspect provider of a macos turn (desktop-auto,
// cooldown-eligible) aimed at 127.0.0.1:port with the default probe
// timeout, discovering through /json/version only.
func desktopAuto(port int) *cdpinspect.Provider {
	cfg := cdpinspect.DefaultConfig()
	cfg.Host = "127.0.0.1"
	cfg.Port = port
	return cdpinspect.NewProvider(cfg, cdpinspect.WithUserDataDirs(), cdpinspect.WithLogger(discard))
}

// ProbeTimeout is the cdp-inspect probe timeout the failover figure runs
// with (the selector's default).
var ProbeTimeout = cdpinspect.DefaultConfig().ProbeTimeout()

// MeasureFailover measures, for n fresh invocations per scenario (nBlack for
// the blackhole, which costs a probe timeout each), the time from the first
// Send of a new Client to its answer. The chain is [desktop-auto
// cdp-inspect, fallback], where the fallback is an already connected
// cdp-inspect session on the world's browser, so its own cost is one round
// trip and the figure isolates the failed candidate. Every scenario gets a
// fresh Selector (and cooldown table) per sample.
func MeasureFailover(ctx context.Context, w *World, n, nBlack int) ([]FailoverResult, error) {
	shared, err := cdpinspect.Dial(ctx, InspectConfig(), cdpinspect.WithWebSocketURL(w.Chromium.WSURL),
		cdpinspect.WithLogger(discard))
	if err != nil {
		return nil, err
	}
	defer shared.Close()
	fallback := bb.ProviderFunc(local.Descriptor, func(bb.Invocation, bb.Env) (bb.Candidate, error) {
		return bb.Candidate{Kind: bb.KindLocal, Reason: "bench: pre-connected fallback",
			Build: func(context.Context) (bb.ScopedClient, error) { return noClose{shared}, nil }}, nil
	})
	bh, err := newBlackhole()
	if err != nil {
		return nil, err
	}
	defer bh.close()
	refused, err := refusedPort()
	if err != nil {
		return nil, err
	}

	type scenario struct {
		name      string
		providers []bb.Provider
		cooled    bool
		samples   int
	}
	cooledP, refusedP, blackP := desktopAuto(refused), desktopAuto(refused), desktopAuto(bh.port())
	defer cooledP.Close()
	defer refusedP.Close()
	defer blackP.Close()
	scenarios := []scenario{
		{FailNone, []bb.Provider{fallback}, false, n},
		{FailCooldown, []bb.Provider{cooledP, fallback}, true, n},
		{FailRefused, []bb.Provider{refusedP, fallback}, false, n},
		{FailBlackhole, []bb.Provider{blackP, fallback}, false, nBlack},
	}
	out := make([]FailoverResult, len(scenarios))
	for i, s := range scenarios {
		out[i].Scenario = s.name
	}
	one := func(i int, s scenario, conv string) error {
		cd := &bb.Cooldowns{}
		if s.cooled {
			cd.Record(cdpinspect.CooldownKey, time.Hour)
		}
		sel := bb.NewSelector(bb.Options{Logger: discard, Providers: s.providers, Cooldowns: cd})
		c := sel.Client(bb.Invocation{ConversationID: conv, InterfaceID: wire.InterfaceMacOS, ActorPrincipalID: "bench"})
		defer c.Close()
		t0 := time.Now()
		_, err := c.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: EvalParams})
		d := time.Since(t0)
		if err != nil {
			return fmt.Errorf("benchreport: failover %q: %w", s.name, err)
		}
		out[i].D = append(out[i].D, d)
		out[i].Attempts = strings.Join(bb.AttemptSummary(c.Attempts()), " → ")
		return nil
	}
	// Warm-up: one of each, not recorded.
	for i, s := range scenarios[:3] {
		if err := one(i, s, "warm"); err != nil {
			return nil, err
		}
		out[i].D = nil
	}
	order := newRounds(len(scenarios))
	for r := range max(n, nBlack) {
		for _, i := range order.next() {
			s := scenarios[i]
			if r >= s.samples {
				continue
			}
			if err := one(i, s, fmt.Sprintf("f%d", r)); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
