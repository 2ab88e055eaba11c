package browserbackend_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bb "github.com/browserchain/browserchain/browserbackend"
	bbt "github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
)

// SEL-7 pinned modes, SEL-8 grace, SEL-3 target clients.

// autoFallbackRecords are the records a pinned invocation never logs.
var autoFallbackRecords = []string{
	"auto-mode fallback triggered",
	"auto-mode fallback completed",
	"transport-level failure, failing over to next candidate",
}

func TestPinnedModesBuildExactlyOneCandidateAndNeverFallBack(t *testing.T) {
	for _, tc := range []struct {
		mode string
		kind bb.Kind
	}{
		{"extension", bb.KindExtension},
		{"cdp-inspect", bb.KindCDPInspect},
		{"local", bb.KindLocal},
		{"cdp-debugger", bb.KindCDPInspect},
		{" Playwright ", bb.KindLocal},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			ps := fakes(bb.KindExtension, bb.KindHostBridge, bb.KindCDPInspect, bb.KindLocal)
			var pinned *bbt.Provider
			for _, p := range ps {
				p.BuildErr = bbt.TransportErr(bb.CodeUnreachable)
				if p.K == tc.kind {
					pinned = p
				}
			}
			sel, logs := fakeSelector(bb.Options{Grace: -1}, ps...)
			c := openClient(t, sel, bb.Invocation{Mode: bb.Mode(tc.mode)})

			_, err := c.Send(context.Background(), evalCommand)
			var se *bb.SelectionError
			require.ErrorAs(t, err, &se)
			assert.True(t, se.Pinned)
			assert.Equal(t, bb.Mode(tc.kind), se.Mode, "reported under the canonical name")
			assert.Equal(t, []string{string(tc.kind) + "@construction[unreachable]"}, summary(se.Attempts))
			for _, p := range ps {
				if p == pinned {
					assert.Equal(t, 1, p.Builds())
					assert.Equal(t, []bool{true}, p.PinnedCalls(), "the provider is told it is pinned")
					continue
				}
				assert.Zero(t, p.Proposed()+p.Builds(), "%s must not be consulted", p.K)
			}
			for _, msg := range autoFallbackRecords {
				assert.Zero(t, countMsg(logs, msg), msg)
			}
			assert.Equal(t, 1, countMsg(logs, "candidate list built"))
		})
	}
}

func TestPinnedModeSucceedsOnItsBackendEvenWhenEarlierKindsExist(t *testing.T) {
	r := newRig(aliceExt).build(bb.Options{})
	c, err := r.send(t, bb.Invocation{ActorPrincipalID: alice, Mode: bb.Mode("local")})
	require.NoError(t, err)
	assert.Equal(t, bb.KindLocal, c.Kind())
	assert.Equal(t, kinds(bb.KindLocal), r.farm.BuiltKinds())
}

func TestPinnedFailureReportListsAttemptsAndRemediation(t *testing.T) {
	r := newRig()
	r.farm.FailBuild(bb.KindCDPInspect, &bb.Error{Class: bb.ClassTransport, Code: bb.CodeUnreachable,
		Detail: "version_fetch_failed", Message: "nothing listens on localhost:9222"})
	r.build(bb.Options{})
	_, err := r.send(t, bb.Invocation{Mode: "CDP-Debugger"})

	var se *bb.SelectionError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, bb.Mode("cdp-inspect"), se.Mode)
	assert.Equal(t, remedy(bb.KindCDPInspect, bb.CodeUnreachable), se.Remediation)
	assert.Contains(t, se.Error(), `requested browser_mode "cdp-inspect" is unavailable`)

	report := se.Report()
	for _, want := range []string{
		`Requested browser_mode "cdp-inspect" is unavailable.`,
		"1. cdp-inspect — stage construction, code unreachable, discovery version_fetch_failed: nothing listens on localhost:9222",
		"To fix:",
		"--remote-debugging-port=9222",
		"chrome://inspect",
	} {
		assert.Contains(t, report, want)
	}
	assert.NotContains(t, report, "cdp-debugger")
}

