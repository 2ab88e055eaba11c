package browserbackend

import (
	"sync"
	"time"
)

// InFlight tracks the commands a backend (one connection, one browser) has
// in flight, so that a timeout can say what the backend was doing: its
// Diagnostics tell a hung browser (many commands waiting, no answer for
// long) from a slow page (one command waiting, answers a moment ago). Create
// it with NewInFlight when the connection or browser starts; it is safe for
// concurrent use.
type InFlight struct {
	now     func() time.Time
	started time.Time

	mu         sync.Mutex
	next       uint64
	sent       map[uint64]time.Time
	lastAnswer time.Time // zero: never answered
}

// NewInFlight returns a tracker whose uptime starts now; now is its clock
// (nil means time.Now; tests inject one).
func NewInFlight(now func() time.Time) *InFlight {
	if now == nil {
		now = time.Now
	}
	return &InFlight{now: now, started: now(), sent: make(map[uint64]time.Time)}
}

// Begin records one command sent; the returned end must be called once when
// it is over, with answered true when the backend answered it (a result or
// an error reply), false when it was given up (deadline, cancel, loss).
func (f *InFlight) Begin() (end func(answered bool)) {
	t := f.now()
	f.mu.Lock()
	f.next++
	id := f.next
	f.sent[id] = t
	f.mu.Unlock()
	var once sync.Once
	return func(answered bool) {
		once.Do(func() {
			done := f.now()
			f.mu.Lock()
			delete(f.sent, id)
			if answered {
				f.lastAnswer = done
			}
			f.mu.Unlock()
		})
	}
}

// Diagnostics describes the tracker now: the commands in flight (call it
// before ending the command that timed out, so that it is counted), the age
// of the oldest, the time since the last answer (the uptime when there was
// none) and the uptime.
func (f *InFlight) Diagnostics() *Diagnostics {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	d := &Diagnostics{InFlight: len(f.sent), Uptime: now.Sub(f.started)}
	for _, t := range f.sent {
		d.OldestInFlight = max(d.OldestInFlight, now.Sub(t))
	}
	d.SinceLastAnswer = d.Uptime
	if !f.lastAnswer.IsZero() {
		d.SinceLastAnswer = now.Sub(f.lastAnswer)
	}
	return d
}

// LastAnswer is when the backend last answered a command; zero when it
// never did.
func (f *InFlight) LastAnswer() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastAnswer
}
