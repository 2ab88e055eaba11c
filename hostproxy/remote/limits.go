package remote

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults and bounds of Limits, the seed's numbers.
const (
	DefaultPairingTTL         = 5 * time.Minute
	MaxPairingTTL             = time.Hour
	DefaultDeviceTTL          = 90 * 24 * time.Hour
	MaxDeviceTTL              = 366 * 24 * time.Hour
	DefaultRenewAfter         = 30 * 24 * time.Hour
	DefaultMaxConnections     = 64
	MaxMaxConnections         = 1000
	DefaultAuthorizeRate      = 60 // per minute per peer IP
	MaxAuthorizeRate          = 60000
	DefaultMaxPeerCounters    = 1024
	globalAuthorizeMultiplier = 16
)

// MaxAuthorizeBurst bounds the exchanges one peer may make at once, before
// Limits.AuthorizeRate paces it.
const MaxAuthorizeBurst = 10

// Limits are the server's limits, fixed at start. A zero field takes
// its default; Validate reports a value outside its bounds.
type Limits struct {
	// PairingTTL is the lifetime of a new pairing link: default 5 min, at
	// most 1 h.
	PairingTTL time.Duration
	// DeviceTTL is a grant's lifetime from pairing or renewal: default
	// 90 days, at most 366 days.
	DeviceTTL time.Duration
	// RenewAfter is when the extension should renew, counted from the same
	// instant: default 30 days, less than DeviceTTL.
	RenewAfter time.Duration
	// MaxConnections is the online browser capacity: default 64, 1–1000.
	MaxConnections int
	// AuthorizeRate is the pair/renew exchanges per minute per peer IP:
	// default 60, 1–60000, of which at most MaxAuthorizeBurst at once. The
	// global budget is 16 times a peer's, rate and burst.
	AuthorizeRate int
	// MaxPeerCounters bounds the per-peer counters kept (default 1024);
	// further peers share one overflow counter with the per-peer rate, and
	// never evict a counter in use.
	MaxPeerCounters int
}

// withDefaults returns l with zero fields set to their defaults.
func (l Limits) withDefaults() Limits {
	if l.PairingTTL == 0 {
		l.PairingTTL = DefaultPairingTTL
	}
	if l.DeviceTTL == 0 {
		l.DeviceTTL = DefaultDeviceTTL
	}
	if l.RenewAfter == 0 {
		l.RenewAfter = DefaultRenewAfter
		if l.RenewAfter >= l.DeviceTTL {
			l.RenewAfter = l.DeviceTTL / 3
		}
	}
	if l.MaxConnections == 0 {
		l.MaxConnections = DefaultMaxConnections
	}
	if l.AuthorizeRate == 0 {
		l.AuthorizeRate = DefaultAuthorizeRate
	}
	if l.MaxPeerCounters == 0 {
		l.MaxPeerCounters = DefaultMaxPeerCounters
	}
	return l
}

// Validate checks the limits after defaults: an error names the field and
// its bounds.
func (l Limits) Validate() error {
	l = l.withDefaults()
	switch {
	case l.PairingTTL <= 0 || l.PairingTTL > MaxPairingTTL:
		return fmt.Errorf("remote: pairing lifetime %s is outside (0, %s]", l.PairingTTL, MaxPairingTTL)
	case l.DeviceTTL <= 0 || l.DeviceTTL > MaxDeviceTTL:
		return fmt.Errorf("remote: device lifetime %s is outside (0, %s]", l.DeviceTTL, MaxDeviceTTL)
	case l.RenewAfter <= 0 || l.RenewAfter >= l.DeviceTTL:
		return fmt.Errorf("remote: renew-after %s must be positive and less than the device lifetime %s", l.RenewAfter, l.DeviceTTL)
	case l.MaxConnections < 1 || l.MaxConnections > MaxMaxConnections:
		return fmt.Errorf("remote: max connections %d is outside 1–%d", l.MaxConnections, MaxMaxConnections)
	case l.AuthorizeRate < 1 || l.AuthorizeRate > MaxAuthorizeRate:
		return fmt.Errorf("remote: authorize rate %d/min is outside 1–%d", l.AuthorizeRate, MaxAuthorizeRate)
	case l.MaxPeerCounters < 1:
		return fmt.Errorf("remote: max peer counters %d must be at least 1", l.MaxPeerCounters)
	}
	return nil
}

// peerLimiter is the authorize route's rate limit: one token bucket
// (golang.org/x/time/rate) per peer IP, refilled at perMinute/60 a second
// with a burst of perMinute but at most MaxAuthorizeBurst; at most
// maxPeers buckets, further peers sharing one overflow bucket; and a
// global bucket 16 times a peer's, rate and burst. A
// bucket is forgotten only when it is full again (so forgetting it loses
// nothing): new peers never evict a counter in use.
type peerLimiter struct {
	perMinute int
	maxPeers  int
	now       func() time.Time

	mu       sync.Mutex
	peers    map[netip.Addr]*rate.Limiter
	overflow *rate.Limiter
	global   *rate.Limiter
}

func newPeerLimiter(perMinute, maxPeers int, now func() time.Time) *peerLimiter {
	return &peerLimiter{
		perMinute: perMinute, maxPeers: maxPeers, now: now,
		peers:    make(map[netip.Addr]*rate.Limiter),
		overflow: newBucket(perMinute, 1),
		global:   newBucket(perMinute, globalAuthorizeMultiplier),
	}
}

// newBucket is a bucket of times a peer's rate and burst.
func newBucket(perMinute, times int) *rate.Limiter {
	return rate.NewLimiter(rate.Limit(float64(perMinute*times)/60), min(perMinute, MaxAuthorizeBurst)*times)
}

// peerAddr is the limiter's key of a RemoteAddr: its IP (never a forwarding
// header); IPv6 peers share a budget per /64, as one host owns the /64.
func peerAddr(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// allow charges one exchange to remote's bucket and the global one; when
// refused it charges neither and returns how long until both would allow
// one.
func (l *peerLimiter) allow(remote string) (bool, time.Duration) {
	now := l.now()
	key := peerAddr(remote)
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.peers[key]
	if b == nil {
		if len(l.peers) >= l.maxPeers {
			l.forgetFull(now)
		}
		if len(l.peers) < l.maxPeers {
			b = newBucket(l.perMinute, 1)
			l.peers[key] = b
		} else {
			b = l.overflow
		}
	}
	rp, rg := b.ReserveN(now, 1), l.global.ReserveN(now, 1)
	if d := max(rp.DelayFrom(now), rg.DelayFrom(now)); d > 0 {
		rg.CancelAt(now)
		rp.CancelAt(now)
		return false, d
	}
	return true, 0
}

// forgetFull drops the buckets that have refilled completely.
func (l *peerLimiter) forgetFull(now time.Time) {
	for k, b := range l.peers {
		if b.TokensAt(now) >= float64(b.Burst()) {
			delete(l.peers, k)
		}
	}
}

// counters returns how many per-peer buckets are kept.
func (l *peerLimiter) counters() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.peers)
}

// retryAfter is the Retry-After value of d: whole seconds, at least 1.
func retryAfter(d time.Duration) string {
	return fmt.Sprint(max(1, int(math.Ceil(d.Seconds()))))
}
