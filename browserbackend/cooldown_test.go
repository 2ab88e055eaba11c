package browserbackend_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bb "github.com/browserchain/browserchain/browserbackend"
	bbt "github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
)

// SEL-6: cooldowns. Every test runs in a synctest bubble, so time.Now (the
// Cooldowns clock) is virtual and the windows are exact.

var macTurn = bb.Invocation{InterfaceID: hostproxytest.InterfaceMacOS}

const skipCooldownMsg = "candidate skipped: cooldown active"

func unreachable() error { return bbt.TransportErr(bb.CodeUnreachable) }

// assertDesktopAutoCooledDown checks that the next macos turn skips
// cdp-inspect: visible in the plan, the attempt list and the log.
func assertDesktopAutoCooledDown(t *testing.T, r *rig) {
	t.Helper()
	assert.Equal(t, 30*time.Second, r.cool.Remaining(cdpinspect.CooldownKey))
	assert.Equal(t, kinds(bb.KindLocal), r.plan(macTurn))

	builds := len(r.farm.Builds())
	c, err := r.send(t, macTurn)
	require.NoError(t, err)
	assert.Equal(t, bb.KindLocal, c.Kind())
	assert.Contains(t, summary(c.Attempts()), "cdp-inspect@candidate_selection[cooldown]")
	assert.Equal(t, kinds(bb.KindLocal), r.farm.BuiltKinds()[builds:], "cdp-inspect is not built while cooling down")
	recs := r.logs.Find(skipCooldownMsg)
	require.Len(t, recs, 1)
	assert.Equal(t, bb.KindCDPInspect, recs[0].Attrs["candidateKind"])
}

func TestDesktopAutoCooldownRecordedAfterConstructionFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		r.farm.FailBuild(bb.KindCDPInspect, unreachable())
		r.build(bb.Options{})

		c, err := r.send(t, macTurn)
		require.NoError(t, err)
		assert.Equal(t, bb.KindLocal, c.Kind())
		assert.Equal(t, []string{"cdp-inspect@construction[unreachable]", "local@success"}, tried(c.Attempts()))
		assertDesktopAutoCooledDown(t, r)
	})
}

func TestDesktopAutoCooldownRecordedAfterSendFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		r.farm.FailSend(bb.KindCDPInspect, unreachable())
		r.build(bb.Options{})

		c, err := r.send(t, macTurn)
		require.NoError(t, err)
		assert.Equal(t, []string{"cdp-inspect@send[unreachable]", "local@success"}, tried(c.Attempts()))
		assertDesktopAutoCooledDown(t, r)
	})
}

func TestDesktopAutoCooldownRecordedWhenItWasTheLastCandidate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		r.farm.FailBuild(bb.KindCDPInspect, unreachable())
		r.build(bb.Options{Providers: []bb.Provider{r.ref().Extension(), r.ref().CDPInspect()}})

		_, err := r.send(t, macTurn)
		var se *bb.SelectionError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, 30*time.Second, r.cool.Remaining(cdpinspect.CooldownKey))
		assert.Empty(t, r.plan(macTurn), "the only remaining candidate is cooling down")
	})
}

func TestDesktopAutoCooldownRecordedAfterStickyTransportFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		r.farm.OnBuild(bb.KindCDPInspect, func(string) (*bbt.Backend, error) {
			return bbt.NewBackend(bb.KindCDPInspect, nil).FailOn(2, unreachable()), nil
		})
		r.build(bb.Options{})

		c, err := r.send(t, macTurn)
		require.NoError(t, err)
		require.Equal(t, bb.KindCDPInspect, c.Kind())
		assert.False(t, r.cool.Active(cdpinspect.CooldownKey))

		// The browser goes away after the walk: the sticky backend's error
		// is returned as it is, and the cooldown is still recorded.
		_, err = c.Send(context.Background(), evalCommand)
		require.ErrorIs(t, err, bb.ErrUnreachable)
		assert.Equal(t, bb.KindCDPInspect, c.Kind(), "still sticky")
		assert.Equal(t, 30*time.Second, r.cool.Remaining(cdpinspect.CooldownKey))
		assert.Len(t, r.logs.Find("cooldown recorded after transport failure"), 1)
	})
}

