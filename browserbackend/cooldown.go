package browserbackend

import (
	"sync"
	"time"
)

// DefaultMaxCooldowns bounds a Cooldowns whose Max is zero.
const DefaultMaxCooldowns = 4096

// Cooldowns records until when keyed candidates are skipped. Keys are
// chosen by providers (Candidate.CooldownKey), e.g. one per actor. It is
// bounded: at Max entries, expired entries are pruned and, if still full, the
// entry expiring soonest is evicted. Safe for concurrent use; the zero value
// uses time.Now and DefaultMaxCooldowns.
type Cooldowns struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Max bounds the number of keys; 0 means DefaultMaxCooldowns.
	Max int

	mu    sync.Mutex
	until map[string]time.Time
}

func (c *Cooldowns) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Record starts (or extends) a cooldown of d for key. d <= 0 does nothing.
func (c *Cooldowns) Record(key string, d time.Duration) {
	if d <= 0 || key == "" {
		return
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.until == nil {
		c.until = make(map[string]time.Time)
	}
	max := c.Max
	if max <= 0 {
		max = DefaultMaxCooldowns
	}
	if _, ok := c.until[key]; !ok && len(c.until) >= max {
		var soonest string
		for k, t := range c.until {
			if !t.After(now) {
				delete(c.until, k)
				continue
			}
			if soonest == "" || t.Before(c.until[soonest]) {
				soonest = k
			}
		}
		if len(c.until) >= max {
			delete(c.until, soonest)
		}
	}
	c.until[key] = now.Add(d)
}

// Remaining returns how long key stays cooled down, 0 when it is not.
func (c *Cooldowns) Remaining(key string) time.Duration {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.until[key]
	if !ok {
		return 0
	}
	if !t.After(now) {
		delete(c.until, key)
		return 0
	}
	return t.Sub(now)
}

// Active reports whether key is cooled down now.
func (c *Cooldowns) Active(key string) bool { return c.Remaining(key) > 0 }

// Clear removes key's cooldown.
func (c *Cooldowns) Clear(key string) {
	c.mu.Lock()
	delete(c.until, key)
	c.mu.Unlock()
}

// Len reports how many keys are held (expired ones may still count until
// pruned).
func (c *Cooldowns) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.until)
}