func TestPinnedExtensionReportNamesExtensionRemediation(t *testing.T) {
	r := newRig().build(bb.Options{Grace: -1})
	_, err := r.send(t, bb.Invocation{Mode: "extension", ActorPrincipalID: alice})
	var se *bb.SelectionError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, []string{"extension@candidate_selection[no_client]"}, summary(se.Attempts))
	assert.Equal(t, remedy(bb.KindExtension, bb.CodeNoClient), se.Remediation)
	assert.Contains(t, se.Report(), "Install the browserchain Chrome extension")
	assert.Empty(t, r.farm.Builds())
}

func TestRemediationDependsOnBackendAndCode(t *testing.T) {
	assert.NotEqual(t, remedy(bb.KindCDPInspect, bb.CodeNonLoopback), remedy(bb.KindCDPInspect, bb.CodeUnreachable))
	assert.Contains(t, strings.Join(remedy(bb.KindLocal, bb.CodeLaunchFailed), " "), "Chromium")
	assert.Contains(t, strings.Join(remedy(bb.KindHostBridge, ""), " "), "desktop app")
	assert.Nil(t, remedy("nonsense", ""))
}

func TestParseMode(t *testing.T) {
	sel := bb.NewSelector(bb.Options{Providers: hostproxytest.Reference{}.Providers(), Logger: bbt.DiscardLogger()})
	for _, tc := range []struct {
		in   string
		want bb.Mode
	}{
		{"", bb.ModeAuto},
		{"   ", bb.ModeAuto},
		{"auto", bb.ModeAuto},
		{"AUTO", bb.ModeAuto},
		{"extension", bb.Mode("extension")},
		{" Extension\t", bb.Mode("extension")},
		{"cdp-inspect", bb.Mode("cdp-inspect")},
		{"cdp-debugger", bb.Mode("cdp-inspect")},
		{"CDP-Debugger ", bb.Mode("cdp-inspect")},
		{"local", bb.Mode("local")},
		{"playwright", bb.Mode("local")},
		{"  PlayWright", bb.Mode("local")},
	} {
		got, err := sel.ParseMode(tc.in)
		require.NoError(t, err, "%q", tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
	}
	for _, in := range []string{"host-bridge", "HOST-BRIDGE", "chrome", "cdp inspect", "cdp_inspect", "auto,local", "remote"} {
		_, err := sel.ParseMode(in)
		require.Error(t, err, "%q", in)
		assert.ErrorIs(t, err, bb.ErrPolicy)
		var e *bb.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, bb.CodeInvalidMode, e.Code)
		for _, listed := range []string{"auto", "extension", "cdp-inspect", "local", "cdp-debugger", "playwright"} {
			assert.Contains(t, err.Error(), listed)
		}
		assert.True(t, strings.HasPrefix(err.Error(), "browserbackend: "))
	}
}

func TestHostBridgeModeRejectedFromCallers(t *testing.T) {
	r := newRig(aliceMac).build(bb.Options{})
	_, err := r.send(t, bb.Invocation{Mode: "host-bridge", ActorPrincipalID: alice})
	require.ErrorIs(t, err, bb.ErrPolicy)
	assert.ErrorIs(t, err, &bb.Error{Code: bb.CodeInvalidMode})
	assert.Empty(t, r.farm.Builds())
}

// countingProvider counts Propose calls of the wrapped provider and passes
// Changed through.
type countingProvider struct {
	*hostproxytest.RefProvider
	n atomic.Int32
}

func (p *countingProvider) Propose(inv bb.Invocation, env bb.Env) (bb.Candidate, error) {
	p.n.Add(1)
	return p.RefProvider.Propose(inv, env)
}

func TestPinnedExtensionSucceedsWhenExtensionConnectsWithinGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		ext := &countingProvider{RefProvider: r.ref().Extension()}
		r.build(bb.Options{Providers: []bb.Provider{ext, r.ref().Local()}})
		go func() {
			time.Sleep(time.Second)
			r.roster.Connect(hostproxytest.HubClient{ID: "other", InterfaceID: "web", Actor: alice}) // irrelevant change
			time.Sleep(200 * time.Millisecond)
			r.roster.Connect(aliceExt)
		}()

		start := time.Now()
		c, err := r.send(t, bb.Invocation{Mode: bb.Mode("extension"), ActorPrincipalID: alice})
		require.NoError(t, err)
		assert.Equal(t, bb.KindExtension, c.Kind())
		assert.Equal(t, 1200*time.Millisecond, time.Since(start), "woken by the roster change, not at the end of the grace")
		assert.Equal(t, int32(3), ext.n.Load(), "proposed once at start and once per roster change: no polling")
		assert.Equal(t, []bbt.BuildRecord{{Kind: bb.KindExtension, ClientID: aliceExt.ID}}, r.farm.Builds())
		assert.Equal(t, 1, countMsg(r.logs, "waiting for a candidate to appear"))
	})
}

