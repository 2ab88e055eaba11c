package browserbackend_test

import (
	"context"
	"encoding/json"
	"errors"
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

// SEL-4, SEL-5: the failover walk, stickiness and policies, with the fake
// provider of the test kit.

// fakes returns fake providers of ks, each declaring its kind's real
// descriptor (the reference kinds' modes, aliases, grace and target clients).
func fakes(ks ...bb.Kind) []*bbt.Provider {
	out := make([]*bbt.Provider, len(ks))
	for i, k := range ks {
		d := hostproxytest.ReferenceDescriptor(k)
		out[i] = &bbt.Provider{K: k, Desc: &d}
	}
	return out
}

// fakeSelector builds a selector over ps with a log recorder.
func fakeSelector(o bb.Options, ps ...*bbt.Provider) (*bb.Selector, *bbt.LogRecorder) {
	for _, p := range ps {
		o.Providers = append(o.Providers, p)
	}
	logs, log := bbt.NewLogRecorder()
	if o.Logger == nil {
		o.Logger = log
	}
	return bb.NewSelector(o), logs
}

// failingBackend returns a NewBackend func whose backends fail their first
// command with err.
func failingBackend(k bb.Kind, err error) func() *bbt.Backend {
	return func() *bbt.Backend { return bbt.NewBackend(k, nil).FailOn(1, err) }
}

func openClient(t *testing.T, sel *bb.Selector, inv bb.Invocation) *bb.Client {
	c := sel.Client(inv)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestTransportErrorFailsOverToNextCandidate(t *testing.T) {
	ps := fakes(bb.KindExtension, bb.KindCDPInspect, bb.KindLocal)
	ps[0].NewBackend = failingBackend(bb.KindExtension, bbt.TransportErr(""))
	sel, _ := fakeSelector(bb.Options{}, ps...)
	c := openClient(t, sel, bb.Invocation{})

	res, err := c.Send(context.Background(), evalCommand)
	require.NoError(t, err)
	assert.JSONEq(t, `{}`, string(res))
	assert.Equal(t, bb.KindCDPInspect, c.Kind())
	assert.Equal(t, []string{"extension@send[transport_error]", "cdp-inspect@success"}, summary(c.Attempts()))
	assert.Equal(t, []string{"Runtime.evaluate"}, ps[1].Backends()[0].Methods(), "the same command is sent to the next candidate")
	assert.Zero(t, ps[2].Builds(), "later candidates are not built")
}

func TestProtocolErrorReturnedAtOnceAndNoLaterCandidateConstructed(t *testing.T) {
	ps := fakes(bb.KindExtension, bb.KindCDPInspect, bb.KindLocal)
	ps[0].NewBackend = failingBackend(bb.KindExtension, bbt.ProtocolErr(-32601, "'Foo.bar' wasn't found"))
	sel, _ := fakeSelector(bb.Options{}, ps...)
	c := openClient(t, sel, bb.Invocation{})

	_, err := c.Send(context.Background(), bb.Command{Method: "Foo.bar"})
	require.ErrorIs(t, err, bb.ErrProtocol)
	require.ErrorIs(t, err, bb.ErrMethodNotFound)
	var se *bb.SelectionError
	assert.False(t, errors.As(err, &se), "a protocol error is returned as is, not as a selection failure")
	var e *bb.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, bb.KindExtension, e.Backend)
	assert.Equal(t, "Foo.bar", e.Method)
	assert.Zero(t, ps[1].Builds())
	assert.Zero(t, ps[2].Builds())
	assert.Equal(t, []string{"extension@send[cdp_error]"}, summary(c.Attempts()))
}

func TestCallerCancellationReturnedWithoutFailover(t *testing.T) {
	ps := fakes(bb.KindExtension, bb.KindLocal)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ps[0].NewBackend = func() *bbt.Backend {
		return bbt.NewBackend(bb.KindExtension, func(ctx context.Context, _ bb.Command) (json.RawMessage, error) {
			cancel() // the caller gives up while the command is in flight
			<-ctx.Done()
			return nil, ctx.Err()
		})
	}
	sel, _ := fakeSelector(bb.Options{}, ps...)
	c := openClient(t, sel, bb.Invocation{})

	_, err := c.Send(ctx, evalCommand)
	require.ErrorIs(t, err, bb.ErrAborted)
	require.ErrorIs(t, err, bb.ErrAborted)
	require.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, ps[1].Builds(), "no failover after the caller cancelled")
	assert.Equal(t, bb.Kind(""), c.Kind())
}

