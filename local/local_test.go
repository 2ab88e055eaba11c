//go:build linux

package local

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/browserchain/browserchain/browserbackend"
)

func TestNothingLaunchedBeforeFirstSend(t *testing.T) {
	b, profile := newTestBrowser(t, Options{})
	ctx := testCtx(t)
	require.Empty(t, driverChildren(), "a driver of an earlier test is still running")

	// Build the candidate list and a client, subscribe: nothing may start.
	prov := NewProvider(b)
	cand, err := prov.Propose(browserbackend.Invocation{ConversationID: "c1"}, browserbackend.Env{Cooldowns: &browserbackend.Cooldowns{}})
	require.NoError(t, err)
	assert.Equal(t, browserbackend.KindLocal, cand.Kind)
	assert.Equal(t, ReasonAlwaysLast, cand.Reason)
	pinned, err := prov.Propose(browserbackend.Invocation{ConversationID: "c1", Mode: browserbackend.Mode("local")},
		browserbackend.Env{Pinned: true, Cooldowns: &browserbackend.Cooldowns{}})
	require.NoError(t, err)
	assert.Equal(t, ReasonPinned, pinned.Reason)
	require.NoError(t, cand.Probe(ctx), "preflight must pass on a set-up machine")
	c := b.Client("c1")
	_, cancel := c.Subscribe("")
	defer cancel()

	assert.False(t, b.Launched())
	assert.Empty(t, driverChildren(), "driver started before the first send")
	assert.Empty(t, profileProcesses(profile), "browser started before the first send")

	// The first send launches both.
	assert.Equal(t, "2", evalValue(t, ctx, c, "1+1"))
	assert.True(t, b.Launched())
	assert.Len(t, driverChildren(), 1)
	assert.NotEmpty(t, profileProcesses(profile))
	require.NoError(t, c.Close())
}

func TestOnePagePerConversation(t *testing.T) {
	b, _ := newTestBrowser(t, Options{})
	ctx := testCtx(t)

	a1 := b.Client("a")
	idA := targetID(t, ctx, a1)
	require.NoError(t, a1.Close())

	other := b.Client("b")
	idB := targetID(t, ctx, other)
	require.NoError(t, other.Close())

	a2 := b.Client("a") // a later invocation of the same conversation
	defer a2.Close()
	assert.Equal(t, idA, targetID(t, ctx, a2), "same conversation must reuse its page")
	assert.NotEqual(t, idA, idB, "two conversations must have two pages")
	assert.Equal(t, []string{"a", "b"}, b.Conversations())

	// State set by one invocation is visible to the next of that conversation.
	evalValue(t, ctx, a2, "window.marker = 'kept'")
	a3 := b.Client("a")
	defer a3.Close()
	assert.Equal(t, `"kept"`, evalValue(t, ctx, a3, "window.marker"))
	b3 := b.Client("b")
	defer b3.Close()
	assert.Equal(t, `"none"`, evalValue(t, ctx, b3, "window.marker || 'none'"))

	// A closed conversation gets a fresh page next time.
	require.NoError(t, b.CloseConversation("a"))
	a4 := b.Client("a")
	defer a4.Close()
	assert.NotEqual(t, idA, targetID(t, ctx, a4))
}

func TestMaxPagesClosesLeastRecentlyUsedIdlePage(t *testing.T) {
	b, _ := newTestBrowser(t, Options{MaxPages: 2, PageIdle: -1})
	ctx := testCtx(t)

	busy := b.Client("busy") // stays attached: must never be evicted
	defer busy.Close()
	busyID := targetID(t, ctx, busy)

	idle := b.Client("idle")
	targetID(t, ctx, idle)
	require.NoError(t, idle.Close())
	b.mu.Lock()
	idlePage := b.pages["idle"]
	b.mu.Unlock()

	third := b.Client("third")
	defer third.Close()
	targetID(t, ctx, third)
	<-idlePage.gone
	assert.Equal(t, []string{"busy", "third"}, b.Conversations(), "the idle page must be evicted")

	// Every page is in use: the bound is exceeded rather than a busy page closed.
	fourth := b.Client("fourth")
	defer fourth.Close()
	targetID(t, ctx, fourth)
	assert.Equal(t, []string{"busy", "fourth", "third"}, b.Conversations())
	assert.Equal(t, busyID, targetID(t, ctx, busy))
}

