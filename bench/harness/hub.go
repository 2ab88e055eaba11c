package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/eventhubtest"
)

// HubThroughput is publish-to-delivery over real SSE streams on 127.0.0.1
// to a number of subscribers.
type HubThroughput struct {
	Subscribers int
	Events      int
	Elapsed     time.Duration
	// Latency is publish → parsed by the subscriber, per delivery.
	Latency Durations
}

// EventsPerSec is events published and delivered to every subscriber per
// second.
func (h HubThroughput) EventsPerSec() float64 { return float64(h.Events) / h.Elapsed.Seconds() }

// DeliveriesPerSec is EventsPerSec × subscribers.
func (h HubThroughput) DeliveriesPerSec() float64 { return h.EventsPerSec() * float64(h.Subscribers) }

// hubWindow is how far the publisher may run ahead of the slowest reader:
// the throughput figure is the hub's delivery rate without shedding.
const hubWindow = 256

// MeasureHubThroughput publishes events to a conversation with subs plain
// subscribers (eventhubtest.Stream readers that parse every envelope) and
// measures the time until every subscriber has read every event. The
// publisher stays at most hubWindow events ahead of the slowest reader.
func MeasureHubThroughput(ctx context.Context, subs, events int) (HubThroughput, error) {
	hub := eventhub.New(eventhub.WithLogger(discard), eventhub.WithQueueSize(2*hubWindow),
		eventhub.WithMaxSubscribers(subs+1))
	defer hub.Close()
	srv := eventhubtest.StartServer(hub, nil)
	defer srv.Close()
	base := time.Now()
	received := make([]atomic.Int64, subs)
	lat := make([]Durations, subs)
	progress := make(chan struct{}, 1)
	var wg sync.WaitGroup
	var streams []*eventhubtest.Stream
	defer func() {
		for _, s := range streams {
			s.Close()
		}
		wg.Wait()
	}()
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	for i := range subs {
		s, err := eventhubtest.Dial(ctx, srv.EventsURL(), eventhubtest.DialOptions{})
		if err != nil {
			return HubThroughput{}, err
		}
		streams = append(streams, s)
		if _, _, err := s.NextHeartbeat(ctx); err != nil {
			return HubThroughput{}, err
		}
		lat[i] = make(Durations, 0, events)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				f, err := s.Next(rctx)
				if err != nil {
					return
				}
				if f.IsComment {
					continue
				}
				var env struct {
					Message struct {
						T int64 `json:"t"`
					} `json:"message"`
				}
				if json.Unmarshal([]byte(f.Data), &env) == nil {
					lat[i] = append(lat[i], time.Since(base)-time.Duration(env.Message.T))
				}
				received[i].Add(1)
				select {
				case progress <- struct{}{}:
				default:
				}
			}
		}()
	}
	minRecv := func() int64 {
		m := received[0].Load()
		for i := 1; i < subs; i++ {
			m = min(m, received[i].Load())
		}
		return m
	}
	type msg struct {
		Type string `json:"type"`
		Text string `json:"text"`
		T    int64  `json:"t"`
	}
	wait := func(cond func() bool) error {
		timer := time.NewTimer(stepTimeout)
		defer timer.Stop()
		for !cond() {
			select {
			case <-progress:
			case <-timer.C:
				return fmt.Errorf("benchreport: hub: subscribers stopped reading (%d of %d)", minRecv(), events)
			}
		}
		return nil
	}
	t0 := time.Now()
	for n := range events {
		if err := wait(func() bool { return int64(n)-minRecv() < hubWindow }); err != nil {
			return HubThroughput{}, err
		}
		m := msg{Type: "assistant_text_delta", Text: "a typical short delta of assistant text", T: int64(time.Since(base))}
		if _, err := hub.Publish(ctx, eventhub.Target{ConversationID: "c"}, "c", m); err != nil {
			return HubThroughput{}, err
		}
	}
	if err := wait(func() bool { return minRecv() >= int64(events) }); err != nil {
		return HubThroughput{}, err
	}
	res := HubThroughput{Subscribers: subs, Events: events, Elapsed: time.Since(t0)}
	rcancel()
	for _, s := range streams {
		s.Close()
	}
	wg.Wait()
	streams = nil
	for _, l := range lat {
		res.Latency = append(res.Latency, l...)
	}
	return res, nil
}

