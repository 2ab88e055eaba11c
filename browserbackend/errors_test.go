package browserbackend_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bb "github.com/browserchain/browserchain/browserbackend"
	bbt "github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
)

// SEL-10: one error family for errors.Is/As.

func TestErrorsIsMatchesCDPCodeSentinels(t *testing.T) {
	for _, tc := range []struct {
		code     int
		sentinel error
	}{
		{-32601, bb.ErrMethodNotFound},
		{-32602, bb.ErrInvalidParams},
		{-32000, bb.ErrServerError},
		{-32001, bb.ErrSessionNotFound},
		{-32700, bb.ErrParseError},
		{-32600, bb.ErrInvalidRequest},
		{-32603, bb.ErrInternalError},
	} {
		err := fmt.Errorf("tool: %w", bb.ProtocolError(tc.code, "reply"))
		assert.ErrorIs(t, err, tc.sentinel, tc.code)
		if tc.code == -32001 {
			// The session is gone: the same concept, class and sentinel as a
			// session the backend reported gone itself (PXY-6).
			assert.ErrorIs(t, err, bb.ErrTransport)
			assert.ErrorIs(t, err, &bb.Error{CDPCode: -32001})
			continue
		}
		assert.ErrorIs(t, err, bb.ErrProtocol)
		assert.NotErrorIs(t, err, bb.ErrTransport)
		for _, other := range []error{bb.ErrMethodNotFound, bb.ErrInvalidParams, bb.ErrServerError, bb.ErrSessionNotFound} {
			if other != tc.sentinel {
				assert.NotErrorIs(t, err, other, tc.code)
			}
		}
	}
}

func TestErrorsIsMatchesClassAndCodeSentinels(t *testing.T) {
	classes := map[bb.Class]error{
		bb.ClassTransport: bb.ErrTransport, bb.ClassProtocol: bb.ErrProtocol, bb.ClassTimeout: bb.ErrTimeout,
		bb.ClassAborted: bb.ErrAborted, bb.ClassClosed: bb.ErrClosed, bb.ClassUnavailable: bb.ErrUnavailable,
		bb.ClassPolicy: bb.ErrPolicy,
	}
	for class, sentinel := range classes {
		err := &bb.Error{Class: class}
		for c2, s2 := range classes {
			assert.Equal(t, c2 == class, errors.Is(err, s2), "%s vs %s", class, c2)
		}
		assert.ErrorIs(t, fmt.Errorf("wrapped: %w", err), sentinel)
	}
	codes := map[string]error{
		bb.CodeUnreachable: bb.ErrUnreachable, bb.CodeNonLoopback: bb.ErrNonLoopback, bb.CodeNonChrome: bb.ErrNonChrome,
		bb.CodeInvalidResponse: bb.ErrInvalidResponse, bb.CodeNoTargets: bb.ErrNoTargets,
		bb.CodeSessionNotFound: bb.ErrSessionNotFound, bb.CodeTargetCrashed: bb.ErrTargetCrashed,
		bb.CodeExtensionRequired: bb.ErrExtensionRequired, bb.CodeNotSupported: bb.ErrNotSupported,
	}
	for code, sentinel := range codes {
		err := bb.TransportError(code, "x", nil)
		assert.ErrorIs(t, err, sentinel, code)
		assert.ErrorIs(t, err, &bb.Error{Class: bb.ClassTransport, Code: code}, "class and code together")
		assert.NotErrorIs(t, err, &bb.Error{Class: bb.ClassProtocol, Code: code})
	}
	assert.NotErrorIs(t, bb.TransportError("x", "", nil), &bb.Error{}, "an empty pattern matches nothing")
}

func TestClassifyClassifiesOnce(t *testing.T) {
	assert.Nil(t, bb.Classify(nil, true))

	e := bb.ProtocolError(-32000, "x")
	assert.Same(t, e, bb.Classify(fmt.Errorf("wrap: %w", e), true), "an *Error in the chain is kept")

	c := bb.Classify(context.Canceled, true)
	assert.Equal(t, bb.ClassAborted, c.Class)
	assert.Equal(t, bb.CodeCancelled, c.Code)
	assert.ErrorIs(t, c, context.Canceled)

	d := bb.Classify(fmt.Errorf("read: %w", context.DeadlineExceeded), true)
	assert.Equal(t, bb.ClassTimeout, d.Class)
	assert.True(t, d.Dispatched)

	plain := errors.New("EOF")
	p := bb.Classify(plain, false)
	assert.Equal(t, bb.ClassTransport, p.Class)
	assert.Equal(t, bb.CodeTransportError, p.Code)
	assert.False(t, p.Dispatched)
	assert.ErrorIs(t, p, plain)
}