func TestDesktopAutoCooldownNotRecordedWhenOnlyASessionWentAway(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		r.farm.OnBuild(bb.KindCDPInspect, func(string) (*bbt.Backend, error) {
			return bbt.NewBackend(bb.KindCDPInspect, nil).FailOn(2, bbt.TransportErr(bb.CodeSessionNotFound)), nil
		})
		r.build(bb.Options{})

		c, err := r.send(t, macTurn)
		require.NoError(t, err)
		_, err = c.Send(context.Background(), evalCommand)
		require.ErrorIs(t, err, bb.ErrSessionNotFound)
		assert.False(t, r.cool.Active(cdpinspect.CooldownKey), "the tab closed, the browser is alive")
		assert.Empty(t, r.logs.Find("cooldown recorded after transport failure"))
	})
}

func TestDesktopAutoCooldownNotRecordedForProtocolError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		r.farm.FailSend(bb.KindCDPInspect, bbt.ProtocolErr(-32000, "boom"))
		r.build(bb.Options{})
		_, err := r.send(t, macTurn)
		require.ErrorIs(t, err, bb.ErrProtocol)
		assert.False(t, r.cool.Active(cdpinspect.CooldownKey))
	})
}

func TestDesktopAutoCandidateIncludedAgainAfterCooldownExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		r.farm.FailBuild(bb.KindCDPInspect, unreachable())
		r.build(bb.Options{})
		_, err := r.send(t, macTurn)
		require.NoError(t, err)

		time.Sleep(30*time.Second - time.Millisecond) // virtual time
		assert.Equal(t, kinds(bb.KindLocal), r.plan(macTurn), "still cooling down 1 ms before expiry")
		time.Sleep(time.Millisecond)
		assert.Equal(t, kinds(bb.KindCDPInspect, bb.KindLocal), r.plan(macTurn), "included again at expiry")

		r.farm.OnBuild(bb.KindCDPInspect, nil)
		c, err := r.send(t, macTurn)
		require.NoError(t, err)
		assert.Equal(t, bb.KindCDPInspect, c.Kind())
	})
}

func TestCooldownsClockIsInjectable(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cool := &bb.Cooldowns{Now: func() time.Time { return now }}
	r := newRig()
	r.farm.FailBuild(bb.KindCDPInspect, unreachable())
	r.build(bb.Options{Cooldowns: cool})
	_, err := r.send(t, macTurn)
	require.NoError(t, err)
	assert.Equal(t, kinds(bb.KindLocal), r.plan(macTurn))
	now = now.Add(30 * time.Second)
	assert.Equal(t, kinds(bb.KindCDPInspect, bb.KindLocal), r.plan(macTurn))
}

func TestCooldownNeverRecordedForExplicitlyEnabledCDPInspect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		r.cfg.Enabled = true
		r.farm.FailBuild(bb.KindCDPInspect, unreachable())
		r.build(bb.Options{})
		for range 2 {
			c, err := r.send(t, macTurn)
			require.NoError(t, err)
			assert.Equal(t, []string{"cdp-inspect@construction[unreachable]", "local@success"}, tried(c.Attempts()))
		}
		assert.Zero(t, r.cool.Len())
		assert.Zero(t, countMsg(r.logs, "cooldown recorded after transport failure"))
	})
}

func TestCooldownNeverRecordedForPinnedCDPInspect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		r.farm.FailBuild(bb.KindCDPInspect, unreachable())
		r.build(bb.Options{})
		inv := macTurn
		inv.Mode = bb.Mode("cdp-inspect")
		_, err := r.send(t, inv)
		require.ErrorIs(t, err, bb.ErrTransport)
		assert.Zero(t, r.cool.Len())
		assert.Equal(t, kinds(bb.KindCDPInspect, bb.KindLocal), r.plan(macTurn), "auto still includes desktop-auto")
	})
}

func TestCooldownMsZeroDisablesDesktopAutoCooldown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		r.cfg.DesktopAuto.CooldownMs = 0
		r.farm.FailBuild(bb.KindCDPInspect, unreachable())
		r.build(bb.Options{})
		_, err := r.send(t, macTurn)
		require.NoError(t, err)
		assert.Zero(t, r.cool.Len())
		assert.Equal(t, kinds(bb.KindCDPInspect, bb.KindLocal), r.plan(macTurn))
	})
}

// SEL-6b: host-bridge cooldown.

