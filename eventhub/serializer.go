package eventhub

import (
	"log/slog"
	"sync"
)

// serializer runs callbacks one at a time, in submission order, on its own
// goroutine (STYLE.md: grpc's callback serializer). Schedule never blocks: it
// appends to a bounded backlog and drops (counting) beyond it.
type serializer struct {
	mu      sync.Mutex
	backlog []func()
	max     int
	dropped uint64
	closed  bool
	wake    chan struct{}
	done    chan struct{}
	logger  *slog.Logger
}

func newSerializer(max int, logger *slog.Logger) *serializer {
	s := &serializer{max: max, wake: make(chan struct{}, 1), done: make(chan struct{}), logger: logger}
	go s.run()
	return s
}

// Schedule queues f. It reports false when f was dropped (closed or full).
func (s *serializer) Schedule(f func()) bool {
	s.mu.Lock()
	if s.closed || len(s.backlog) >= s.max {
		if !s.closed {
			s.dropped++
		}
		s.mu.Unlock()
		return false
	}
	s.backlog = append(s.backlog, f)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}

func (s *serializer) run() {
	defer close(s.done)
	for {
		s.mu.Lock()
		batch := s.backlog
		s.backlog = nil
		dropped := s.dropped
		s.dropped = 0
		closed := s.closed
		s.mu.Unlock()
		if dropped > 0 {
			s.logger.Warn("eventhub: hook calls dropped: backlog full", "dropped", dropped)
		}
		for _, f := range batch {
			f()
		}
		if closed && len(batch) == 0 {
			return
		}
		if !closed {
			<-s.wake
		}
	}
}

// Close runs what is queued, then stops the goroutine and waits for it.
func (s *serializer) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return
	}
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	<-s.done
}
