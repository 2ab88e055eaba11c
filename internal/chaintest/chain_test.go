package chaintest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/internal/chromiumtest"
	"github.com/browserchain/browserchain/local"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newLocal starts nothing: the local browser launches at its first command
// and is closed (with all its processes) when the test ends.
func newLocal(t *testing.T) *local.Browser {
	b := local.New(local.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

// closedPort returns a loopback port that nothing listens on.
func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

func inspectConfig(port int, enabled bool) cdpinspect.Config {
	cfg := cdpinspect.DefaultConfig()
	cfg.Host = "127.0.0.1"
	cfg.Port = port
	cfg.Enabled = enabled
	cfg.ProbeTimeoutMs = 2000
	return cfg
}

func evaluate(ctx context.Context, t *testing.T, c *bb.Client, expr string) string {
	t.Helper()
	res, err := cdp.Call(ctx, c, runtime.Evaluate, runtime.EvaluateParams{Expression: expr, ReturnByValue: new(true)})
	require.NoError(t, err)
	return string(res.Result.Value)
}

func kinds(as []bb.Attempt) []string { return bb.AttemptSummary(as) }

func TestMacOSTurnWithoutChromeCoolsDownCDPInspectAndLocalServes(t *testing.T) {
	rec, logger := browserbackendtest.NewLogRecorder()
	cfg := inspectConfig(closedPort(t), false)
	sel := bb.NewSelector(bb.Options{
		Providers: []bb.Provider{
			cdpinspect.NewProvider(cfg, cdpinspect.WithUserDataDirs()),
			local.NewProvider(newLocal(t)),
		},
		Logger: logger,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	first := sel.Client(bb.Invocation{ConversationID: "c1", InterfaceID: "macos", ActorPrincipalID: "alice"})
	defer first.Close()
	assert.Equal(t, "2", evaluate(ctx, t, first, "1+1"))
	assert.Equal(t, bb.KindLocal, first.Kind())
	attempts := first.Attempts()
	require.Len(t, attempts, 2, kinds(attempts))
	assert.Equal(t, bb.KindCDPInspect, attempts[0].Kind)
	assert.Equal(t, bb.StageConstruction, attempts[0].Stage)
	assert.Equal(t, bb.ClassTransport, attempts[0].Class)
	assert.Equal(t, bb.CodeUnreachable, attempts[0].Code)
	assert.True(t, sel.Cooldowns().Active(cdpinspect.CooldownKey), "desktop-auto cooldown recorded")
	assert.Len(t, rec.Find("cooldown recorded after transport failure"), 1)

	// A second macos turn of another conversation inside the cooldown skips
	// cdp-inspect at selection: nothing is dialled.
	second := sel.Client(bb.Invocation{ConversationID: "c2", InterfaceID: "macos", ActorPrincipalID: "alice"})
	defer second.Close()
	assert.Equal(t, "4", evaluate(ctx, t, second, "2+2"))
	assert.Equal(t, bb.KindLocal, second.Kind())
	attempts = second.Attempts()
	require.Len(t, attempts, 2, kinds(attempts))
	assert.Equal(t, bb.KindCDPInspect, attempts[0].Kind)
	assert.Equal(t, bb.StageCandidateSelection, attempts[0].Stage)
	assert.Equal(t, bb.CodeCooldown, attempts[0].Code)
	assert.Equal(t, bb.StageSuccess, attempts[1].Stage)
	assert.Len(t, rec.Find("candidate skipped: cooldown active"), 1)
}

func TestChromiumKilledBeforeFirstCommandFailsOverToLocal(t *testing.T) {
	chrome := chromiumtest.Start(t)
	sel := bb.NewSelector(bb.Options{
		Providers: []bb.Provider{
			cdpinspect.NewProvider(inspectConfig(chrome.Port, true), cdpinspect.WithUserDataDirs()),
			local.NewProvider(newLocal(t)),
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// While Chrome runs, cdp-inspect serves.
	before := sel.Client(bb.Invocation{ConversationID: "before", InterfaceID: "cli"})
	assert.Equal(t, "2", evaluate(ctx, t, before, "1+1"))
	assert.Equal(t, bb.KindCDPInspect, before.Kind())
	require.NoError(t, before.Close())

	chrome.Kill()

	after := sel.Client(bb.Invocation{ConversationID: "after", InterfaceID: "cli"})
	defer after.Close()
	assert.Equal(t, "2", evaluate(ctx, t, after, "1+1"))
	assert.Equal(t, bb.KindLocal, after.Kind())
	attempts := after.Attempts()
	require.Len(t, attempts, 2, kinds(attempts))
	assert.Equal(t, bb.KindCDPInspect, attempts[0].Kind)
	assert.Equal(t, bb.ClassTransport, attempts[0].Class)
	// An explicitly enabled cdp-inspect is never cooled down (SEL-6).
	assert.False(t, sel.Cooldowns().Active(cdpinspect.CooldownKey))
}

func TestChromiumKilledMidCommandFailsAtOnceAndNextInvocationFailsOver(t *testing.T) {
	chrome := chromiumtest.Start(t)
	sel := bb.NewSelector(bb.Options{
		Providers: []bb.Provider{
			cdpinspect.NewProvider(inspectConfig(chrome.Port, true), cdpinspect.WithUserDataDirs()),
			local.NewProvider(newLocal(t)),
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	// The deadline is far away: the failure must come from the dead socket.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()

	client := sel.Client(bb.Invocation{ConversationID: "conv", InterfaceID: "cli"})
	defer client.Close()
	_, err := cdp.Call(ctx, client, runtime.Enable, cdp.Empty{})
	require.NoError(t, err)
	require.Equal(t, bb.KindCDPInspect, client.Kind())

	consoles, stop := client.Events("Runtime.consoleAPICalled")
	defer stop()
	done := make(chan error, 1)
	go func() {
		_, err := cdp.Call(ctx, client, runtime.Evaluate, runtime.EvaluateParams{
			Expression:   "console.log('armed'); new Promise(() => {})",
			AwaitPromise: new(true),
		})
		done <- err
	}()
	select {
	case <-consoles: // the browser is running the command
	case <-ctx.Done():
		t.Fatal("no console event")
	}
	chrome.Kill()

	err = <-done
	require.Error(t, err)
	assert.ErrorIs(t, err, bb.ErrTransport, "%v", err)
	assert.NoError(t, ctx.Err(), "failed because of the socket, not the deadline")
	// Sticky: the same invocation keeps its backend and returns its errors.
	_, err = client.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: []byte(`{"expression":"1"}`)})
	assert.ErrorIs(t, err, bb.ErrTransport)
	assert.Equal(t, bb.KindCDPInspect, client.Kind())

	// The conversation's next invocation tries the remembered cdp-inspect,
	// forgets it, and plain auto ends on local.
	next := sel.Client(bb.Invocation{ConversationID: "conv", InterfaceID: "cli"})
	defer next.Close()
	assert.Equal(t, "2", evaluate(ctx, t, next, "1+1"))
	assert.Equal(t, bb.KindLocal, next.Kind())
	k, ok := sel.Memo().Get("conv")
	assert.True(t, ok)
	assert.Equal(t, bb.KindLocal, k)
}
