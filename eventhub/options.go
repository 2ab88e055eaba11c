package eventhub

import (
	"log/slog"
	"time"
)

// Defaults of the in-process hub.
const (
	// DefaultHeartbeatInterval is the period of the heartbeat comment.
	DefaultHeartbeatInterval = 7 * time.Second
	// DefaultMaxSubscribers is the subscriber cap.
	DefaultMaxSubscribers = 100
	// DefaultQueueSize is the bound of each stream's queue, in events.
	DefaultQueueSize = 256
	// DefaultWriteTimeout is how long one write to a stream may block
	// before the stream is shed as not reading.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultReplayCount, DefaultReplayBytes and DefaultReplayAge bound the
	// replay ring.
	DefaultReplayCount = 1024
	DefaultReplayBytes = 8 << 20
	DefaultReplayAge   = 5 * time.Minute
	// DefaultHookBacklog bounds hook calls waiting for the hook goroutine;
	// beyond it calls are dropped and counted in a warn log.
	DefaultHookBacklog = 1024
)

// Clock is the time source of the hub: LastActive stamps, health, heartbeat
// tickers and replay ages. Tests inject a manual one (eventhubtest.Clock).
// Write deadlines on the network always use real time.
type Clock interface {
	Now() time.Time
	NewTicker(d time.Duration) Ticker
}

// Ticker is the part of *time.Ticker the hub uses.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) NewTicker(d time.Duration) Ticker {
	return realTicker{time.NewTicker(d)}
}

type realTicker struct{ t *time.Ticker }

func (t realTicker) C() <-chan time.Time { return t.t.C }
func (t realTicker) Stop()               { t.t.Stop() }

// ReplayLimits bound the replay ring. An event leaves the ring when
// any bound is exceeded: more than Count events, more than Bytes bytes of
// encoded frames, or older than Age. A zero field keeps its default; a
// negative Count disables replay.
type ReplayLimits struct {
	Count int
	Bytes int
	Age   time.Duration
}

// ShedReason says why a stream was shed.
type ShedReason string

// The shed reasons.
const (
	// ShedQueueFull: the stream's bounded queue was full at a publish.
	ShedQueueFull ShedReason = "queue_full"
	// ShedWriteTimeout: a write blocked past the write deadline: the client
	// is not reading.
	ShedWriteTimeout ShedReason = "write_timeout"
	// ShedEvicted: the subscriber cap was reached and this was the oldest
	// stream.
	ShedEvicted ShedReason = "evicted"
)

// ShedInfo describes one shed stream. ClientID and InterfaceID are
// empty for a plain (unregistered) subscriber.
type ShedInfo struct {
	Reason         ShedReason
	ClientID       string
	InterfaceID    string
	ConversationID string
	// StreamAge is how long the stream was open.
	StreamAge time.Duration
	// EventsDelivered counts events written to the stream, replay included.
	EventsDelivered uint64
	// HeartbeatsSent counts heartbeat comments written.
	HeartbeatsSent uint64
	// QueueLen is the number of events still queued when it was shed.
	QueueLen int
}

// EndReason says why a client registration ended.
type EndReason string

// The end reasons of a registration. A shed ends it with the shed reason.
const (
	EndDisconnected EndReason = "disconnected"
	EndReplaced     EndReason = "replaced"
	EndUnregistered EndReason = "unregistered"
	EndHubClosed    EndReason = "hub_closed"
)

// Hooks are optional observers (like httptrace.ClientTrace). They run one at
// a time, in event order, on a goroutine of their own, never on a publish or
// write path; a slow hook delays only later hooks. A nil field is skipped.
type Hooks struct {
	// OnShed is called for every shed stream.
	OnShed func(ShedInfo)
	// OnRegister is called when a client registration starts.
	OnRegister func(ClientInfo)
	// OnUnregister is called when a registration ends, with the reason
	// (an EndReason, or the ShedReason as an EndReason for a shed).
	OnUnregister func(ClientInfo, EndReason)
	// OnHealth is called when a client turns unhealthy or healthy again.
	OnHealth func(info ClientInfo)
}

// Option configures New.
type Option func(*config)

type config struct {
	logger         *slog.Logger
	clock          Clock
	hooks          Hooks
	heartbeat      time.Duration
	maxSubscribers int
	queueSize      int
	writeTimeout   time.Duration
	unhealthyAfter time.Duration
	replay         ReplayLimits
	hookBacklog    int
}

func defaultConfig() config {
	return config{
		clock:          realClock{},
		heartbeat:      DefaultHeartbeatInterval,
		maxSubscribers: DefaultMaxSubscribers,
		queueSize:      DefaultQueueSize,
		writeTimeout:   DefaultWriteTimeout,
		replay:         ReplayLimits{Count: DefaultReplayCount, Bytes: DefaultReplayBytes, Age: DefaultReplayAge},
		hookBacklog:    DefaultHookBacklog,
	}
}

// WithLogger sets the logger (nil = slog.Default()). The hub logs sheds at
// warn, registrations at info and replay gaps at warn; never message bodies.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithClock sets the time source (default: the real clock).
func WithClock(clk Clock) Option {
	return func(c *config) {
		if clk != nil {
			c.clock = clk
		}
	}
}

// WithHooks sets the observer hooks.
func WithHooks(h Hooks) Option { return func(c *config) { c.hooks = h } }

// WithHeartbeatInterval sets the heartbeat period (default 7 s; values ≤ 0
// keep the default). It also sets the unhealthy-after window to 3 periods
// unless WithUnhealthyAfter is given.
func WithHeartbeatInterval(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.heartbeat = d
		}
	}
}

// WithMaxSubscribers sets the cap on open streams, registered or plain
// (default 100). At the cap a new stream evicts the oldest one; 0 refuses
// every stream (503); a negative value means no cap.
func WithMaxSubscribers(n int) Option { return func(c *config) { c.maxSubscribers = n } }

// WithQueueSize sets each stream's queue bound in events (default 256;
// values < 1 keep the default). A publish that finds the queue full sheds
// the stream.
func WithQueueSize(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.queueSize = n
		}
	}
}

// WithWriteTimeout sets how long one write (and its flush) may block before
// the stream is shed with ShedWriteTimeout (default 10 s; values ≤ 0 keep
// the default). It overrides the http.Server's WriteTimeout for the stream.
func WithWriteTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.writeTimeout = d
		}
	}
}

// WithUnhealthyAfter sets how long a client may show no activity before
// Roster reports it unhealthy (default 3 heartbeat intervals).
func WithUnhealthyAfter(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.unhealthyAfter = d
		}
	}
}

// WithReplay sets the replay ring bounds (defaults 1024 events, 8 MiB,
// 5 min).
func WithReplay(l ReplayLimits) Option {
	return func(c *config) {
		if l.Count != 0 {
			c.replay.Count = l.Count
		}
		if l.Bytes > 0 {
			c.replay.Bytes = l.Bytes
		}
		if l.Age > 0 {
			c.replay.Age = l.Age
		}
	}
}
