package browserbackend_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bb "github.com/browserchain/browserchain/browserbackend"
	bbt "github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
	"github.com/browserchain/browserchain/local"
)

// SEL-11: structured selection records.

func TestSelectionLogRecordsEmittedOnceAtTheirLevelsWithAttributes(t *testing.T) {
	r := newRig(aliceMac)
	r.farm.FailSend(bb.KindHostBridge, unreachable())
	r.farm.FailBuild(bb.KindCDPInspect, unreachable())
	r.build(bb.Options{})
	inv := bb.Invocation{ConversationID: "conv-log", InterfaceID: hostproxytest.InterfaceMacOS, ActorPrincipalID: alice}
	_, err := r.send(t, inv)
	require.NoError(t, err)

	type rec struct {
		level slog.Level
		msg   string
	}
	var got []rec
	for _, x := range r.logs.Records() {
		got = append(got, rec{x.Level, x.Message})
		assert.Equal(t, "cdp-factory", x.Attrs["module"], x.Message)
		assert.Equal(t, "conv-log", x.Attrs["conversationId"], x.Message)
	}
	assert.Equal(t, []rec{
		{slog.LevelInfo, "candidate list built"},
		{slog.LevelDebug, "attempting candidate"},
		{slog.LevelInfo, "cooldown recorded after transport failure"},
		{slog.LevelInfo, "transport-level failure, failing over to next candidate"},
		{slog.LevelWarn, "auto-mode fallback triggered"},
		{slog.LevelDebug, "attempting candidate"},
		{slog.LevelInfo, "cooldown recorded after transport failure"},
		{slog.LevelInfo, "transport-level failure, failing over to next candidate"},
		{slog.LevelDebug, "attempting candidate"},
		{slog.LevelInfo, "candidate succeeded, backend is now sticky"},
		{slog.LevelWarn, "auto-mode fallback completed"},
	}, got)

	built := r.logs.Find("candidate list built")[0].Attrs
	assert.Equal(t, bb.ModeAuto, built["mode"])
	assert.Equal(t, false, built["pinned"])
	assert.Equal(t, "Runtime.evaluate", built["method"])
	assert.Equal(t, []map[string]string{
		{"kind": "host-bridge", "reason": "desktop client mac-alice (macos) connected, no chrome-extension client"},
		{"kind": "cdp-inspect", "reason": cdpinspect.ReasonDesktopAuto},
		{"kind": "local", "reason": local.ReasonAlwaysLast},
	}, built["candidates"])

	var attempting []any
	for _, x := range r.logs.Find("attempting candidate") {
		attempting = append(attempting, x.Attrs["candidateKind"])
	}
	assert.Equal(t, []any{bb.KindHostBridge, bb.KindCDPInspect, bb.KindLocal}, attempting)

	cool := r.logs.Find("cooldown recorded after transport failure")
	assert.Equal(t, hostproxy.HostBridgeCooldownKey(alice), cool[0].Attrs["cooldownKey"])
	assert.Equal(t, 30*time.Second, cool[0].Attrs["cooldown"])
	assert.Equal(t, cdpinspect.CooldownKey, cool[1].Attrs["cooldownKey"])
	assert.Equal(t, bb.CodeUnreachable, cool[1].Attrs["code"])

	fo := r.logs.Find("transport-level failure, failing over to next candidate")
	assert.Equal(t, bb.KindHostBridge, fo[0].Attrs["candidateKind"])
	assert.Equal(t, bb.StageSend, fo[0].Attrs["stage"])
	assert.Equal(t, bb.KindCDPInspect, fo[1].Attrs["candidateKind"])
	assert.Equal(t, bb.StageConstruction, fo[1].Attrs["stage"])

	trig := r.logs.Find("auto-mode fallback triggered")[0].Attrs
	assert.Equal(t, bb.KindHostBridge, trig["from"])
	assert.Equal(t, []string{"extension@candidate_selection[no_client]", "host-bridge@send[unreachable]"}, trig["attempts"])

	sticky := r.logs.Find("candidate succeeded, backend is now sticky")[0].Attrs
	assert.Equal(t, bb.KindLocal, sticky["candidateKind"])
	assert.Equal(t, "Runtime.evaluate", sticky["method"])

	done := r.logs.Find("auto-mode fallback completed")[0].Attrs
	assert.Equal(t, bb.KindLocal, done["candidateKind"])
	assert.Equal(t, []string{"extension@candidate_selection[no_client]", "host-bridge@send[unreachable]",
		"cdp-inspect@construction[unreachable]", "local@success"}, done["attempts"])
}