func TestCancelledBeforeConstructionFailureDoesNotFailOver(t *testing.T) {
	ps := fakes(bb.KindExtension, bb.KindLocal)
	ctx, cancel := context.WithCancel(context.Background())
	ps[0].BuildErr = bbt.TransportErr("")
	sel, _ := fakeSelector(bb.Options{Hooks: bb.Hooks{AttemptStart: func(bb.Invocation, bb.Candidate) { cancel() }}}, ps...)
	c := openClient(t, sel, bb.Invocation{})
	_, err := c.Send(ctx, evalCommand)
	require.ErrorIs(t, err, bb.ErrAborted)
	assert.Zero(t, ps[1].Builds())
}

func TestDeadlineOnDispatchedCommandIsTimeoutWithoutFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ps := fakes(bb.KindExtension, bb.KindLocal)
		ps[0].NewBackend = func() *bbt.Backend {
			return bbt.NewBackend(bb.KindExtension, func(ctx context.Context, _ bb.Command) (json.RawMessage, error) {
				<-ctx.Done() // the browser never answers
				return nil, ctx.Err()
			})
		}
		sel, _ := fakeSelector(bb.Options{}, ps...)
		c := openClient(t, sel, bb.Invocation{})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()

		start := time.Now()
		_, err := c.Send(ctx, evalCommand)
		require.ErrorIs(t, err, bb.ErrTimeout)
		var e *bb.Error
		require.ErrorAs(t, err, &e)
		assert.True(t, e.Dispatched, "outcome unknown: the command was dispatched")
		assert.Equal(t, 5*time.Second, time.Since(start))
		assert.Zero(t, ps[1].Builds(), "a timeout does not fail over")
	})
}

func TestCommandTimeoutAppliesWhenContextHasNoDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ps := fakes(bb.KindLocal)
		ps[0].NewBackend = func() *bbt.Backend {
			return bbt.NewBackend(bb.KindLocal, func(ctx context.Context, _ bb.Command) (json.RawMessage, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			})
		}
		sel, _ := fakeSelector(bb.Options{CommandTimeout: 2 * time.Second}, ps...)
		c := openClient(t, sel, bb.Invocation{})
		start := time.Now()
		_, err := c.Send(context.Background(), evalCommand)
		require.ErrorIs(t, err, bb.ErrTimeout)
		assert.Equal(t, 2*time.Second, time.Since(start))
	})
}

func TestBackendTimeoutClassDoesNotFailOver(t *testing.T) {
	ps := fakes(bb.KindExtension, bb.KindLocal)
	ps[0].NewBackend = failingBackend(bb.KindExtension, &bb.Error{Class: bb.ClassTimeout, Code: bb.CodeTimeout, Dispatched: true})
	sel, _ := fakeSelector(bb.Options{}, ps...)
	_, err := openClient(t, sel, bb.Invocation{}).Send(context.Background(), evalCommand)
	require.ErrorIs(t, err, bb.ErrTimeout)
	assert.Zero(t, ps[1].Builds())
}