func TestPinnedExtensionGivesUpAfterGraceWithPinnedReport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(bobExt).build(bb.Options{})
		start := time.Now()
		_, err := r.send(t, bb.Invocation{Mode: bb.Mode("extension"), ActorPrincipalID: alice})
		assert.Equal(t, bb.DefaultGrace, time.Since(start))
		assert.Equal(t, 3*time.Second, bb.DefaultGrace)

		var se *bb.SelectionError
		require.ErrorAs(t, err, &se)
		assert.True(t, se.Pinned)
		assert.Equal(t, bb.Mode("extension"), se.Mode)
		assert.Equal(t, []string{"extension@candidate_selection[no_client]"}, summary(se.Attempts), "one attempt, not one per wake-up")
		assert.Contains(t, se.Report(), `Requested browser_mode "extension" is unavailable.`)
		assert.NotEmpty(t, se.Remediation)
		assert.Empty(t, r.farm.Builds())
	})
}

func TestPinnedExtensionGraceEndsWithCallerContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig().build(bb.Options{})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c := r.sel.Client(bb.Invocation{Mode: bb.Mode("extension"), ActorPrincipalID: alice})
		defer c.Close()
		start := time.Now()
		_, err := c.Send(ctx, evalCommand)
		assert.Equal(t, time.Second, time.Since(start))
		assert.ErrorIs(t, err, bb.ErrTimeout)
	})
}

func TestAutoModeNeverWaitsForExtension(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig().build(bb.Options{})
		start := time.Now()
		c, err := r.send(t, bb.Invocation{ActorPrincipalID: alice})
		require.NoError(t, err)
		assert.Equal(t, bb.KindLocal, c.Kind())
		assert.Zero(t, time.Since(start))
		assert.Zero(t, countMsg(r.logs, "waiting for a candidate to appear"))
	})
}

func TestPinnedNonExtensionModesNeverWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ps := fakes(bb.KindCDPInspect)
		ps[0].Skip = bb.CodeNotConfigured
		r := newRig()
		r.build(bb.Options{Providers: []bb.Provider{r.ref().Extension(), ps[0]}})
		start := time.Now()
		_, err := r.send(t, bb.Invocation{Mode: bb.Mode("cdp-inspect")})
		require.ErrorIs(t, err, bb.ErrSkip)
		assert.Zero(t, time.Since(start))
	})
}

func TestTargetClientNotConnectedIsSelectionErrorAndNothingConstructed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(aliceExt, aliceMac).build(bb.Options{})
		start := time.Now()
		_, err := r.send(t, bb.Invocation{ActorPrincipalID: alice, TargetClientID: "ext-gone"})
		assert.Equal(t, bb.DefaultGrace, time.Since(start), "a target client gets the reconnect grace")

		var se *bb.SelectionError
		require.ErrorAs(t, err, &se)
		assert.True(t, se.Pinned)
		assert.Equal(t, "ext-gone", se.TargetClientID)
		assert.Contains(t, se.Error(), `target client "ext-gone" is unavailable`)
		assert.ErrorIs(t, err, bb.ErrUnavailable)
		assert.ErrorIs(t, err, &bb.Error{Code: bb.CodeTargetUnavailable})
		assert.Equal(t, []string{"extension@candidate_selection[target_unavailable]"}, summary(se.Attempts))
		assert.Empty(t, r.farm.Builds(), "nothing constructed")
	})
}

func TestTargetClientOfAnotherActorIsRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(aliceExt, bobExt).build(bb.Options{})
		_, err := r.send(t, bb.Invocation{ActorPrincipalID: alice, TargetClientID: bobExt.ID})
		var se *bb.SelectionError
		require.ErrorAs(t, err, &se)
		assert.Empty(t, r.farm.Builds())
	})
}

