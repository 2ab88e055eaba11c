package hostproxy

import (
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of the per-client event budget (Options.EventRate).
const (
	// DefaultEventRate is how many event posts per second a client may
	// make before further ones are shed.
	DefaultEventRate = 1000
	// DefaultEventBurst is how many event posts a client may make at once.
	DefaultEventBurst = 1000
)

// maxEventBudgets bounds the per-client budgets kept; beyond it they are
// all forgotten (every client starts again with a full burst).
const maxEventBudgets = 4096

// eventBudget sheds a client's CDP event posts beyond its own token bucket
// (golang.org/x/time/rate), so an event flood never competes with the
// client's result posts, which are not charged to it. Safe for concurrent
// use.
type eventBudget struct {
	limit rate.Limit
	burst int
	now   func() time.Time

	shed atomic.Uint64

	mu      sync.Mutex
	clients map[string]*clientBudget
}

type clientBudget struct {
	lim *rate.Limiter
	// loggedAt is when the last shed line for this client was written; at
	// most one a second.
	loggedAt time.Time
	shed     uint64 // shed since loggedAt
}

func newEventBudget(perSecond float64, burst int, now func() time.Time) *eventBudget {
	if perSecond <= 0 {
		perSecond = DefaultEventRate
	}
	if burst <= 0 {
		burst = DefaultEventBurst
	}
	if now == nil {
		now = time.Now
	}
	return &eventBudget{limit: rate.Limit(perSecond), burst: burst, now: now, clients: make(map[string]*clientBudget)}
}

// allow charges one event of clientID. When it is shed, logNow is true at
// most once a second per client, with the number shed since the last line.
func (e *eventBudget) allow(clientID string) (ok, logNow bool, shedSince uint64) {
	now := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.clients[clientID]
	if c == nil {
		if len(e.clients) >= maxEventBudgets {
			clear(e.clients)
		}
		c = &clientBudget{lim: rate.NewLimiter(e.limit, e.burst)}
		e.clients[clientID] = c
	}
	if c.lim.AllowN(now, 1) {
		return true, false, 0
	}
	e.shed.Add(1)
	c.shed++
	if now.Sub(c.loggedAt) < time.Second {
		return false, false, 0
	}
	n := c.shed
	c.loggedAt, c.shed = now, 0
	return false, true, n
}
