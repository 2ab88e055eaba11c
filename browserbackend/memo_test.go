package browserbackend_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bb "github.com/browserchain/browserchain/browserbackend"
	bbt "github.com/browserchain/browserchain/browserbackend/browserbackendtest"
)

// SEL-9: the conversation memo.

func TestMemoAutoInvocationReusesRememberedKind(t *testing.T) {
	r := newRig().build(bb.Options{})
	first := bb.Invocation{ConversationID: "conv-1", ActorPrincipalID: alice, Mode: bb.Mode("local")}
	_, err := r.send(t, first)
	require.NoError(t, err)
	k, ok := r.sel.Memo().Get("conv-1")
	require.True(t, ok)
	assert.Equal(t, bb.KindLocal, k)

	r.roster.Connect(aliceExt) // plain auto would now pick the extension
	c, err := r.send(t, bb.Invocation{ConversationID: "conv-1", ActorPrincipalID: alice})
	require.NoError(t, err)
	assert.Equal(t, bb.KindLocal, c.Kind())
	assert.Equal(t, []string{"local@success(remembered)"}, summary(c.Attempts()))
	assert.Equal(t, kinds(bb.KindLocal, bb.KindLocal), r.farm.BuiltKinds(), "the extension is not built")
	assert.Equal(t, 1, countMsg(r.logs, "trying the conversation's remembered backend"))

	other, err := r.send(t, bb.Invocation{ConversationID: "conv-2", ActorPrincipalID: alice})
	require.NoError(t, err)
	assert.Equal(t, bb.KindExtension, other.Kind(), "the memo is per conversation")
}

func TestMemoIsNotConsultedByPinnedInvocations(t *testing.T) {
	r := newRig(aliceExt).build(bb.Options{})
	_, err := r.send(t, bb.Invocation{ConversationID: "conv-1", ActorPrincipalID: alice})
	require.NoError(t, err)
	c, err := r.send(t, bb.Invocation{ConversationID: "conv-1", ActorPrincipalID: alice, Mode: bb.Mode("local")})
	require.NoError(t, err)
	assert.Equal(t, bb.KindLocal, c.Kind())
	k, _ := r.sel.Memo().Get("conv-1")
	assert.Equal(t, bb.KindLocal, k, "the latest success is remembered")
}

func TestMemoRememberedKindFailingAtBuildIsForgottenAndPlainAutoServes(t *testing.T) {
	r := newRig(aliceExt).build(bb.Options{})
	conv := bb.Invocation{ConversationID: "conv-1", ActorPrincipalID: alice, InterfaceID: "web"}
	pinned := conv
	pinned.Mode = bb.Mode("cdp-inspect")
	_, err := r.send(t, pinned)
	require.NoError(t, err)

	r.farm.FailBuild(bb.KindCDPInspect, unreachable())
	c, err := r.send(t, conv)
	require.NoError(t, err)
	assert.Equal(t, bb.KindExtension, c.Kind(), "plain auto served the call")
	assert.Equal(t, []string{"cdp-inspect@construction[unreachable](remembered)", "extension@success"}, tried(c.Attempts()))
	k, _ := r.sel.Memo().Get("conv-1")
	assert.Equal(t, bb.KindExtension, k, "the failed kind is forgotten and the new success remembered")
	assert.Equal(t, 1, countMsg(r.logs, "forgot the conversation's remembered backend"))
}

func TestMemoRememberedKindFailingAtSendIsForgottenAndPlainAutoServes(t *testing.T) {
	r := newRig(aliceExt).build(bb.Options{})
	conv := bb.Invocation{ConversationID: "conv-1", ActorPrincipalID: alice, InterfaceID: "web"}
	_, err := r.send(t, conv)
	require.NoError(t, err)
	k, _ := r.sel.Memo().Get("conv-1")
	require.Equal(t, bb.KindExtension, k)

	// The extension still shows on the roster but its transport is dead.
	r.farm.FailSend(bb.KindExtension, unreachable())
	c, err := r.send(t, conv)
	require.NoError(t, err)
	assert.Equal(t, bb.KindLocal, c.Kind())
	assert.Equal(t, []string{"extension@send[unreachable](remembered)", "local@success"}, tried(c.Attempts()),
		"the remembered kind that just failed is not tried a second time")
	k, _ = r.sel.Memo().Get("conv-1")
	assert.Equal(t, bb.KindLocal, k)
}