func TestSendHonoursContextCancellation(t *testing.T) {
	b, _ := newTestBrowser(t, Options{})
	ctx := testCtx(t)
	c := b.Client("cancel")
	defer c.Close()

	_, err := c.Send(ctx, browserbackend.Command{Method: "Runtime.enable"})
	require.NoError(t, err)
	started, stop := c.Subscribe("Runtime.consoleAPICalled")
	defer stop()

	// A command that never answers: an awaited promise that never settles.
	// The console event proves the browser is running it before we cancel.
	sendCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		params, _ := json.Marshal(map[string]any{
			"expression":   `console.log("started"); new Promise(() => {})`,
			"awaitPromise": true,
		})
		_, err := c.Send(sendCtx, browserbackend.Command{Method: "Runtime.evaluate", Params: params})
		errc <- err
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the command never started in the browser")
	}
	cancel()
	select {
	case err = <-errc:
	case <-ctx.Done():
		t.Fatal("Send ignored the cancelled context")
	}
	var e *browserbackend.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, browserbackend.ClassAborted, e.Class)
	assert.Equal(t, browserbackend.CodeCancelled, e.Code)
	assert.True(t, e.Dispatched)
	assert.Equal(t, "Runtime.evaluate", e.Method)
	assert.Equal(t, browserbackend.KindLocal, e.Backend)

	// The page still answers other commands.
	assert.Equal(t, "3", evalValue(t, ctx, c, "1+2"))

	// A deadline that has already passed is a timeout, not dispatched.
	past, cancelPast := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancelPast()
	_, err = c.Send(past, browserbackend.Command{Method: "Runtime.evaluate"})
	require.ErrorAs(t, err, &e)
	assert.Equal(t, browserbackend.ClassTimeout, e.Class)
	assert.False(t, e.Dispatched)
}

func TestCloseLeavesNoBrowserOrDriverProcess(t *testing.T) {
	// Default options: a temporary profile that Close must remove.
	b := New(Options{Logger: quietLogger()})
	t.Cleanup(func() { _ = b.Close() })
	ctx := testCtx(t)
	c1, c2 := b.Client("x"), b.Client("y")
	evalValue(t, ctx, c1, "1")
	evalValue(t, ctx, c2, "1")

	b.mu.Lock()
	profile, driverPID := b.st.profileDir, b.st.driverPID
	b.mu.Unlock()
	t.Cleanup(func() { killProfileProcesses(profile) })
	require.NotEmpty(t, profileProcesses(profile), "the accounting must see the running browser")
	require.NotZero(t, driverPID)
	require.True(t, alive(driverPID))

	require.NoError(t, b.Close())
	require.NoError(t, b.Close(), "Close is idempotent")

	assert.Empty(t, profileProcesses(profile), "Chromium processes outlived Close")
	assert.False(t, alive(driverPID), "the Playwright driver outlived Close")
	assert.Empty(t, driverChildren())
	_, err := os.Stat(profile)
	assert.True(t, os.IsNotExist(err), "temporary profile not removed: %v", err)

	_, err = c1.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate"})
	assert.ErrorIs(t, err, browserbackend.ErrClosed)
	_, err = b.Client("z").Send(ctx, browserbackend.Command{Method: "Runtime.evaluate"})
	assert.ErrorIs(t, err, browserbackend.ErrClosed)
}

func TestCloseDoesNotHangOnAWedgedDriver(t *testing.T) {
	b, profile := newTestBrowser(t, Options{})
	b.setCloseTimeout(200 * time.Millisecond)
	ctx := testCtx(t)
	evalValue(t, ctx, b.Client("w"), "1")
	b.mu.Lock()
	driverPID := b.st.driverPID
	b.mu.Unlock()

	// A stopped driver answers nothing: the graceful close cannot finish.
	require.NoError(t, syscall.Kill(driverPID, syscall.SIGSTOP))
	t.Cleanup(func() { _ = syscall.Kill(driverPID, syscall.SIGKILL) })
	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("Close hung on a wedged driver")
	}
	assert.False(t, alive(driverPID), "the wedged driver must be killed")
	assert.Empty(t, profileProcesses(profile), "browser processes outlived Close")
}