// HubStall is the memory of a hub while one subscriber stops reading.
type HubStall struct {
	Events       int
	PayloadBytes int
	// Heap holds heap-object bytes after a GC at each checkpoint (every
	// Events/20 publishes); Heap[0] is before the first publish.
	Heap Floats
	// ShedAfter is how many events had been published when the stalled
	// subscriber was shed (0: never), and Shed its hub record.
	ShedAfter int
	Shed      *eventhub.ShedInfo
	// Delivered is how many events the healthy subscriber read.
	Delivered int64
}

// MeasureHubStall publishes events of payload bytes to a conversation with
// one healthy subscriber and one that stops reading after the first
// heartbeat (with a 4 KiB socket receive buffer, so the server's writes
// block soon), and records the heap at checkpoints. The hub runs with its
// defaults (queue 256 events, write timeout 10 s).
func MeasureHubStall(ctx context.Context, events, payload int) (HubStall, error) {
	var shed atomic.Pointer[eventhub.ShedInfo]
	var published atomic.Int64
	var shedAt atomic.Int64
	hub := eventhub.New(eventhub.WithLogger(discard), eventhub.WithHooks(eventhub.Hooks{OnShed: func(si eventhub.ShedInfo) {
		shed.Store(&si)
		shedAt.Store(published.Load())
	}}))
	defer hub.Close()
	srv := eventhubtest.StartServer(hub, nil)
	defer srv.Close()
	stalled, err := eventhubtest.Dial(ctx, srv.EventsURL(), eventhubtest.DialOptions{ClientID: "stalled",
		InterfaceID: wire.InterfaceCLI, ReadBuffer: 4096, Header: eventhubtest.ActorHeader("bench")})
	if err != nil {
		return HubStall{}, err
	}
	defer stalled.Close()
	if _, _, err := stalled.NextHeartbeat(ctx); err != nil {
		return HubStall{}, err
	}
	healthy, err := eventhubtest.Dial(ctx, srv.EventsURL(), eventhubtest.DialOptions{})
	if err != nil {
		return HubStall{}, err
	}
	defer healthy.Close()
	if _, _, err := healthy.NextHeartbeat(ctx); err != nil {
		return HubStall{}, err
	}
	var got atomic.Int64
	progress := make(chan struct{}, 1)
	rctx, rcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			f, err := healthy.Next(rctx)
			if err != nil {
				return
			}
			if !f.IsComment {
				got.Add(1)
				select {
				case progress <- struct{}{}:
				default:
				}
			}
		}
	}()
	defer func() { rcancel(); healthy.Close(); <-done }()

	s := []metrics.Sample{{Name: metricHeap}}
	heap := func() float64 {
		runtime.GC()
		runtime.GC() // a second cycle also frees what the first one's finalizers released
		metrics.Read(s)
		return float64(s[0].Value.Uint64())
	}
	res := HubStall{Events: events, PayloadBytes: payload}
	res.Heap = append(res.Heap, heap())
	text := strings.Repeat("x", payload)
	step := max(events/20, 1)
	for n := range events {
		// Pace to the healthy reader (the stalled one is what is measured).
		timer := time.NewTimer(stepTimeout)
		for int64(n)-got.Load() >= 128 {
			select {
			case <-progress:
			case <-timer.C:
				timer.Stop()
				return res, fmt.Errorf("benchreport: hub stall: the healthy subscriber stopped at %d", got.Load())
			}
		}
		timer.Stop()
		if _, err := hub.Publish(ctx, eventhub.Target{ConversationID: "c"}, "c",
			map[string]any{"type": "assistant_text_delta", "text": text}); err != nil {
			return res, err
		}
		published.Add(1)
		if (n+1)%step == 0 {
			res.Heap = append(res.Heap, heap())
		}
	}
	// Let the healthy reader finish (it is paced, so it is close behind).
	timer := time.NewTimer(stepTimeout)
	defer timer.Stop()
	for got.Load() < int64(events) {
		select {
		case <-progress:
		case <-timer.C:
			return res, fmt.Errorf("benchreport: hub stall: the healthy subscriber stopped at %d", got.Load())
		}
	}
	res.Delivered = got.Load()
	res.Shed = shed.Load()
	res.ShedAfter = int(shedAt.Load())
	return res, nil
}