func TestNoReplayPolicyDoesNotFailOverAfterDispatchedTransportError(t *testing.T) {
	ps := fakes(bb.KindExtension, bb.KindLocal)
	ps[0].NewBackend = failingBackend(bb.KindExtension, bbt.DispatchedTransportErr(""))
	sel, _ := fakeSelector(bb.Options{Policy: bb.NoReplayPolicy}, ps...)
	c := openClient(t, sel, bb.Invocation{})

	_, err := c.Send(context.Background(), evalCommand)
	require.ErrorIs(t, err, bb.ErrTransport)
	var e *bb.Error
	require.ErrorAs(t, err, &e)
	assert.True(t, e.Dispatched, "the error says the command may have reached the browser")
	assert.Zero(t, ps[1].Builds())
}

func TestNoReplayPolicyFailsOverWhenNothingWasDispatched(t *testing.T) {
	ps := fakes(bb.KindExtension, bb.KindCDPInspect, bb.KindLocal)
	ps[0].BuildErr = bbt.TransportErr(bb.CodeUnreachable)
	ps[1].NewBackend = failingBackend(bb.KindCDPInspect, bbt.TransportErr(""))
	sel, _ := fakeSelector(bb.Options{Policy: bb.NoReplayPolicy}, ps...)
	c := openClient(t, sel, bb.Invocation{})
	_, err := c.Send(context.Background(), evalCommand)
	require.NoError(t, err)
	assert.Equal(t, bb.KindLocal, c.Kind())
}

func TestDefaultPolicyFailsOverAfterDispatchedTransportError(t *testing.T) {
	ps := fakes(bb.KindExtension, bb.KindLocal)
	ps[0].NewBackend = failingBackend(bb.KindExtension, bbt.DispatchedTransportErr(""))
	sel, _ := fakeSelector(bb.Options{}, ps...)
	c := openClient(t, sel, bb.Invocation{})
	_, err := c.Send(context.Background(), evalCommand)
	require.NoError(t, err)
	assert.Equal(t, bb.KindLocal, c.Kind())
}

func TestCustomPolicyDecidesFailover(t *testing.T) {
	var seen []bb.Stage
	never := bb.Policy{Name: "never", Failover: func(_ *bb.Error, s bb.Stage) bool { seen = append(seen, s); return false }}
	ps := fakes(bb.KindExtension, bb.KindLocal)
	ps[0].BuildErr = bbt.TransportErr("")
	sel, _ := fakeSelector(bb.Options{Policy: never}, ps...)
	_, err := openClient(t, sel, bb.Invocation{}).Send(context.Background(), evalCommand)
	require.ErrorIs(t, err, bb.ErrTransport)
	assert.Equal(t, []bb.Stage{bb.StageConstruction}, seen)
	assert.Zero(t, ps[1].Builds())
}

func TestPolicyZeroValueBehavesAsDefault(t *testing.T) {
	assert.Equal(t, "default", bb.DefaultPolicy.Name)
	assert.Equal(t, "no-replay", bb.NoReplayPolicy.Name)
	ps := fakes(bb.KindExtension, bb.KindLocal)
	ps[0].BuildErr = bbt.TransportErr("")
	sel, _ := fakeSelector(bb.Options{Policy: bb.Policy{}}, ps...)
	c := openClient(t, sel, bb.Invocation{})
	_, err := c.Send(context.Background(), evalCommand)
	require.NoError(t, err)
	assert.Equal(t, bb.KindLocal, c.Kind())
}