func TestLaunchFailureIsTransportLaunchFailed(t *testing.T) {
	for name, tc := range map[string]struct {
		opts    Options
		missing bool
	}{
		"missing executable": {Options{ExecutablePath: "/nonexistent/chromium"}, true},
		"missing driver":     {Options{DriverDirectory: "/nonexistent/driver"}, true},
		"not a browser":      {Options{ExecutablePath: "/bin/false"}, false}, // Playwright starts it; it exits at once
	} {
		t.Run(name, func(t *testing.T) {
			b, profile := newTestBrowser(t, tc.opts)
			ctx := testCtx(t)
			c := b.Client("c")
			defer c.Close()
			_, err := c.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate"})
			require.Error(t, err)
			assert.ErrorIs(t, err, browserbackend.ErrTransport)
			var e *browserbackend.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, browserbackend.CodeLaunchFailed, e.Code)
			assert.Equal(t, browserbackend.KindLocal, e.Backend)
			if tc.missing {
				assert.Equal(t, DetailNotInstalled, e.Detail)
				assert.Contains(t, e.Error(), "scripts/setup.sh", "remediation hint missing")
			} else {
				assert.Empty(t, e.Detail)
				assert.NotContains(t, e.Error(), Remediation, "an installed browser's failure is not an install problem")
				assert.Contains(t, e.Error(), "exitCode=1", "the browser's own failure is its cause")
			}
			assert.Empty(t, driverChildren(), "a failed launch left the driver running")
			assert.Empty(t, profileProcesses(profile))
			assert.False(t, b.Launched())

			// Build (the selector's construction stage) reports the same.
			cand, err := NewProvider(b).Propose(browserbackend.Invocation{}, browserbackend.Env{})
			require.NoError(t, err)
			_, err = cand.Build(ctx)
			assert.ErrorIs(t, err, &browserbackend.Error{Class: browserbackend.ClassTransport, Code: browserbackend.CodeLaunchFailed})
		})
	}
}

// TestFailedLaunchOfAnInstalledBrowserSaysItsCause: when Chromium is
// installed but cannot start on its profile (in use by another Chromium, or
// not a directory), the error carries the browser's own words and no
// install hint, and the descriptor's remediation points at that error.
func TestFailedLaunchOfAnInstalledBrowserSaysItsCause(t *testing.T) {
	inUse := t.TempDir()
	owner, _ := newTestBrowser(t, Options{ProfileDir: inUse})
	oc := owner.Client("c")
	defer oc.Close()
	_, err := oc.Send(testCtx(t), browserbackend.Command{Method: "Runtime.evaluate", Params: []byte(`{"expression":"1"}`)})
	require.NoError(t, err)

	file := filepath.Join(t.TempDir(), "profile")
	require.NoError(t, os.WriteFile(file, nil, 0o600))

	for name, tc := range map[string]struct{ profile, cause string }{
		"profile in use":          {inUse, "ProcessSingleton"},
		"profile is a plain file": {file, "not a directory"},
	} {
		t.Run(name, func(t *testing.T) {
			// Not newTestBrowser: its cleanup kills every process on the
			// profile, the owner's among them.
			b := New(Options{ProfileDir: tc.profile, Logger: quietLogger()})
			t.Cleanup(func() { _ = b.Close() })
			c := b.Client("c")
			defer c.Close()
			_, err := c.Send(testCtx(t), browserbackend.Command{Method: "Runtime.evaluate"})
			var e *browserbackend.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, browserbackend.CodeLaunchFailed, e.Code)
			assert.Empty(t, e.Detail)
			assert.Contains(t, e.Error(), tc.cause)
			assert.NotContains(t, e.Error(), Remediation)
			hints := Descriptor.Remediation(browserbackend.Attempt{Kind: browserbackend.KindLocal, Code: e.Code, Detail: e.Detail, Err: e})
			require.NotEmpty(t, hints)
			assert.NotContains(t, strings.Join(hints, " "), "setup.sh")
			assert.False(t, b.Launched())
		})
	}
	assert.True(t, owner.Launched(), "the profile's owner is untouched")
}