func TestMemoRememberedKindNoLongerProposedIsForgotten(t *testing.T) {
	r := newRig(aliceExt).build(bb.Options{})
	conv := bb.Invocation{ConversationID: "conv-1", ActorPrincipalID: alice, InterfaceID: "web"}
	_, err := r.send(t, conv)
	require.NoError(t, err)
	r.roster.Disconnect(aliceExt.ID)

	c, err := r.send(t, conv)
	require.NoError(t, err)
	assert.Equal(t, bb.KindLocal, c.Kind())
	assert.Zero(t, countMsg(r.logs, "auto-mode fallback completed"), "nothing failed, so nothing fell back")
}

func TestMemoRememberedKindProtocolErrorIsReturnedAndKept(t *testing.T) {
	r := newRig(aliceExt).build(bb.Options{})
	conv := bb.Invocation{ConversationID: "conv-1", ActorPrincipalID: alice}
	_, err := r.send(t, conv)
	require.NoError(t, err)
	r.farm.FailSend(bb.KindExtension, bbt.ProtocolErr(-32000, "Cannot navigate"))
	_, err = r.send(t, conv)
	require.ErrorIs(t, err, bb.ErrProtocol)
	k, ok := r.sel.Memo().Get("conv-1")
	assert.True(t, ok)
	assert.Equal(t, bb.KindExtension, k)
}

func TestSelectorForgetDropsRememberedKind(t *testing.T) {
	r := newRig().build(bb.Options{})
	_, err := r.send(t, bb.Invocation{ConversationID: "conv-1", Mode: bb.Mode("cdp-inspect")})
	require.NoError(t, err)
	r.sel.Forget("conv-1")
	_, ok := r.sel.Memo().Get("conv-1")
	assert.False(t, ok)

	c, err := r.send(t, bb.Invocation{ConversationID: "conv-1", InterfaceID: "web"})
	require.NoError(t, err)
	assert.Equal(t, bb.KindLocal, c.Kind(), "plain auto: web turns get no cdp-inspect")
}

func TestMemoWithoutConversationIDRemembersNothing(t *testing.T) {
	r := newRig().build(bb.Options{})
	_, err := r.send(t, bb.Invocation{Mode: bb.Mode("local")})
	require.NoError(t, err)
	assert.Zero(t, r.sel.Memo().Len())
}

func TestMemoIsBoundedLRU(t *testing.T) {
	m := &bb.Memo{Max: 2}
	m.Set("a", bb.KindLocal)
	m.Set("b", bb.KindExtension)
	_, _ = m.Get("a")
	m.Set("a", bb.KindCDPInspect) // refresh a
	m.Set("c", bb.KindLocal)
	assert.Equal(t, 2, m.Len())
	_, ok := m.Get("b")
	assert.False(t, ok, "least recently set conversation evicted")
	k, _ := m.Get("a")
	assert.Equal(t, bb.KindCDPInspect, k)
}

func TestMemoCanRememberHostBridgeAndYieldsToANewExtension(t *testing.T) {
	r := newRig(aliceMac).build(bb.Options{})
	conv := bb.Invocation{ConversationID: "conv-1", ActorPrincipalID: alice, InterfaceID: "web"}
	c, err := r.send(t, conv)
	require.NoError(t, err)
	require.Equal(t, bb.KindHostBridge, c.Kind())
	k, _ := r.sel.Memo().Get("conv-1")
	assert.Equal(t, bb.KindHostBridge, k, "host-bridge is produced by selection and may be remembered")

	c, err = r.send(t, conv)
	require.NoError(t, err)
	assert.Equal(t, bb.KindHostBridge, c.Kind())

	r.roster.Connect(aliceExt) // now the extension outranks the bridge
	c, err = r.send(t, conv)
	require.NoError(t, err)
	assert.Equal(t, bb.KindExtension, c.Kind())
	assert.Contains(t, summary(c.Attempts()), "host-bridge@candidate_selection[extension_connected]")
}