func TestStickyAfterFirstSuccessReturnsLaterTransportErrorsAsTheyAre(t *testing.T) {
	ps := fakes(bb.KindExtension, bb.KindCDPInspect, bb.KindLocal)
	ps[0].NewBackend = func() *bbt.Backend {
		return bbt.NewBackend(bb.KindExtension, nil).FailOn(2, bbt.TransportErr(bb.CodeUnreachable))
	}
	sel, logs := fakeSelector(bb.Options{}, ps...)
	c := openClient(t, sel, bb.Invocation{})
	assert.Nil(t, c.Backend(), "nothing is sticky before the first command")

	_, err := c.Send(context.Background(), evalCommand)
	require.NoError(t, err)
	assert.Equal(t, bb.KindExtension, c.Kind())
	assert.Same(t, ps[0].Backends()[0], c.Backend())

	_, err = c.Send(context.Background(), bb.Command{Method: "Page.navigate"})
	require.ErrorIs(t, err, bb.ErrTransport)
	require.ErrorIs(t, err, bb.ErrUnreachable)
	var se *bb.SelectionError
	assert.False(t, errors.As(err, &se))
	var e *bb.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, bb.KindExtension, e.Backend)
	assert.Equal(t, "Page.navigate", e.Method)

	_, err = c.Send(context.Background(), bb.Command{Method: "Page.reload"})
	require.NoError(t, err)
	assert.Equal(t, bb.KindExtension, c.Kind(), "no re-selection")
	assert.Equal(t, 1, ps[0].Builds())
	assert.Equal(t, 1, ps[0].Proposed(), "the candidate list is built once")
	assert.Equal(t, 1, ps[1].Proposed(), "the candidate list is built once")
	assert.Zero(t, ps[1].Builds()+ps[2].Builds())
	assert.Equal(t, []string{"Runtime.evaluate", "Page.navigate", "Page.reload"}, ps[0].Backends()[0].Methods())
	assert.Equal(t, 1, countMsg(logs, "candidate list built"))
	assert.Equal(t, []string{"extension@success"}, summary(c.Attempts()))
}

func TestConstructionFailureFallsThroughToNextCandidate(t *testing.T) {
	ps := fakes(bb.KindExtension, bb.KindCDPInspect, bb.KindLocal)
	launch := errors.New("chromium: exec: no such file")
	ps[0].BuildErr = bbt.TransportErr(bb.CodeUnreachable)
	ps[1].BuildErr = &bb.Error{Class: bb.ClassTransport, Code: bb.CodeLaunchFailed, Err: launch}
	ps[2].BuildErr = nil
	sel, _ := fakeSelector(bb.Options{}, ps...)
	c := openClient(t, sel, bb.Invocation{})
	_, err := c.Send(context.Background(), evalCommand)
	require.NoError(t, err)
	assert.Equal(t, bb.KindLocal, c.Kind())
	assert.Equal(t, []string{"extension@construction[unreachable]", "cdp-inspect@construction[launch_failed]", "local@success"},
		summary(c.Attempts()))
}

func TestConstructionFailureWithPlainErrorIsTransportAndNotDispatched(t *testing.T) {
	ps := fakes(bb.KindCDPInspect, bb.KindLocal)
	dial := errors.New("dial tcp 127.0.0.1:9222: connection refused")
	ps[0].BuildErr = dial
	sel, _ := fakeSelector(bb.Options{Policy: bb.NoReplayPolicy}, ps...)
	c := openClient(t, sel, bb.Invocation{})
	_, err := c.Send(context.Background(), evalCommand)
	require.NoError(t, err)
	a := c.Attempts()[0]
	assert.Equal(t, bb.StageConstruction, a.Stage)
	assert.Equal(t, bb.ClassTransport, a.Class)
	var e *bb.Error
	require.ErrorAs(t, a.Err, &e)
	assert.False(t, e.Dispatched, "nothing is dispatched when construction fails")
	assert.ErrorIs(t, a.Err, dial)
}