func TestRemediationInstallsOnlyWhatIsMissing(t *testing.T) {
	missing := Descriptor.Remediation(browserbackend.Attempt{Kind: browserbackend.KindLocal,
		Code: browserbackend.CodeLaunchFailed, Detail: DetailNotInstalled})
	assert.Contains(t, strings.Join(missing, " "), "scripts/setup.sh")
	failed := Descriptor.Remediation(browserbackend.Attempt{Kind: browserbackend.KindLocal, Code: browserbackend.CodeLaunchFailed})
	assert.NotContains(t, strings.Join(failed, " "), "setup.sh")
	assert.Empty(t, Descriptor.Remediation(browserbackend.Attempt{Kind: browserbackend.KindLocal, Code: browserbackend.CodeBrowserGone}))
}

func TestTypedCDProtoCallsAndLoadEvent(t *testing.T) {
	b, _ := newTestBrowser(t, Options{})
	ctx := testCtx(t)
	srv := fixture(t)
	// Through the selector's per-invocation Client, which is a cdp.Session.
	sel := browserbackend.NewSelector(browserbackend.Options{
		Providers: []browserbackend.Provider{NewProvider(b)},
		Logger:    quietLogger(),
	})
	s := sel.Client(browserbackend.Invocation{ConversationID: "typed", InterfaceID: "cli"})
	defer s.Close()

	_, err := cdp.Call(ctx, s, page.Enable, page.EnableParams{})
	require.NoError(t, err)
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	loads := cdp.Events(loadCtx, s, page.LoadEventFired)

	nav, err := cdp.Call(ctx, s, page.Navigate, page.NavigateParams{URL: srv.URL})
	require.NoError(t, err)
	assert.Empty(t, nav.ErrorText)
	assert.NotEmpty(t, nav.FrameID)
	for ev, err := range loads {
		require.NoError(t, err)
		assert.Positive(t, float64(ev.Timestamp))
		break
	}

	ev, err := cdp.Call(ctx, s, runtime.Evaluate, runtime.EvaluateParams{Expression: "document.title", ReturnByValue: new(true)})
	require.NoError(t, err)
	require.Nil(t, ev.ExceptionDetails)
	assert.JSONEq(t, `"local fixture"`, string(ev.Result.Value))

	shot, err := cdp.Call(ctx, s, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng})
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(shot.Data)) // jsonv2 decodes the base64

	require.NoError(t, err)
	assert.Positive(t, img.Bounds().Dx())
	assert.Positive(t, img.Bounds().Dy())
	assert.Equal(t, browserbackend.KindLocal, s.Kind())
}

func TestSubscribeAllEventsAndClosedOnClientClose(t *testing.T) {
	b, _ := newTestBrowser(t, Options{})
	ctx := testCtx(t)
	srv := fixture(t)
	c := b.Client("events")
	all, cancelAll := c.Subscribe("") // before the first send: still delivered
	defer cancelAll()
	loads, cancelLoads := c.Subscribe("Page.loadEventFired")
	defer cancelLoads()

	_, err := c.Send(ctx, browserbackend.Command{Method: "Page.enable"})
	require.NoError(t, err)
	params, _ := json.Marshal(map[string]string{"url": srv.URL})
	_, err = c.Send(ctx, browserbackend.Command{Method: "Page.navigate", Params: params})
	require.NoError(t, err)

	seen := map[string]bool{}
	for !seen["Page.loadEventFired"] {
		select {
		case ev := <-all:
			seen[ev.Method] = true
		case <-ctx.Done():
			t.Fatalf("no load event among %v", seen)
		}
	}
	assert.True(t, seen["Page.frameNavigated"], "the all-events subscription must see every method: %v", seen)
	select {
	case ev := <-loads:
		assert.Equal(t, "Page.loadEventFired", ev.Method)
		assert.Contains(t, string(ev.Params), "timestamp")
	case <-ctx.Done():
		t.Fatal("the method subscription missed the load event")
	}

	require.NoError(t, c.Close())
	for range all { // drains what is buffered, then ends: the channel is closed
	}
	_, open := <-loads
	assert.False(t, open)
}

