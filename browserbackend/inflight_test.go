package browserbackend_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	bb "github.com/browserchain/browserchain/browserbackend"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// The tracker's diagnostics follow the injected clock: in-flight count and
// oldest age, time since the last answer (the uptime before any), uptime.
func TestInFlightDiagnosticsFollowTheClock(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	f := bb.NewInFlight(clk.now)
	clk.advance(5 * time.Second)
	assert.Equal(t, bb.Diagnostics{InFlight: 0, SinceLastAnswer: 5 * time.Second, Uptime: 5 * time.Second}, *f.Diagnostics(),
		"never answered: since-last-answer is the uptime")

	endA := f.Begin()
	clk.advance(time.Second)
	endB := f.Begin()
	clk.advance(2 * time.Second)
	endB(true) // answered at 8 s
	clk.advance(4 * time.Second)
	endC := f.Begin()
	clk.advance(time.Second)
	assert.Equal(t, bb.Diagnostics{InFlight: 2, OldestInFlight: 8 * time.Second, SinceLastAnswer: 5 * time.Second, Uptime: 13 * time.Second},
		*f.Diagnostics())

	endA(false) // given up: not an answer
	endA(true)  // a second end does nothing
	endC(false)
	assert.Equal(t, bb.Diagnostics{InFlight: 0, SinceLastAnswer: 5 * time.Second, Uptime: 13 * time.Second}, *f.Diagnostics())
	assert.Equal(t, "0 in flight, last answer 5s ago, up 13s", f.Diagnostics().String())
}
