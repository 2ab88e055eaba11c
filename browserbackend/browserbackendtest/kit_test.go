package browserbackendtest_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	bb "github.com/browserchain/browserchain/browserbackend"
	bbt "github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBackendFailOnFailsOnlyTheNthCommand(t *testing.T) {
	b := bbt.NewBackend(bb.KindLocal, bbt.JSON(map[string]int{"n": 1})).FailOn(2, bbt.TransportErr(""))
	ctx := context.Background()
	res, err := b.Send(ctx, bb.Command{Method: "A"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"n":1}`, string(res))
	_, err = b.Send(ctx, bb.Command{Method: "B"})
	assert.ErrorIs(t, err, bb.ErrTransport)
	_, err = b.Send(ctx, bb.Command{Method: "C"})
	require.NoError(t, err)
	assert.Equal(t, []string{"A", "B", "C"}, b.Methods())

	require.NoError(t, b.Close())
	assert.True(t, b.Closed())
	_, err = b.Send(ctx, bb.Command{Method: "D"})
	assert.ErrorIs(t, err, bb.ErrClosed)
}

func TestBackendHandleNilResultAnswersEmptyObject(t *testing.T) {
	b := bbt.NewBackend(bb.KindLocal, func(context.Context, bb.Command) (json.RawMessage, error) { return nil, nil })
	res, err := b.Send(context.Background(), bb.Command{Method: "A"})
	require.NoError(t, err)
	assert.Equal(t, `{}`, string(res))
}

func TestErrorHelpersClassify(t *testing.T) {
	assert.ErrorIs(t, bbt.TransportErr(bb.CodeUnreachable), bb.ErrUnreachable)
	var e *bb.Error
	require.ErrorAs(t, bbt.DispatchedTransportErr(""), &e)
	assert.True(t, e.Dispatched)
	assert.Equal(t, bb.CodeTransportError, e.Code)
	assert.ErrorIs(t, bbt.ProtocolErr(-32601, "x"), bb.ErrMethodNotFound)
}

func TestRosterSignalsEveryChange(t *testing.T) {
	r := hostproxytest.NewRoster()
	ch := r.Changed()
	r.Connect(hostproxytest.HubClient{ID: "a", InterfaceID: hostproxytest.InterfaceMacOS})
	<-ch
	ch = r.Changed()
	select {
	case <-ch:
		t.Fatal("no change yet")
	default:
	}
	assert.False(t, r.Disconnect("missing"))
	assert.True(t, r.Disconnect("a"))
	<-ch
	assert.Empty(t, r.Clients())
}

func TestRosterConnectReplacesSameID(t *testing.T) {
	r := hostproxytest.NewRoster(hostproxytest.HubClient{ID: "a", InterfaceID: "web"})
	r.Connect(hostproxytest.HubClient{ID: "a", InterfaceID: hostproxytest.InterfaceChromeExtension})
	assert.Equal(t, []hostproxytest.HubClient{{ID: "a", InterfaceID: hostproxytest.InterfaceChromeExtension}}, r.Clients())
}

func TestHubClientHostBrowserFollowsInterface(t *testing.T) {
	for iface, want := range map[string]bool{"chrome-extension": true, "macos": true, "windows": true, "web": false, "cli": false, "": false} {
		assert.Equal(t, want, hostproxytest.HubClient{InterfaceID: iface}.HostBrowser(), iface)
	}
}

func TestFarmRecordsAndScriptsBuilds(t *testing.T) {
	f := &bbt.Farm{}
	f.FailBuild(bb.KindCDPInspect, bbt.TransportErr(bb.CodeUnreachable))
	f.FailSend(bb.KindLocal, bbt.TransportErr(""))
	ctx := context.Background()
	_, err := f.Build(ctx, bb.KindCDPInspect, "")
	assert.ErrorIs(t, err, bb.ErrUnreachable)
	b, err := f.Build(ctx, bb.KindLocal, "")
	require.NoError(t, err)
	_, err = b.Send(ctx, bb.Command{Method: "A"})
	assert.ErrorIs(t, err, bb.ErrTransport)
	_, err = f.Build(ctx, bb.KindExtension, "ext-1")
	require.NoError(t, err)
	assert.Equal(t, []bbt.BuildRecord{{Kind: bb.KindCDPInspect}, {Kind: bb.KindLocal}, {Kind: bb.KindExtension, ClientID: "ext-1"}}, f.Builds())
	assert.Len(t, f.Backends(), 2)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = f.Build(cctx, bb.KindLocal, "")
	assert.ErrorIs(t, err, context.Canceled)
}

func TestReferenceProvidersFollowSEL3(t *testing.T) {
	r := hostproxytest.NewRoster(
		hostproxytest.HubClient{ID: "ext-a", InterfaceID: hostproxytest.InterfaceChromeExtension, Actor: "a"},
		hostproxytest.HubClient{ID: "mac-b", InterfaceID: hostproxytest.InterfaceMacOS, Actor: "b"},
	)
	sel := bb.NewSelector(bb.Options{Providers: hostproxytest.Reference{Roster: r, Config: cdpinspect.DefaultConfig()}.Providers()})
	for _, tc := range []struct {
		inv  bb.Invocation
		want []bb.Kind
	}{
		{bb.Invocation{ActorPrincipalID: "a", InterfaceID: "macos"}, []bb.Kind{bb.KindExtension, bb.KindCDPInspect, bb.KindLocal}},
		{bb.Invocation{ActorPrincipalID: "b", InterfaceID: "web"}, []bb.Kind{bb.KindHostBridge, bb.KindLocal}},
		{bb.Invocation{ActorPrincipalID: "c", InterfaceID: "cli"}, []bb.Kind{bb.KindLocal}},
		{bb.Invocation{ActorPrincipalID: "a", TargetClientID: "ext-a"}, []bb.Kind{bb.KindExtension}},
		{bb.Invocation{ActorPrincipalID: "a", Mode: bb.Mode("cdp-inspect")}, []bb.Kind{bb.KindCDPInspect}},
	} {
		assert.Equal(t, tc.want, sel.Plan(tc.inv).Kinds(), "%+v", tc.inv)
	}
	p := sel.Plan(bb.Invocation{ActorPrincipalID: "a", TargetClientID: "ext-b"})
	assert.ErrorIs(t, p.Err, bb.ErrUnavailable)
}

func TestLogRecorderFlattensGroupsAndKeepsLevels(t *testing.T) {
	rec, log := bbt.NewLogRecorder()
	log.With("module", "m").WithGroup("g").Warn("hello", "k", 1)
	log.Debug("quiet")
	recs := rec.Records()
	require.Len(t, recs, 2)
	assert.Equal(t, map[string]any{"module": "m", "g.k": int64(1)}, recs[0].Attrs)
	assert.Len(t, rec.Find("quiet"), 1)
}
