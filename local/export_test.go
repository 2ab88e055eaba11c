package local

import "time"

// The package's tests change a Browser's tuning through these, before its
// first use.

// setClock makes now b's clock.
func (b *Browser) setClock(now func() time.Time) { b.tune.now = now }

// setCloseTimeout bounds b's graceful context close by d.
func (b *Browser) setCloseTimeout(d time.Duration) { b.tune.closeTimeout = d }

// setPageOpening makes attempt one attempt of b's page opening, hedged
// after hedge.
func (b *Browser) setPageOpening(attempt func(*state) openedPage, hedge time.Duration) {
	b.tune.openAttempt, b.tune.pageOpenHedge = attempt, hedge
}