func TestExhaustionErrorCarriesOneAttemptPerCandidateAndUnwrapsToCauses(t *testing.T) {
	ps := fakes(bb.KindExtension, bb.KindHostBridge, bb.KindCDPInspect, bb.KindLocal)
	ps[0].Skip = bb.CodeNoClient
	refused := errors.New("connection refused")
	ps[1].NewBackend = failingBackend(bb.KindHostBridge, bbt.TransportErr(bb.CodeTransportError))
	ps[2].BuildErr = &bb.Error{Class: bb.ClassTransport, Code: bb.CodeUnreachable, Detail: "version_fetch_failed",
		Message: "GET /json/version failed", Err: refused}
	launch := errors.New("chromium not installed")
	ps[3].BuildErr = launch
	sel, _ := fakeSelector(bb.Options{}, ps...)
	c := openClient(t, sel, bb.Invocation{Mode: "auto"})

	_, err := c.Send(context.Background(), evalCommand)
	var se *bb.SelectionError
	require.ErrorAs(t, err, &se)
	assert.False(t, se.Pinned)
	assert.Equal(t, bb.ModeAuto, se.Mode)
	require.Len(t, se.Attempts, 4)

	a := se.Attempts
	assert.Equal(t, bb.Attempt{Kind: bb.KindExtension, Reason: "fake provider told to skip", Stage: bb.StageCandidateSelection,
		Code: bb.CodeNoClient, Message: "fake provider told to skip", Err: a[0].Err}, a[0])
	assert.Equal(t, []bb.Kind{bb.KindHostBridge, bb.KindCDPInspect, bb.KindLocal}, []bb.Kind{a[1].Kind, a[2].Kind, a[3].Kind})
	assert.Equal(t, []bb.Stage{bb.StageSend, bb.StageConstruction, bb.StageConstruction}, []bb.Stage{a[1].Stage, a[2].Stage, a[3].Stage})
	assert.Equal(t, "fake: host-bridge", a[1].Reason)
	assert.Equal(t, bb.CodeTransportError, a[1].Code)
	assert.Equal(t, "fake transport failure", a[1].Message)
	assert.Equal(t, bb.CodeUnreachable, a[2].Code)
	assert.Equal(t, "version_fetch_failed", a[2].Detail)
	assert.Equal(t, "GET /json/version failed", a[2].Message)
	assert.Equal(t, bb.CodeTransportError, a[3].Code)
	assert.Equal(t, "chromium not installed", a[3].Message)
	for _, x := range a[1:] {
		assert.Equal(t, bb.ClassTransport, x.Class)
	}

	assert.ErrorIs(t, err, refused)
	assert.ErrorIs(t, err, launch)
	assert.ErrorIs(t, err, bb.ErrUnreachable)
	assert.ErrorIs(t, err, bb.ErrTransport)
	assert.ErrorIs(t, err, bb.ErrSkip)
	var e *bb.Error
	require.ErrorAs(t, err, &e)
	assert.ErrorIs(t, e, launch, "errors.As finds the deciding (last) failure first")
	assert.Contains(t, err.Error(), "host-bridge@send[transport_error], cdp-inspect@construction[unreachable], local@construction[transport_error]")
}

func TestNoProviderProposingGivesUnavailableSelectionError(t *testing.T) {
	ps := fakes(bb.KindExtension)
	ps[0].Skip = bb.CodeNoClient
	sel, _ := fakeSelector(bb.Options{}, ps...)
	_, err := openClient(t, sel, bb.Invocation{}).Send(context.Background(), evalCommand)
	var se *bb.SelectionError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, []string{"extension@candidate_selection[no_client]"}, summary(se.Attempts))

	sel, _ = fakeSelector(bb.Options{})
	_, err = openClient(t, sel, bb.Invocation{}).Send(context.Background(), evalCommand)
	require.ErrorAs(t, err, &se)
	assert.ErrorIs(t, err, bb.ErrUnavailable)
}

func TestProviderSelectionErrorEndsSelectionAtOnce(t *testing.T) {
	ps := fakes(bb.KindExtension, bb.KindLocal)
	boom := &bb.Error{Class: bb.ClassPolicy, Code: "forbidden", Message: "not allowed"}
	ps[0].Err = boom
	sel, _ := fakeSelector(bb.Options{}, ps...)
	_, err := openClient(t, sel, bb.Invocation{}).Send(context.Background(), evalCommand)
	require.ErrorIs(t, err, boom)
	assert.Zero(t, ps[1].Proposed())
	assert.Zero(t, ps[1].Builds())
}

