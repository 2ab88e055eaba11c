package browserbackend_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bb "github.com/browserchain/browserchain/browserbackend"
	bbt "github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
)

// SEL-3: the candidate list follows the live roster and the turn's interface.

func TestExtensionConnectedForActorIsFirstCandidateThenCDPInspectThenLocal(t *testing.T) {
	r := newRig(aliceExt).build(bb.Options{})
	inv := bb.Invocation{ConversationID: "c1", InterfaceID: hostproxytest.InterfaceMacOS, ActorPrincipalID: alice}

	assert.Equal(t, kinds(bb.KindExtension, bb.KindCDPInspect, bb.KindLocal), r.plan(inv))

	c, err := r.send(t, inv)
	require.NoError(t, err)
	assert.Equal(t, bb.KindExtension, c.Kind())
	assert.Equal(t, []bbt.BuildRecord{{Kind: bb.KindExtension, ClientID: aliceExt.ID}}, r.farm.Builds(),
		"only the first candidate is built when it answers")
}

func TestLocalIsAlwaysTheLastCandidate(t *testing.T) {
	cases := []struct {
		name    string
		clients []hostproxytest.HubClient
		iface   string
		enabled bool
		want    []bb.Kind
	}{
		{"no clients web turn", nil, "web", false, kinds(bb.KindLocal)},
		{"no clients macos turn", nil, hostproxytest.InterfaceMacOS, false, kinds(bb.KindCDPInspect, bb.KindLocal)},
		{"extension web turn", []hostproxytest.HubClient{aliceExt}, "web", false, kinds(bb.KindExtension, bb.KindLocal)},
		{"bridge macos turn", []hostproxytest.HubClient{aliceMac}, hostproxytest.InterfaceMacOS, false, kinds(bb.KindHostBridge, bb.KindCDPInspect, bb.KindLocal)},
		{"extension and cdpInspect.enabled", []hostproxytest.HubClient{aliceExt, aliceMac}, "cli", true, kinds(bb.KindExtension, bb.KindCDPInspect, bb.KindLocal)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(tc.clients...)
			r.cfg.Enabled = tc.enabled
			r.build(bb.Options{})
			got := r.plan(bb.Invocation{InterfaceID: tc.iface, ActorPrincipalID: alice})
			assert.Equal(t, tc.want, got)
			assert.Equal(t, bb.KindLocal, got[len(got)-1])
		})
	}
}

func TestBridgeOnlyActorGetsHostBridgeCandidate(t *testing.T) {
	r := newRig(aliceMac).build(bb.Options{})
	inv := bb.Invocation{InterfaceID: "web", ActorPrincipalID: alice}
	assert.Equal(t, kinds(bb.KindHostBridge, bb.KindLocal), r.plan(inv))

	c, err := r.send(t, inv)
	require.NoError(t, err)
	assert.Equal(t, bb.KindHostBridge, c.Kind())
	assert.Equal(t, []bbt.BuildRecord{{Kind: bb.KindHostBridge, ClientID: aliceMac.ID}}, r.farm.Builds())
}

func TestExtensionAndHostBridgeAreNeverBothInOneList(t *testing.T) {
	r := newRig(aliceExt, aliceMac).build(bb.Options{})
	for _, iface := range []string{hostproxytest.InterfaceMacOS, hostproxytest.InterfaceChromeExtension, "web", ""} {
		p := r.sel.Plan(bb.Invocation{InterfaceID: iface, ActorPrincipalID: alice})
		assert.Contains(t, p.Kinds(), bb.KindExtension, iface)
		assert.NotContains(t, p.Kinds(), bb.KindHostBridge, iface)
		var skippedBridge bool
		for _, a := range p.Skipped {
			if a.Kind == bb.KindHostBridge {
				skippedBridge = true
				assert.Equal(t, hostproxy.CodeExtensionConnected, a.Code)
			}
		}
		assert.True(t, skippedBridge, "the host-bridge skip is recorded with its reason")
	}
}

func TestAnotherActorsExtensionGivesNoExtensionCandidate(t *testing.T) {
	r := newRig(bobExt, bobMac).build(bb.Options{})
	inv := bb.Invocation{InterfaceID: "web", ActorPrincipalID: alice}
	assert.Equal(t, kinds(bb.KindLocal), r.plan(inv))

	c, err := r.send(t, inv)
	require.NoError(t, err)
	assert.Equal(t, bb.KindLocal, c.Kind())
	assert.Equal(t, kinds(bb.KindLocal), r.farm.BuiltKinds(), "bob's clients are never built for alice")
}

