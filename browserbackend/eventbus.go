package browserbackend

import (
	"sync"
	"sync/atomic"
)

// DefaultEventBuffer is the per-subscriber channel capacity of an EventBus
// whose Buffer is zero.
const DefaultEventBuffer = 1024

// EventBus fans CDP events out to subscribers without ever blocking the
// publisher: each subscriber has a buffered channel, and an event that does
// not fit is dropped for that subscriber and counted (Dropped). Backends embed
// or hold one to implement EventSource. The zero value is ready to use and is
// safe for concurrent use.
type EventBus struct {
	// Buffer is the per-subscriber capacity; 0 means DefaultEventBuffer. Read
	// at Subscribe.
	Buffer int

	mu      sync.Mutex
	subs    map[*busSub]struct{}
	closed  bool
	dropped atomic.Int64
}

type busSub struct {
	method string
	ch     chan Event
	once   sync.Once
}

// Subscribe implements EventSource. After Close it returns a closed channel.
func (b *EventBus) Subscribe(method string) (<-chan Event, func()) {
	return b.SubscribeBuffer(method, b.Buffer)
}

// SubscribeBuffer implements BufferedEventSource: Subscribe with a channel of
// capacity buffer (0 or less means Buffer, then DefaultEventBuffer). The
// channel is allocated at once, so a subscription that expects few events
// (one Event is 56 bytes; DefaultEventBuffer of them ≈ 56 KiB) asks for a
// small one. After Close it returns a closed channel.
func (b *EventBus) SubscribeBuffer(method string, buffer int) (<-chan Event, func()) {
	n := buffer
	if n <= 0 {
		n = b.Buffer
	}
	if n <= 0 {
		n = DefaultEventBuffer
	}
	s := &busSub{method: method, ch: make(chan Event, n)}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		close(s.ch)
		return s.ch, func() {}
	}
	if b.subs == nil {
		b.subs = make(map[*busSub]struct{})
	}
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s.ch, func() {
		b.mu.Lock()
		_, ok := b.subs[s]
		delete(b.subs, s)
		b.mu.Unlock()
		if ok {
			s.once.Do(func() { close(s.ch) })
		}
	}
}

// Publish delivers ev to every matching subscriber that has room, and drops
// it for the others. It never blocks.
func (b *EventBus) Publish(ev Event) {
	b.deliver(ev, func(filter string) bool { return filter == "" || filter == ev.Method })
}

// publishExact delivers ev to the subscribers whose method filter is exactly
// filter; it never blocks.
func (b *EventBus) publishExact(filter string, ev Event) {
	b.deliver(ev, func(f string) bool { return f == filter })
}

// deliver sends ev, without blocking, to every subscriber whose method
// filter matches; a full subscriber loses it and the drop is counted.
func (b *EventBus) deliver(ev Event, matches func(filter string) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		if !matches(s.method) {
			continue
		}
		select {
		case s.ch <- ev:
		default:
			b.dropped.Add(1)
		}
	}
}

// Dropped reports how many deliveries were dropped because a subscriber's
// buffer was full.
func (b *EventBus) Dropped() int64 { return b.dropped.Load() }

// Close closes every subscriber's channel; later Subscribes get a closed
// channel and Publish does nothing. Idempotent.
func (b *EventBus) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	for s := range b.subs {
		s.once.Do(func() { close(s.ch) })
	}
	b.subs = nil
}