func TestHooksObserveAttemptsFailoverAndStick(t *testing.T) {
	var events []string
	hooks := bb.Hooks{
		AttemptStart: func(_ bb.Invocation, c bb.Candidate) { events = append(events, "start "+string(c.Kind)) },
		AttemptDone: func(_ bb.Invocation, a bb.Attempt, _ time.Duration) {
			events = append(events, "done "+summary([]bb.Attempt{a})[0])
		},
		Failover: func(_ bb.Invocation, a bb.Attempt) { events = append(events, "failover "+string(a.Kind)) },
		Stick:    func(_ bb.Invocation, k bb.Kind) { events = append(events, "stick "+string(k)) },
		Cooldown: func(key string, d time.Duration) { events = append(events, "cooldown "+key+" "+d.String()) },
	}
	ps := fakes(bb.KindExtension, bb.KindCDPInspect, bb.KindLocal)
	ps[0].Skip = bb.CodeNoClient
	ps[1].BuildErr = bbt.TransportErr(bb.CodeUnreachable)
	ps[1].CooldownKey, ps[1].CooldownFor = cdpinspect.CooldownKey, time.Second
	sel, _ := fakeSelector(bb.Options{Hooks: hooks}, ps...)
	_, err := openClient(t, sel, bb.Invocation{}).Send(context.Background(), evalCommand)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"done extension@candidate_selection[no_client]",
		"start cdp-inspect",
		"done cdp-inspect@construction[unreachable]",
		"cooldown desktop-auto 1s",
		"failover cdp-inspect",
		"start local",
		"done local@success",
		"stick local",
	}, events)
}

func TestFailoverHookAndLogNotEmittedForTheLastCandidate(t *testing.T) {
	var failovers int
	ps := fakes(bb.KindExtension, bb.KindLocal)
	ps[0].BuildErr = bbt.TransportErr("")
	ps[1].BuildErr = bbt.TransportErr("")
	sel, logs := fakeSelector(bb.Options{Hooks: bb.Hooks{Failover: func(bb.Invocation, bb.Attempt) { failovers++ }}}, ps...)
	_, err := openClient(t, sel, bb.Invocation{}).Send(context.Background(), evalCommand)
	require.ErrorIs(t, err, bb.ErrTransport)
	assert.Equal(t, 1, failovers, "the walk moved past the first candidate only")
	recs := logs.Find("transport-level failure, failing over to next candidate")
	require.Len(t, recs, 1)
	assert.Equal(t, bb.KindExtension, recs[0].Attrs["candidateKind"])
}

func TestProtocolErrorOnFirstCommandKeepsTheBackendSticky(t *testing.T) {
	ps := fakes(bb.KindLocal)
	ps[0].NewBackend = failingBackend(bb.KindLocal, bbt.ProtocolErr(-32000, "Cannot navigate to invalid URL"))
	sel, logs := fakeSelector(bb.Options{}, ps...)
	c := openClient(t, sel, bb.Invocation{})

	_, err := c.Send(context.Background(), bb.Command{Method: "Page.navigate"})
	require.ErrorIs(t, err, bb.ErrServerError)
	assert.Equal(t, bb.KindLocal, c.Kind(), "the browser answered: it serves the invocation")
	_, err = c.Send(context.Background(), bb.Command{Method: "Page.navigate"})
	require.NoError(t, err)
	assert.Equal(t, 1, ps[0].Builds(), "no second launch for the next command")
	require.Len(t, ps[0].Backends(), 1)
	assert.False(t, ps[0].Backends()[0].Closed())
	assert.Len(t, ps[0].Backends()[0].Calls(), 2)
	assert.Equal(t, 1, countMsg(logs, "candidate list built"))
}

func TestRetryAfterFailedSelectionReportsOnlyThatWalksAttempts(t *testing.T) {
	ps := fakes(bb.KindCDPInspect, bb.KindLocal)
	ps[0].BuildErr = bbt.TransportErr(bb.CodeUnreachable)
	ps[1].BuildErr = bbt.TransportErr(bb.CodeLaunchFailed)
	sel, _ := fakeSelector(bb.Options{}, ps...)
	c := openClient(t, sel, bb.Invocation{})
	for range 2 {
		_, err := c.Send(context.Background(), evalCommand)
		var se *bb.SelectionError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, []string{"cdp-inspect@construction[unreachable]", "local@construction[launch_failed]"}, summary(se.Attempts))
	}
	assert.Len(t, c.Attempts(), 4, "Attempts keeps the whole history")
}