func TestCooldownSkipRecordsForDesktopAutoAndHostBridge(t *testing.T) {
	r := newRig(aliceMac).build(bb.Options{})
	r.cool.Record(hostproxy.HostBridgeCooldownKey(alice), time.Minute)
	r.cool.Record(cdpinspect.CooldownKey, time.Minute)
	c, err := r.send(t, bb.Invocation{ConversationID: "c", InterfaceID: hostproxytest.InterfaceMacOS, ActorPrincipalID: alice})
	require.NoError(t, err)
	assert.Equal(t, bb.KindLocal, c.Kind())

	recs := r.logs.Find(skipCooldownMsg)
	require.Len(t, recs, 2)
	assert.Equal(t, slog.LevelInfo, recs[0].Level)
	assert.Equal(t, bb.KindHostBridge, recs[0].Attrs["candidateKind"])
	assert.Equal(t, bb.KindCDPInspect, recs[1].Attrs["candidateKind"])
	assert.Contains(t, recs[1].Attrs["reason"], "desktop-auto")
	assert.Equal(t, "cdp-factory", recs[1].Attrs["module"])
	assert.Zero(t, countMsg(r.logs, "auto-mode fallback triggered"), "a skip is not a fallback")
}

func TestSuccessfulFirstCandidateLogsNoFallback(t *testing.T) {
	r := newRig(aliceExt).build(bb.Options{})
	_, err := r.send(t, bb.Invocation{ActorPrincipalID: alice})
	require.NoError(t, err)
	assert.Equal(t, []string{"candidate list built", "attempting candidate", "candidate succeeded, backend is now sticky"}, messages(r.logs))
}

func TestCommandParamsNeverAppearInLogs(t *testing.T) {
	const secret = "hunter2-Sup3rS3cret"
	r := newRig(aliceMac)
	r.farm.FailSend(bb.KindHostBridge, unreachable())
	r.farm.FailBuild(bb.KindCDPInspect, unreachable())
	r.farm.FailSend(bb.KindLocal, bbt.ProtocolErr(-32602, "Invalid parameters"))
	r.build(bb.Options{})

	for _, cmd := range []bb.Command{
		{Method: "Input.insertText", Params: json.RawMessage(`{"text":"` + secret + `"}`)},
		{Method: "Network.setCookie", Params: json.RawMessage(`{"name":"sid","value":"` + secret + `"}`), SessionID: "S1"},
	} {
		c := r.sel.Client(bb.Invocation{ConversationID: "c", InterfaceID: hostproxytest.InterfaceMacOS, ActorPrincipalID: alice})
		_, _ = c.Send(context.Background(), cmd)
		c.Close()
		r.sel.Forget("c")
	}
	// A host app that logs a Command directly gets the redacted form too.
	r.logs.Handle(context.Background(), func() slog.Record {
		rec := slog.NewRecord(time.Now(), slog.LevelInfo, "host app", 0)
		rec.AddAttrs(slog.Any("cmd", bb.Command{Method: "Input.insertText", Params: json.RawMessage(`"` + secret + `"`)}))
		return rec
	}())

	recs := r.logs.Records()
	require.Greater(t, len(recs), 10)
	for _, rec := range recs {
		text := rec.Message + fmt.Sprint(rec.Attrs)
		assert.NotContains(t, text, secret, rec.Message)
		assert.NotContains(t, strings.ToLower(text), "hunter2")
	}
	last := recs[len(recs)-1].Attrs
	assert.Equal(t, "Input.insertText", last["cmd.method"])
	assert.Equal(t, int64(len(secret)+2), last["cmd.paramsBytes"])
}
