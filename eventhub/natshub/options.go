package natshub

import (
	"log/slog"
	"time"

	"github.com/browserchain/browserchain/eventhub"
)

// Option configures New.
type Option func(*config)

type config struct {
	prefix         string
	hubOptions     []eventhub.Option
	heartbeat      time.Duration
	rosterTTL      time.Duration
	touchFlush     time.Duration
	unhealthyAfter time.Duration
	logger         *slog.Logger
	ackDelay       time.Duration // how long a holder keeps a delivery answer back
	staleWait      time.Duration // how long a publish or Send waits for a silent replica
}

func defaultConfig() config {
	return config{
		prefix:         DefaultPrefix,
		heartbeat:      DefaultHeartbeat,
		rosterTTL:      DefaultRosterTTL,
		touchFlush:     DefaultTouchFlush,
		unhealthyAfter: 3 * eventhub.DefaultHeartbeatInterval,
		ackDelay:       defaultAckDelay,
		staleWait:      defaultStaleWait,
	}
}

// WithPrefix sets the first subject token and the bucket and stream name
// prefix, 1–64 of [A-Za-z0-9_-] (default DefaultPrefix).
func WithPrefix(p string) Option { return func(c *config) { c.prefix = p } }

// WithHubOptions configure the replica's local in-process hub (heartbeat,
// queues, replay ring). eventhub.WithHooks and eventhub.WithLogger given
// here are overridden: the hub installs its own hooks and its logger.
func WithHubOptions(opts ...eventhub.Option) Option {
	return func(c *config) { c.hubOptions = append(c.hubOptions, opts...) }
}

// WithHeartbeat sets the replica heartbeat period (default
// DefaultHeartbeat; values ≤ 0 keep it).
func WithHeartbeat(d time.Duration) Option {
	return positive(d, func(c *config) *time.Duration { return &c.heartbeat })
}

// WithRosterTTL sets the roster bucket's TTL (default DefaultRosterTTL;
// values ≤ 0 keep it).
func WithRosterTTL(d time.Duration) Option {
	return positive(d, func(c *config) *time.Duration { return &c.rosterTTL })
}

// WithTouchFlush sets how often activity is written to the roster (default
// DefaultTouchFlush; values ≤ 0 keep it).
func WithTouchFlush(d time.Duration) Option {
	return positive(d, func(c *config) *time.Duration { return &c.touchFlush })
}

// WithUnhealthyAfter sets how long a client on another replica may show no
// activity before Roster reports it unhealthy (default 21 s, 3 default SSE
// heartbeats, as the in-process hub; values ≤ 0 keep it).
func WithUnhealthyAfter(d time.Duration) Option {
	return positive(d, func(c *config) *time.Duration { return &c.unhealthyAfter })
}

// WithLogger sets the logger of the hub and its local in-process hub (nil
// means slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// withWaits sets how long a holder keeps a delivery answer back and how
// long a publish or Send waits for a silent replica (tests).
func withWaits(answer, publish time.Duration) Option {
	return func(c *config) { c.ackDelay, c.staleWait = answer, publish }
}

func positive(d time.Duration, field func(*config) *time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			*field(c) = d
		}
	}
}
