package eventhub_test

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/eventhubtest"
)

// BenchmarkPublishDelivery measures publish-to-delivery throughput over real
// HTTP on 127.0.0.1: b.N events published to a conversation, each read and
// parsed by every subscriber (eventhubtest.Stream). The publisher stays at
// most `window` events ahead of the slowest reader so nothing is shed.
// Reported: events/s (published and delivered to all) and deliveries/s
// (events × subscribers).
func BenchmarkPublishDelivery(b *testing.B) {
	for _, subs := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("subscribers=%d", subs), func(b *testing.B) {
			const window = 512
			hub := eventhub.New(eventhub.WithQueueSize(2*window), eventhub.WithMaxSubscribers(subs+1))
			srv := eventhubtest.NewServer(b, hub, nil)
			ctx := context.Background()
			var received []atomic.Int64
			received = make([]atomic.Int64, subs)
			progress := make(chan struct{}, 1)
			var wg sync.WaitGroup
			streams := make([]*eventhubtest.Stream, subs)
			for i := range subs {
				s, err := eventhubtest.Dial(ctx, srv.EventsURL(), eventhubtest.DialOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := s.NextHeartbeat(ctx); err != nil {
					b.Fatal(err)
				}
				streams[i] = s
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						f, err := s.Next(ctx)
						if err != nil {
							if err != io.EOF {
								_ = err
							}
							return
						}
						if !f.IsComment {
							received[i].Add(1)
							select {
							case progress <- struct{}{}:
							default:
							}
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
			msg := map[string]string{"type": "assistant_text_delta", "text": "a typical short delta of assistant text"}
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				for int64(n)-minRecv() >= window {
					<-progress
				}
				if _, err := hub.Publish(ctx, eventhub.Target{ConversationID: "c"}, "c", msg); err != nil {
					b.Fatal(err)
				}
			}
			for minRecv() < int64(b.N) {
				<-progress
			}
			b.StopTimer()
			sec := b.Elapsed().Seconds()
			b.ReportMetric(float64(b.N)/sec, "events/s")
			b.ReportMetric(float64(b.N*subs)/sec, "deliveries/s")
			for _, s := range streams {
				s.Close()
			}
			wg.Wait()
		})
	}
}