func TestTargetClientConnectedGivesExactlyOneExtensionCandidateAimedAtIt(t *testing.T) {
	second := hostproxytest.HubClient{ID: "ext-alice-2", InterfaceID: hostproxytest.InterfaceChromeExtension, Actor: alice}
	r := newRig(aliceExt, second, aliceMac)
	r.cfg.Enabled = true
	r.build(bb.Options{})
	inv := bb.Invocation{InterfaceID: hostproxytest.InterfaceMacOS, ActorPrincipalID: alice, TargetClientID: second.ID}

	p := r.sel.Plan(inv)
	assert.True(t, p.Pinned)
	assert.Equal(t, kinds(bb.KindExtension), p.Kinds())

	c, err := r.send(t, inv)
	require.NoError(t, err)
	assert.Equal(t, bb.KindExtension, c.Kind())
	assert.Equal(t, []bbt.BuildRecord{{Kind: bb.KindExtension, ClientID: second.ID}}, r.farm.Builds())
}

func TestTargetClientWithNonExtensionModeIsRejected(t *testing.T) {
	r := newRig(aliceExt).build(bb.Options{})
	_, err := r.send(t, bb.Invocation{ActorPrincipalID: alice, TargetClientID: aliceExt.ID, Mode: bb.Mode("local")})
	require.ErrorIs(t, err, bb.ErrPolicy)
	assert.Empty(t, r.farm.Builds())
}

func TestTargetClientFailureDoesNotFallBack(t *testing.T) {
	r := newRig(aliceExt)
	r.farm.FailSend(bb.KindExtension, unreachable())
	r.build(bb.Options{})
	_, err := r.send(t, bb.Invocation{ActorPrincipalID: alice, TargetClientID: aliceExt.ID})
	var se *bb.SelectionError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, kinds(bb.KindExtension), r.farm.BuiltKinds())
	for _, msg := range autoFallbackRecords {
		assert.Zero(t, countMsg(r.logs, msg), msg)
	}
}

func TestPinnedExtensionGraceCancelledByCallerIsAborted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig().build(bb.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(time.Second); cancel() }()
		c := r.sel.Client(bb.Invocation{ActorPrincipalID: alice, TargetClientID: "ext-gone"})
		defer c.Close()
		_, err := c.Send(ctx, evalCommand)
		require.ErrorIs(t, err, bb.ErrAborted)
		var se *bb.SelectionError
		require.ErrorAs(t, err, &se, "the attempts are still reported")
		assert.Equal(t, []string{"extension@candidate_selection[target_unavailable]"}, summary(se.Attempts))
	})
}

func TestGraceIsWokenByAnyOfSeveralWatchingProviders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r1, r2 := newRig(), newRig()
		ext2 := hostproxytest.Reference{Roster: r2.roster, Farm: r1.farm}.Extension()
		r1.build(bb.Options{Providers: []bb.Provider{r1.ref().Extension(), ext2}})
		go func() {
			time.Sleep(500 * time.Millisecond)
			r2.roster.Connect(aliceExt)
		}()
		start := time.Now()
		c, err := r1.send(t, bb.Invocation{Mode: bb.Mode("extension"), ActorPrincipalID: alice})
		require.NoError(t, err)
		assert.Equal(t, bb.KindExtension, c.Kind())
		assert.Equal(t, 500*time.Millisecond, time.Since(start))
	})
}

func TestNegativeExtensionGraceDisablesTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig().build(bb.Options{Grace: -1})
		start := time.Now()
		_, err := r.send(t, bb.Invocation{Mode: bb.Mode("extension"), ActorPrincipalID: alice})
		var se *bb.SelectionError
		require.ErrorAs(t, err, &se)
		assert.Zero(t, time.Since(start))
	})
}

func TestCustomExtensionGraceIsHonoured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig().build(bb.Options{Grace: 750 * time.Millisecond})
		start := time.Now()
		_, err := r.send(t, bb.Invocation{Mode: bb.Mode("extension"), ActorPrincipalID: alice})
		require.Error(t, err)
		assert.Equal(t, 750*time.Millisecond, time.Since(start))
	})
}

// remedy is what the reference descriptor of k advises for an attempt that
// failed with code.
func remedy(k bb.Kind, code string) []string {
	sel := bb.NewSelector(bb.Options{Providers: hostproxytest.Reference{Config: cdpinspect.DefaultConfig()}.Providers(), Logger: bbt.DiscardLogger()})
	return sel.Remediation(bb.Attempt{Kind: k, Code: code})
}