func TestSendWithCancelledContextBuildsNothing(t *testing.T) {
	ps := fakes(bb.KindLocal)
	sel, _ := fakeSelector(bb.Options{}, ps...)
	c := openClient(t, sel, bb.Invocation{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 20 { // the walk token and ctx.Done are both ready: never build
		_, err := c.Send(ctx, evalCommand)
		require.ErrorIs(t, err, bb.ErrAborted)
	}
	assert.Zero(t, ps[0].Builds())
}

func TestEverySelectionFailureWithoutATriedCandidateIsUnavailable(t *testing.T) {
	ps := fakes(bb.KindExtension, bb.KindCDPInspect)
	ps[0].Skip = bb.CodeNoClient
	ps[1].Skip = bb.CodeCooldown
	sel, _ := fakeSelector(bb.Options{Grace: -1}, ps...)
	for _, mode := range []bb.Mode{bb.ModeAuto, bb.Mode("extension"), bb.Mode("cdp-inspect")} {
		_, err := openClient(t, sel, bb.Invocation{Mode: mode}).Send(context.Background(), evalCommand)
		var se *bb.SelectionError
		require.ErrorAs(t, err, &se, mode)
		assert.ErrorIs(t, err, bb.ErrUnavailable, mode)
		assert.ErrorIs(t, err, &bb.Error{Code: bb.CodeNoCandidates}, mode)
		assert.NotErrorIs(t, err, bb.ErrTransport, mode)
	}
}

func TestDeadlineDuringConstructionIsTimeoutNotDispatched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := bb.ProviderFunc(hostproxytest.ReferenceDescriptor(bb.KindCDPInspect), func(bb.Invocation, bb.Env) (bb.Candidate, error) {
			return bb.Candidate{Build: func(ctx context.Context) (bb.ScopedClient, error) {
				<-ctx.Done() // a dial that never completes
				return nil, ctx.Err()
			}}, nil
		})
		local := &bbt.Provider{K: bb.KindLocal}
		sel := bb.NewSelector(bb.Options{Providers: []bb.Provider{hang, local}, Logger: bbt.DiscardLogger()})
		c := openClient(t, sel, bb.Invocation{})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := c.Send(ctx, evalCommand)
		require.ErrorIs(t, err, bb.ErrTimeout)
		var e *bb.Error
		require.ErrorAs(t, err, &e)
		assert.False(t, e.Dispatched)
		assert.Equal(t, bb.KindCDPInspect, e.Backend)
		assert.Zero(t, local.Builds(), "the caller's deadline is gone: no failover")
	})
}

func TestMalformedParamsAreRefusedBeforeAnythingIsSelected(t *testing.T) {
	ps := fakes(bb.KindExtension, bb.KindLocal)
	sel, _ := fakeSelector(bb.Options{}, ps...)
	c := openClient(t, sel, bb.Invocation{})
	for _, params := range []string{`[1,2]`, `"x"`, `7`, `{"a":`} {
		_, err := c.Send(context.Background(), bb.Command{Method: "Runtime.evaluate", Params: json.RawMessage(params)})
		require.ErrorIs(t, err, bb.ErrPolicy, params)
		assert.ErrorIs(t, err, &bb.Error{Code: bb.CodeInvalidParams}, params)
	}
	assert.Zero(t, ps[0].Proposed()+ps[1].Proposed(), "no candidate list was built")
	_, err := c.Send(context.Background(), bb.Command{Method: "Runtime.evaluate", Params: json.RawMessage(` null `)})
	require.NoError(t, err, "null params are no params")
}