func TestErrorStringNamesPackageBackendMethodClassAndCode(t *testing.T) {
	err := &bb.Error{Class: bb.ClassProtocol, Code: bb.CodeCDPError, CDPCode: -32601, Method: "Foo.bar",
		Backend: bb.KindCDPInspect, Message: "'Foo.bar' wasn't found", Err: errors.New("cause")}
	assert.Equal(t, "browserbackend: cdp-inspect Foo.bar protocol/cdp_error (-32601): 'Foo.bar' wasn't found: cause", err.Error())
	assert.Equal(t, "browserbackend: closed", (&bb.Error{Class: bb.ClassClosed}).Error())
}

func TestSelectionErrorUnwrapsToDecidingErrorAndEveryAttempt(t *testing.T) {
	first := bb.TransportError(bb.CodeUnreachable, "a", nil)
	last := bb.TransportError(bb.CodeLaunchFailed, "b", errors.New("exec: chromium: not found"))
	se := &bb.SelectionError{Mode: bb.ModeAuto, Err: last, Attempts: []bb.Attempt{
		{Kind: bb.KindCDPInspect, Stage: bb.StageConstruction, Code: first.Code, Err: first},
		{Kind: bb.KindLocal, Stage: bb.StageConstruction, Code: last.Code, Err: last},
	}}
	assert.Equal(t, []error{last, first}, se.Unwrap(), "deciding error first, no duplicates")
	assert.ErrorIs(t, se, bb.ErrUnreachable)
	assert.ErrorIs(t, se, &bb.Error{Code: bb.CodeLaunchFailed})
	var e *bb.Error
	require.ErrorAs(t, se, &e)
	assert.Same(t, last, e)
	assert.Equal(t, `browserbackend: no browser backend available (mode "auto"); attempts: cdp-inspect@construction[unreachable], local@construction[launch_failed]`, se.Error())
	assert.Contains(t, se.Report(), "No browser backend was available")

	empty := &bb.SelectionError{Mode: bb.Mode("local"), Pinned: true}
	assert.Contains(t, empty.Report(), "(none)")
}

func TestSkipMatchesErrSkip(t *testing.T) {
	err := bb.Skip(bb.CodeCooldown, "cooling")
	assert.ErrorIs(t, err, bb.ErrSkip)
	var se *bb.SkipError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, bb.CodeCooldown, se.Code)
	assert.NotErrorIs(t, errors.New("x"), bb.ErrSkip)
}

func TestModeKindAndActorKey(t *testing.T) {
	sel := bb.NewSelector(bb.Options{Providers: hostproxytest.Reference{}.Providers(), Logger: bbt.DiscardLogger()})
	k, ok := sel.ModeKind("cdp-inspect")
	assert.True(t, ok)
	assert.Equal(t, bb.KindCDPInspect, k)
	_, ok = sel.ModeKind(bb.ModeAuto)
	assert.False(t, ok)
	assert.Equal(t, bb.DefaultActorKey, bb.Invocation{}.ActorKey())
	assert.Equal(t, alice, bb.Invocation{ActorPrincipalID: alice}.ActorKey())
}

func TestContextErrorClassifiesCancellationAndDeadline(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	e := bb.ContextError(cancelled, "Page.navigate", false)
	assert.ErrorIs(t, e, bb.ErrAborted)
	assert.ErrorIs(t, e, bb.ErrAborted)
	assert.ErrorIs(t, e, context.Canceled)
	assert.Equal(t, "Page.navigate", e.Method)

	expired, stop := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer stop()
	e = bb.ContextError(expired, "Runtime.evaluate", true)
	assert.ErrorIs(t, e, bb.ErrTimeout)
	assert.ErrorIs(t, e, context.DeadlineExceeded)
	assert.True(t, e.Dispatched)
	assert.Contains(t, e.Message, "outcome unknown")
}
