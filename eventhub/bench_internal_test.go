package eventhub

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// BenchmarkPublishFanout measures the hub alone (no HTTP): Publish to a
// conversation with N subscribers whose queues are drained by goroutines.
func BenchmarkPublishFanout(b *testing.B) {
	for _, subs := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("subscribers=%d", subs), func(b *testing.B) {
			h := New(WithQueueSize(1<<14), WithMaxSubscribers(-1))
			defer h.Close()
			var wg sync.WaitGroup
			for range subs {
				s, err := h.subscribe(SubscribeRequest{})
				if err != nil {
					b.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-s.queue:
						case <-s.done:
							return
						}
					}
				}()
			}
			msg := map[string]string{"type": "assistant_text_delta", "text": "a typical short delta of assistant text"}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := h.Publish(ctx, Target{ConversationID: "c"}, "c", msg); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*subs)/b.Elapsed().Seconds(), "deliveries/s")
			h.Close()
			wg.Wait()
		})
	}
}