func TestProtocolErrorsCarryCDPCode(t *testing.T) {
	b, _ := newTestBrowser(t, Options{})
	ctx := testCtx(t)
	c := b.Client("errs")
	defer c.Close()

	_, err := c.Send(ctx, browserbackend.Command{Method: "Nope.nothing"})
	assert.ErrorIs(t, err, browserbackend.ErrProtocol)
	assert.ErrorIs(t, err, browserbackend.ErrMethodNotFound)

	_, err = c.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":5}`)})
	assert.ErrorIs(t, err, browserbackend.ErrProtocol)
	assert.ErrorIs(t, err, browserbackend.ErrInvalidParams)

	_, err = c.Send(ctx, browserbackend.Command{Method: "DOM.describeNode", Params: json.RawMessage(`{"nodeId":987654}`)})
	assert.ErrorIs(t, err, browserbackend.ErrProtocol)

	_, err = c.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`[1,2]`)})
	assert.ErrorIs(t, err, browserbackend.ErrPolicy, "non-object params are refused before sending")
	assert.ErrorIs(t, err, &browserbackend.Error{Code: browserbackend.CodeInvalidParams})

	_, err = c.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate", SessionID: "X"})
	assert.ErrorIs(t, err, browserbackend.ErrNotSupported)

	assert.Equal(t, "4", evalValue(t, ctx, c, "2+2"), "errors must not break the page")
}

func TestClosedPageIsTransportErrorAndNextInvocationGetsNewPage(t *testing.T) {
	b, _ := newTestBrowser(t, Options{})
	ctx := testCtx(t)
	c := b.Client("p")
	defer c.Close()
	first := targetID(t, ctx, c)

	c.mu.Lock()
	p := c.p
	c.mu.Unlock()
	require.NoError(t, p.page.Close())
	<-p.gone

	_, err := c.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate"})
	assert.ErrorIs(t, err, browserbackend.ErrTransport)

	next := b.Client("p")
	defer next.Close()
	expectPageLost(t, ctx, next)
	assert.NotEqual(t, first, targetID(t, ctx, next))
}

func TestKilledBrowserFailsInFlightAndRelaunches(t *testing.T) {
	b, profile := newTestBrowser(t, Options{})
	ctx := testCtx(t)
	c := b.Client("k")
	defer c.Close()
	evalValue(t, ctx, c, "1")
	b.mu.Lock()
	st := b.st
	b.mu.Unlock()

	t0 := time.Now()
	require.NotZero(t, killProfileProcesses(profile))
	select {
	case <-st.dead:
	case <-ctx.Done():
		t.Fatal("the dead browser was not noticed")
	}
	t.Logf("dead noticed after %v", time.Since(t0))
	_, err := c.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate"})
	assert.ErrorIs(t, err, browserbackend.ErrTransport)
	t.Logf("send failed after %v", time.Since(t0))

	again := b.Client("k")
	defer again.Close()
	expectPageLost(t, ctx, again)
	assert.Equal(t, "2", evalValue(t, ctx, again, "1+1"), "the next invocation must relaunch")
	t.Logf("relaunched after %v", time.Since(t0))
	assert.Len(t, driverChildren(), 1, "the dead browser's driver must be stopped")
}

func TestConcurrentFirstUsesShareOneLaunch(t *testing.T) {
	b, _ := newTestBrowser(t, Options{})
	ctx := testCtx(t)

	// One waiter gives up at once; it must not disturb the others.
	gaveUp, cancel := context.WithCancel(ctx)
	cancel()
	_, err := b.Client("quitter").Send(gaveUp, browserbackend.Command{Method: "Runtime.evaluate"})
	assert.ErrorIs(t, err, browserbackend.ErrAborted)

	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			c := b.Client(fmt.Sprintf("conv-%d", i%3))
			defer c.Close()
			_, errs[i] = c.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1"}`)})
		})
	}
	wg.Wait()
	for _, err := range errs {
		assert.NoError(t, err)
	}
	assert.Len(t, driverChildren(), 1, "concurrent first uses must share one launch")
	assert.Len(t, b.Conversations(), 3)
}

// ---- host killed (LOC-3) ---------------------------------------------------

const helperEnv = "BROWSERCHAIN_LOCAL_HOST_HELPER"

