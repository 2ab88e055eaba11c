package eventhubtest

import (
	"slices"
	"sync"
	"time"

	"github.com/browserchain/browserchain/eventhub"
)

// Clock is a manual eventhub.Clock: time moves only on Advance, which fires
// due tickers (at most one pending tick per ticker, like time.Ticker). Safe
// for concurrent use.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	tickers []*ticker
}

// NewClock returns a clock reading start.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start}
}

// Now implements eventhub.Clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTicker implements eventhub.Clock.
func (c *Clock) NewTicker(d time.Duration) eventhub.Ticker {
	if d <= 0 {
		panic("eventhubtest: non-positive ticker period")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &ticker{c: c, period: d, next: c.now.Add(d), ch: make(chan time.Time, 1)}
	c.tickers = append(c.tickers, t)
	return t
}

// Advance moves the clock by d and fires every ticker that came due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.tickers {
		if t.stopped || t.next.After(c.now) {
			continue
		}
		for !t.next.After(c.now) {
			t.next = t.next.Add(t.period)
		}
		select {
		case t.ch <- c.now:
		default:
		}
	}
}

// Tickers returns the number of live (not stopped) tickers.
func (c *Clock) Tickers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.tickers)
}

type ticker struct {
	c       *Clock
	period  time.Duration
	next    time.Time
	ch      chan time.Time
	stopped bool
}

func (t *ticker) C() <-chan time.Time { return t.ch }

func (t *ticker) Stop() {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.stopped = true
	t.c.tickers = slices.DeleteFunc(t.c.tickers, func(x *ticker) bool { return x == t })
}
