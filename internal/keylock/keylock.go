// Package keylock holds one lock per key, made on first use and removed when
// nobody holds or waits for it, so that the set stays as small as the keys
// in use (a conversation's tab choice, for example, serialised per
// conversation without a map that grows with every conversation ever seen).
package keylock

import (
	"context"
	"sync"
)

// Locks is a set of per-key mutual-exclusion locks. The zero value is ready;
// it is safe for concurrent use and must not be copied after first use.
type Locks[K comparable] struct {
	mu sync.Mutex
	m  map[K]*entry
}

// entry is one key's lock: held while token is full; refs counts its holder
// and waiters, and the entry leaves the map when it falls to zero.
type entry struct {
	token chan struct{}
	refs  int
}

// Lock waits until it holds key's lock, or ctx is done. It returns the func
// that releases the lock (call it exactly once), or ctx.Err() without the
// lock: a ctx already done fails even when the lock is free. Waiters are
// not served in any particular order.
func (l *Locks[K]) Lock(ctx context.Context, key K) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	if l.m == nil {
		l.m = make(map[K]*entry)
	}
	e := l.m[key]
	if e == nil {
		e = &entry{token: make(chan struct{}, 1)}
		l.m[key] = e
	}
	e.refs++
	l.mu.Unlock()
	select {
	case e.token <- struct{}{}:
		return func() { <-e.token; l.drop(key, e) }, nil
	case <-ctx.Done():
		l.drop(key, e)
		return nil, ctx.Err()
	}
}

// drop lets go of one reference to key's entry.
func (l *Locks[K]) drop(key K, e *entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.refs--; e.refs == 0 {
		delete(l.m, key)
	}
}