// runHostHelper launches a browser, prints its profile dir and driver pid,
// and blocks until it is killed.
func runHostHelper() {
	b := New(Options{ProfileDir: os.Getenv(helperEnv), Logger: quietLogger()})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c := b.Client("h")
	if _, err := c.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1"}`)}); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	b.mu.Lock()
	fmt.Println("ready", b.st.driverPID)
	b.mu.Unlock()
	<-ctx.Done() // the parent kills us long before
	os.Exit(2)
}

func TestHostKilledLeavesNoProcess(t *testing.T) {
	profile := t.TempDir()
	t.Cleanup(func() { killProfileProcesses(profile) })
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+profile)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	f := strings.Fields(line)
	require.Len(t, f, 2, "helper said %q", line)
	require.Equal(t, "ready", f[0], "helper said %q", line)
	driverPID, err := strconv.Atoi(f[1])
	require.NoError(t, err)

	victims := profileProcesses(profile)
	require.NotEmpty(t, victims)
	fds := []int{pidfd(t, driverPID)}
	for _, p := range victims {
		if fd, err := unix.PidfdOpen(p.pid, 0); err == nil {
			fds = append(fds, fd)
		}
	}

	// SIGKILL: no deferred cleanup runs in the host. The driver sees its
	// stdin close and, exiting, takes the browser with it.
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	for _, fd := range fds {
		waitExit(t, fd)
	}
	assert.Empty(t, profileProcesses(profile), "browser processes outlived the killed host")
	assert.False(t, alive(driverPID), "driver outlived the killed host")
}

// pidfd opens a pidfd for pid (Linux ≥ 5.3), closed at cleanup.
func pidfd(t *testing.T, pid int) int {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	require.NoError(t, err)
	return fd
}

// waitExit blocks until the process behind fd has exited (its pidfd becomes
// readable), with testTimeout as a hang guard, and closes fd.
func waitExit(t *testing.T, fd int) {
	t.Helper()
	defer unix.Close(fd)
	deadline := time.Now().Add(testTimeout)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(time.Until(deadline).Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		require.NoError(t, err)
		require.Equal(t, 1, n, "process did not exit within %v", testTimeout)
		return
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	for _, p := range listProcesses() {
		if p.pid == pid {
			return true
		}
	}
	return false
}

// ---- error text parsing (unit) ---------------------------------------------

func TestParseProtocolError(t *testing.T) {
	for _, tc := range []struct {
		msg    string
		ok     bool
		method string
		code   int
	}{
		{"Protocol error (Nope.nope): 'Nope.nope' wasn't found", true, "Nope.nope", -32601},
		{"Protocol error (Runtime.evaluate): Invalid parameters: Failed to deserialize params.expression", true, "Runtime.evaluate", -32602},
		{"Protocol error (DOM.describeNode): Could not find node with given id", true, "DOM.describeNode", -32000},
		{"Protocol error (Target.attachToTarget): Session with given id not found.", true, "Target.attachToTarget", -32001},
		{"Protocol error (X.y): Invalid request", true, "X.y", -32600},
		{"Protocol error (Page.navigate): Target crashed", true, "Page.navigate", 0},
		{"Protocol error (Page.navigate): Session closed. Most likely the page has been closed.", true, "Page.navigate", 0},
		{"Protocol error (Runtime.evaluate): Cannot find context with specified id\nCall log:\n  - x", true, "Runtime.evaluate", -32000},
		{"Target page, context or browser has been closed", false, "", 0},
		{"Protocol error without parens", false, "", 0},
	} {
		m, code, text, ok := parseProtocolError(tc.msg)
		assert.Equal(t, tc.ok, ok, tc.msg)
		assert.Equal(t, tc.method, m, tc.msg)
		assert.Equal(t, tc.code, code, tc.msg)
		if ok {
			assert.NotContains(t, text, "\n", "call log must be cut")
			assert.NotContains(t, text, "Protocol error", "prefix must be cut")
		}
	}
}

func TestClassifySendError(t *testing.T) {
	// Without a live page: a non-Playwright error means the driver link broke.
	e := classifySendError("M.x", errors.New("Connection closed"), nil)
	assert.ErrorIs(t, e, browserbackend.ErrTransport)
	assert.True(t, e.Dispatched)
}
