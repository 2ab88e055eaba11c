package eventhub_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/stretchr/testify/assert"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/eventhubtest"
)

// Many publishers and clients that reconnect with Last-Event-ID: every
// stream sees strictly increasing sequence numbers, a resumed stream starts
// after its resume point, and nothing deadlocks or leaks (goleak).
func TestConcurrentPublishAndReconnectKeepsPerStreamOrder(t *testing.T) {
	f := newFixture(t, eventhub.WithQueueSize(4096))
	ctx := testCtx(t)
	const (
		clients    = 8
		reconnects = 4
		perStream  = 50
		publishers = 3
	)
	stop := make(chan struct{})
	// Credits keep the publishers at most ~256 events ahead of the readers,
	// so a descheduled reader is never shed on a loaded machine.
	credits := make(chan struct{}, 256)
	for range cap(credits) {
		credits <- struct{}{}
	}
	var pubWG sync.WaitGroup
	for p := range publishers {
		pubWG.Add(1)
		go func() {
			defer pubWG.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-credits:
				}
				_, err := f.hub.Publish(ctx, eventhub.Target{Capability: eventhub.CapHostBrowser}, "", fmt.Sprintf("p%d-%d", p, i))
				if err != nil {
					assert.ErrorIs(t, err, eventhub.ErrNoRecipients)
					select { // nobody took it: give the credit back
					case credits <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resume, lastSeq := "", uint64(0)
			for range reconnects {
				o := dialAs(fmt.Sprintf("c%d", c), wire.InterfaceChromeExtension, "alice")
				o.LastEventID = resume
				s, err := eventhubtest.Dial(ctx, f.srv.EventsURL(), o)
				if !assert.NoError(t, err) {
					return
				}
				for range 64 { // a new stream brings demand (and repays credits lost with closed streams)
					select {
					case credits <- struct{}{}:
					default:
					}
				}
				for n := 0; n < perStream; {
					fr, err := s.Next(ctx)
					if !assert.NoError(t, err) {
						s.Close()
						return
					}
					if fr.IsComment {
						continue
					}
					env, err := fr.Envelope()
					if !assert.NoError(t, err) {
						s.Close()
						return
					}
					if !assert.Greater(t, env.Seq, lastSeq, "order within and across resumed streams") {
						s.Close()
						return
					}
					lastSeq = env.Seq
					n++
					select {
					case credits <- struct{}{}:
					default:
					}
				}
				resume = s.LastEventID
				s.Close()
			}
		}()
	}
	wg.Wait()
	close(stop)
	pubWG.Wait()
}