func TestActorWithNoClientsGetsNeitherExtensionNorHostBridge(t *testing.T) {
	r := newRig(bobExt, aliceMac).build(bb.Options{})
	p := r.sel.Plan(bb.Invocation{InterfaceID: hostproxytest.InterfaceMacOS, ActorPrincipalID: "actor-carol"})
	assert.Equal(t, kinds(bb.KindCDPInspect, bb.KindLocal), p.Kinds())
	codes := map[bb.Kind]string{}
	for _, a := range p.Skipped {
		codes[a.Kind] = a.Code
	}
	assert.Equal(t, map[bb.Kind]string{bb.KindExtension: bb.CodeNoClient, bb.KindHostBridge: bb.CodeNoClient}, codes)
}

func TestMacosTurnAddsCDPInspectThroughDesktopAuto(t *testing.T) {
	r := newRig().build(bb.Options{})
	p := r.sel.Plan(bb.Invocation{InterfaceID: hostproxytest.InterfaceMacOS})
	require.Equal(t, kinds(bb.KindCDPInspect, bb.KindLocal), p.Kinds())
	c := p.Candidates[0]
	assert.Equal(t, cdpinspect.ReasonDesktopAuto, c.Reason)
	assert.Equal(t, cdpinspect.CooldownKey, c.CooldownKey)
	assert.Equal(t, r.cfg.DesktopAuto.Cooldown(), c.CooldownFor)
}

func TestMacosTurnHasNoCDPInspectWhenDesktopAutoOff(t *testing.T) {
	r := newRig()
	r.cfg.DesktopAuto.Enabled = false
	r.build(bb.Options{})
	assert.Equal(t, kinds(bb.KindLocal), r.plan(bb.Invocation{InterfaceID: hostproxytest.InterfaceMacOS}))
}

func TestDesktopAutoNeverAddsCDPInspectForOtherOrEmptyInterfaces(t *testing.T) {
	r := newRig().build(bb.Options{})
	for _, iface := range []string{"", "web", "cli", hostproxytest.InterfaceChromeExtension, hostproxytest.InterfaceWindows, "MACOS", " macos"} {
		assert.Equal(t, kinds(bb.KindLocal), r.plan(bb.Invocation{InterfaceID: iface}), "interface %q", iface)
	}
}

func TestCDPInspectEnabledAddsItForEveryInterface(t *testing.T) {
	r := newRig()
	r.cfg.Enabled = true
	r.cfg.DesktopAuto.Enabled = false
	r.build(bb.Options{})
	for _, iface := range []string{"", "web", "cli", hostproxytest.InterfaceChromeExtension, hostproxytest.InterfaceMacOS} {
		p := r.sel.Plan(bb.Invocation{InterfaceID: iface})
		require.Equal(t, kinds(bb.KindCDPInspect, bb.KindLocal), p.Kinds(), "interface %q", iface)
		assert.Equal(t, cdpinspect.ReasonConfigured, p.Candidates[0].Reason)
		assert.Empty(t, p.Candidates[0].CooldownKey, "an explicitly enabled cdp-inspect carries no cooldown")
	}
}

func TestCandidateListIsReadFromTheLiveRosterAtEveryInvocation(t *testing.T) {
	r := newRig().build(bb.Options{})
	inv := bb.Invocation{InterfaceID: "web", ActorPrincipalID: alice}
	c1, err := r.send(t, inv)
	require.NoError(t, err)
	assert.Equal(t, bb.KindLocal, c1.Kind())

	r.roster.Connect(aliceExt)
	c2, err := r.send(t, inv)
	require.NoError(t, err)
	assert.Equal(t, bb.KindExtension, c2.Kind())

	r.roster.Disconnect(aliceExt.ID)
	c3, err := r.send(t, inv)
	require.NoError(t, err)
	assert.Equal(t, bb.KindLocal, c3.Kind())
}

func TestCustomProviderOrderIsHonoured(t *testing.T) {
	r := newRig(aliceExt)
	ref := r.ref()
	r.build(bb.Options{Providers: []bb.Provider{ref.Local(), ref.Extension()}})
	assert.Equal(t, kinds(bb.KindLocal, bb.KindExtension), r.plan(bb.Invocation{ActorPrincipalID: alice}))
}
