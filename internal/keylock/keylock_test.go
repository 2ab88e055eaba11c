package keylock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
)

// entries is how many keys have an entry (held or waited for).
func (l *Locks[K]) entries() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}

func mustLock[K comparable](t *testing.T, l *Locks[K], key K) func() {
	t.Helper()
	unlock, err := l.Lock(t.Context(), key)
	if err != nil {
		t.Fatalf("Lock(%v): %v", key, err)
	}
	return unlock
}

func TestSameKeyWaitsForTheHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l Locks[string]
		unlock := mustLock(t, &l, "conv")
		got := make(chan func())
		go func() {
			unlock, err := l.Lock(context.Background(), "conv")
			if err != nil {
				t.Error(err)
			}
			got <- unlock
		}()
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("a second locker of the key got the lock while it was held")
		default:
		}
		unlock()
		if second := <-got; second != nil {
			second()
		}
		if n := l.entries(); n != 0 {
			t.Errorf("%d entries after every unlock, want 0", n)
		}
	})
}

func TestDifferentKeysDoNotBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l Locks[string]
		a := mustLock(t, &l, "a")
		b := mustLock(t, &l, "b") // would deadlock the bubble if it waited for "a"
		if n := l.entries(); n != 2 {
			t.Errorf("%d entries with two keys held, want 2", n)
		}
		b()
		a()
		if n := l.entries(); n != 0 {
			t.Errorf("%d entries after every unlock, want 0", n)
		}
	})
}

func TestCancelledWaiterGivesUpAndLeavesNoEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l Locks[int]
		unlock := mustLock(t, &l, 1)
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error)
		go func() {
			_, err := l.Lock(ctx, 1)
			errc <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Lock = %v, want context.Canceled", err)
		}
		unlock()
		if n := l.entries(); n != 0 {
			t.Errorf("%d entries after the holder left and the waiter gave up, want 0", n)
		}
		mustLock(t, &l, 1)() // the key is free again
	})
}

func TestDoneContextFailsEvenWhenFree(t *testing.T) {
	var l Locks[string]
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if unlock, err := l.Lock(ctx, "k"); !errors.Is(err, context.Canceled) || unlock != nil {
		t.Fatalf("Lock with a done context = (%v, %v), want (nil, context.Canceled)", unlock != nil, err)
	}
	if n := l.entries(); n != 0 {
		t.Errorf("%d entries after a failed Lock, want 0", n)
	}
}

// Many lockers of a few keys: each key's critical sections never overlap
// (a plain counter per key, checked by -race and by its total), and the
// set is empty at the end.
func TestConcurrentLockersAreSerialisedPerKey(t *testing.T) {
	var l Locks[string]
	const keys, lockers, rounds = 4, 16, 50
	counts := make([]int, keys) // each guarded by its key's lock only
	var wg sync.WaitGroup
	for i := range lockers {
		wg.Go(func() {
			for r := range rounds {
				k := (i + r) % keys
				unlock, err := l.Lock(t.Context(), fmt.Sprint("key-", k))
				if err != nil {
					t.Error(err)
					return
				}
				counts[k]++
				unlock()
			}
		})
	}
	wg.Wait()
	total := 0
	for _, c := range counts {
		total += c
	}
	if total != lockers*rounds {
		t.Errorf("%d increments, want %d", total, lockers*rounds)
	}
	if n := l.entries(); n != 0 {
		t.Errorf("%d entries after every unlock, want 0", n)
	}
}