func TestHostBridgeCooldownIsPerActor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(aliceMac, bobMac)
		r.farm.OnBuild(bb.KindHostBridge, func(clientID string) (*bbt.Backend, error) {
			if clientID == aliceMac.ID {
				return nil, unreachable()
			}
			return bbt.NewBackend(bb.KindHostBridge, nil), nil
		})
		r.build(bb.Options{})
		aliceInv := bb.Invocation{InterfaceID: "web", ActorPrincipalID: alice}
		bobInv := bb.Invocation{InterfaceID: "web", ActorPrincipalID: bob}

		c, err := r.send(t, aliceInv)
		require.NoError(t, err)
		assert.Equal(t, bb.KindLocal, c.Kind())
		assert.Equal(t, 30*time.Second, r.cool.Remaining(hostproxy.HostBridgeCooldownKey(alice)))
		assert.False(t, r.cool.Active(hostproxy.HostBridgeCooldownKey(bob)))

		assert.Equal(t, kinds(bb.KindLocal), r.plan(aliceInv), "alice's bridge is cooling down")
		assert.Equal(t, kinds(bb.KindHostBridge, bb.KindLocal), r.plan(bobInv), "bob is not affected")
		c, err = r.send(t, bobInv)
		require.NoError(t, err)
		assert.Equal(t, bb.KindHostBridge, c.Kind())

		c, err = r.send(t, aliceInv)
		require.NoError(t, err)
		assert.Contains(t, summary(c.Attempts()), "host-bridge@candidate_selection[cooldown]")
		recs := r.logs.Find(skipCooldownMsg)
		require.Len(t, recs, 1)
		assert.Equal(t, bb.KindHostBridge, recs[0].Attrs["candidateKind"])

		time.Sleep(30 * time.Second)
		assert.Equal(t, kinds(bb.KindHostBridge, bb.KindLocal), r.plan(aliceInv), "included again after expiry")
	})
}

func TestHostBridgeCooldownUsesDefaultKeyWhenActorUnknown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(hostproxytest.HubClient{ID: "mac-anon", InterfaceID: hostproxytest.InterfaceMacOS})
		r.farm.FailSend(bb.KindHostBridge, unreachable())
		r.build(bb.Options{})
		_, err := r.send(t, bb.Invocation{InterfaceID: "web"})
		require.NoError(t, err)
		assert.Equal(t, "host-bridge:__default__", hostproxy.HostBridgeCooldownKey(""))
		assert.True(t, r.cool.Active(hostproxy.HostBridgeCooldownKey(bb.DefaultActorKey)))
		assert.Equal(t, 1, r.cool.Len())
	})
}

func TestHostBridgeCooldownIsIndependentOfDesktopAuto(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(aliceMac)
		r.farm.FailSend(bb.KindHostBridge, unreachable())
		r.build(bb.Options{})
		inv := bb.Invocation{InterfaceID: hostproxytest.InterfaceMacOS, ActorPrincipalID: alice}

		c, err := r.send(t, inv)
		require.NoError(t, err)
		assert.Equal(t, bb.KindCDPInspect, c.Kind(), "the bridge failure does not cool down desktop-auto")
		assert.True(t, r.cool.Active(hostproxy.HostBridgeCooldownKey(alice)))
		assert.False(t, r.cool.Active(cdpinspect.CooldownKey))
		assert.Equal(t, kinds(bb.KindCDPInspect, bb.KindLocal), r.plan(inv))

		// And the other way round: a desktop-auto cooldown leaves the bridge in.
		r.cool.Clear(hostproxy.HostBridgeCooldownKey(alice))
		r.cool.Record(cdpinspect.CooldownKey, time.Minute)
		assert.Equal(t, kinds(bb.KindHostBridge, bb.KindLocal), r.plan(inv))
	})
}

func TestHostBridgeCooldownWindowCanBeSetApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(aliceMac)
		r.farm.FailSend(bb.KindHostBridge, unreachable())
		ref := r.ref()
		ref.HostBridgeCooldown = 5 * time.Second
		r.build(bb.Options{Providers: ref.Providers()})
		_, err := r.send(t, bb.Invocation{InterfaceID: "web", ActorPrincipalID: alice})
		require.NoError(t, err)
		assert.Equal(t, 5*time.Second, r.cool.Remaining(hostproxy.HostBridgeCooldownKey(alice)))
	})
}

func TestExtensionCandidateIsNeverCooledDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(aliceExt)
		r.farm.FailSend(bb.KindExtension, unreachable())
		r.build(bb.Options{})
		inv := bb.Invocation{InterfaceID: "web", ActorPrincipalID: alice}
		_, err := r.send(t, inv)
		require.NoError(t, err)
		assert.Zero(t, r.cool.Len())
		assert.Equal(t, kinds(bb.KindExtension, bb.KindLocal), r.plan(inv))
	})
}

func TestHostBridgeCooldownMapStaysBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const max = 8
		r := newRig()
		r.farm.FailSend(bb.KindHostBridge, unreachable())
		r.build(bb.Options{Cooldowns: &bb.Cooldowns{Max: max}})
		for i := range 50 {
			actor := "actor-" + string(rune('A'+i%26)) + string(rune('a'+i/26))
			r.roster.Connect(hostproxytest.HubClient{ID: "mac-" + actor, InterfaceID: hostproxytest.InterfaceMacOS, Actor: actor})
			_, err := r.send(t, bb.Invocation{InterfaceID: "web", ActorPrincipalID: actor})
			require.NoError(t, err)
			assert.True(t, r.cool.Active(hostproxy.HostBridgeCooldownKey(actor)), "the newest actor's cooldown is kept")
			assert.LessOrEqual(t, r.cool.Len(), max)
			time.Sleep(time.Second)
		}
		assert.Equal(t, max, r.cool.Len())
	})
}

func TestCooldownsEvictsTheEntryExpiringSoonestWhenFull(t *testing.T) {
	now := time.Unix(0, 0)
	c := &bb.Cooldowns{Max: 2, Now: func() time.Time { return now }}
	c.Record("a", 10*time.Second)
	c.Record("b", 5*time.Second)
	c.Record("c", 20*time.Second)
	assert.Equal(t, 2, c.Len())
	assert.False(t, c.Active("b"), "b expires soonest and is evicted")
	assert.True(t, c.Active("a"))
	assert.True(t, c.Active("c"))

	now = now.Add(15 * time.Second) // a expired: pruned before evicting a live one
	c.Record("d", time.Second)
	assert.True(t, c.Active("c"))
	assert.True(t, c.Active("d"))
}

// Issue 10: a failing desktop client of an actor that has another is cooled
// down alone; the healthy sibling serves the next invocation, and only the
// actor's last usable client puts the whole actor on cooldown.
func TestFailingDesktopClientIsSkippedBeforeTheActorCoolsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bad := hostproxytest.HubClient{ID: "mac-bad", InterfaceID: hostproxytest.InterfaceMacOS, Actor: alice}
		good := hostproxytest.HubClient{ID: "mac-good", InterfaceID: hostproxytest.InterfaceMacOS, Actor: alice}
		r := newRig(bad, good)
		goodFails := false
		r.farm.OnBuild(bb.KindHostBridge, func(clientID string) (*bbt.Backend, error) {
			if clientID == bad.ID || goodFails {
				return nil, &bb.Error{Class: bb.ClassTransport, Code: bb.CodeNonLoopback, Message: "8.8.8.8 is not loopback"}
			}
			return bbt.NewBackend(bb.KindHostBridge, nil), nil
		})
		r.build(bb.Options{})
		inv := bb.Invocation{InterfaceID: "web", ActorPrincipalID: alice}

		c, err := r.send(t, inv)
		require.NoError(t, err)
		assert.Equal(t, bb.KindLocal, c.Kind(), "the bad bridge failed over")
		assert.True(t, r.cool.Active(hostproxy.HostBridgeClientCooldownKey(bad.ID)), "the bad client cools down alone")
		assert.False(t, r.cool.Active(hostproxy.HostBridgeCooldownKey(alice)), "the actor does not")

		c, err = r.send(t, inv)
		require.NoError(t, err)
		assert.Equal(t, bb.KindHostBridge, c.Kind(), "the healthy sibling serves")
		builds := r.farm.Builds()
		assert.Equal(t, good.ID, builds[len(builds)-1].ClientID)

		// The last usable client failing cools the whole actor down.
		goodFails = true
		c, err = r.send(t, inv)
		require.NoError(t, err)
		assert.Equal(t, bb.KindLocal, c.Kind())
		assert.True(t, r.cool.Active(hostproxy.HostBridgeCooldownKey(alice)))
		assert.Equal(t, kinds(bb.KindLocal), r.plan(inv))
	})
}
