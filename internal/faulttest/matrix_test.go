//go:build linux

package faulttest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// The browser process SIGKILLed under an in-flight command: the command
// fails with a transport error (a dead browser fails over), not at its
// deadline; the next invocation recovers once a browser is back.
func TestFaultBrowserKilled(t *testing.T) {
	eachBackend(t, all, func(t *testing.T, r *rig, s *site) {
		_, ctx, done := inFlight(t, r, s, "conv")
		r.killBrowser(t)
		e := endedByFault(t, ctx, <-done)
		assert.Equal(t, bb.ClassTransport, e.Class)
		r.restart(t)
		recovers(t, r, s, "conv")
	})
}

// The page's renderer SIGKILLed (a crashed tab) under an in-flight command:
// the command fails at once as transport (target_crashed where the backend
// has its own code), not at its deadline; the conversation's next
// invocation works (a fresh page on local, the revived tab elsewhere).
func TestFaultRendererCrashed(t *testing.T) {
	eachBackend(t, all, func(t *testing.T, r *rig, s *site) {
		_, ctx, done := inFlight(t, r, s, "conv")
		require.NotZero(t, chromiumtest.Signal(chromiumtest.PageRenderers(r.profile()), unix.SIGKILL), "a page renderer runs")
		e := endedByFault(t, ctx, <-done)
		assert.Equal(t, bb.ClassTransport, e.Class, "the tab gave no answer")
		if r.kind == bb.KindLocal || r.kind == bb.KindCDPInspect {
			// The hub clients report it with the wire's transport_error.
			assert.Equal(t, bb.CodeTargetCrashed, e.Code)
		}
		recovers(t, r, s, "conv")
	})
}

// The Playwright driver SIGKILLed (local only): transport, then the next
// invocation relaunches.
func TestFaultDriverKilled(t *testing.T) {
	eachBackend(t, localOnly, func(t *testing.T, r *rig, s *site) {
		_, ctx, done := inFlight(t, r, s, "conv")
		r.killDriver(t)
		e := endedByFault(t, ctx, <-done)
		assert.Equal(t, bb.ClassTransport, e.Class)
		recovers(t, r, s, "conv")
	})
}

// Every process of the browser SIGSTOPped (a stalled socket): a command
// can only end at its deadline, with code timeout (outcome unknown); after
// SIGCONT the next invocation works.
func TestFaultBrowserStalledAndResumed(t *testing.T) {
	eachBackend(t, all, func(t *testing.T, r *rig, s *site) {
		ctx, cancel := context.WithTimeout(context.Background(), longDeadline)
		defer cancel()
		c := openPage(t, ctx, r, s, "conv")
		p, ok := chromiumtest.BrowserProcess(r.profile())
		require.True(t, ok)
		group := chromiumtest.Group(p.PGID)
		chromiumtest.Signal(group, unix.SIGSTOP)
		resumed := false
		resume := func() {
			if !resumed {
				resumed = true
				chromiumtest.Signal(group, unix.SIGCONT)
			}
		}
		t.Cleanup(resume)

		sctx, scancel := context.WithTimeout(ctx, stallDeadline)
		defer scancel()
		_, err := evaluate(sctx, c, "1+1")
		require.Error(t, err)
		// The outcome is unknown: code timeout, dispatched, with
		// diagnostics. Local, cdp-inspect and the extension say class
		// timeout; on the bridge, whichever deadline passes first decides:
		// the caller's (timeout) or the bridge's own, which it reports with
		// the wire code timeout, a transport error by PXY-6.
		assert.ErrorIs(t, err, &bb.Error{Code: bb.CodeTimeout}, "a stalled browser may still answer: outcome unknown")
		var e *bb.Error
		if assert.ErrorAs(t, err, &e) {
			assert.True(t, e.Dispatched, "the command may have reached the browser")
			assert.NotNil(t, e.Diagnostics, "a timeout says what the backend was doing")
		}
		resume()
		recovers(t, r, s, "conv")
	})
}

// The hub client (bridge, extension) vanishes under an in-flight command:
// the command fails at once as transport; the next invocation works once a
// client is back.
func TestFaultClientVanished(t *testing.T) {
	eachBackend(t, hubKinds, func(t *testing.T, r *rig, s *site) {
		_, ctx, done := inFlight(t, r, s, "conv")
		r.vanish(t)
		e := endedByFault(t, ctx, <-done)
		assert.Equal(t, bb.ClassTransport, e.Class)
		r.reappear(t)
		recovers(t, r, s, "conv")
	})
}

// An answer above the transport's cap (cdp-inspect's read limit, the result
// routes' body cap) fails at once with a typed error instead of waiting for
// the deadline; local has no cap and answers. The next invocation works.
func TestFaultOversizeAnswer(t *testing.T) {
	eachBackend(t, all, func(t *testing.T, r *rig, s *site) {
		ctx, cancel := context.WithTimeout(context.Background(), longDeadline)
		defer cancel()
		c := openPage(t, ctx, r, s, "conv")
		got, err := evaluate(ctx, c, `"x".repeat(2 * 1024 * 1024)`)
		if !r.capped {
			require.NoError(t, err)
			assert.Len(t, got, 2*1024*1024+2)
		} else {
			endedByFault(t, ctx, err)
		}
		recovers(t, r, s, "conv")
	})
}

// Close under an in-flight command ends it at once as closed; a command
// after Close fails with closed without reaching a browser.
func TestFaultCommandAfterClose(t *testing.T) {
	eachBackend(t, all, func(t *testing.T, r *rig, s *site) {
		c, ctx, done := inFlight(t, r, s, "conv")
		require.NoError(t, c.Close())
		err := <-done
		endedByFault(t, ctx, err)
		assert.ErrorIs(t, err, bb.ErrClosed)
		_, err = c.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: evalParams("1", false)})
		assert.ErrorIs(t, err, bb.ErrClosed)
		recovers(t, r, s, "conv")
	})
}
