//go:build linux

package local

import (
	"encoding/json"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
)

// The Playwright driver (node) killed while a command waits: the command
// fails with a transport error at once, no Chromium of the profile remains,
// and the next invocation relaunches.
func TestKilledDriverFailsInFlightCommandAndNextInvocationRelaunches(t *testing.T) {
	b, profile := newTestBrowser(t, Options{})
	ctx := testCtx(t)
	c := b.Client("d")
	defer c.Close()
	evalValue(t, ctx, c, "1")
	b.mu.Lock()
	st := b.st
	b.mu.Unlock()

	result := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		close(started)
		_, err := c.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate",
			Params: json.RawMessage(`{"expression":"new Promise(() => {})","awaitPromise":true}`)})
		result <- err
	}()
	<-started
	require.NoError(t, syscall.Kill(st.driverPID, syscall.SIGKILL))
	err := <-result
	require.Error(t, err)
	assert.ErrorIs(t, err, browserbackend.ErrTransport)
	assert.NotErrorIs(t, err, browserbackend.ErrTimeout)

	select {
	case <-st.dead:
	case <-ctx.Done():
		t.Fatal("the driver's death was not noticed")
	}
	again := b.Client("d")
	defer again.Close()
	expectPageLost(t, ctx, again)
	assert.Equal(t, "2", evalValue(t, ctx, again, "1+1"), "the next invocation must relaunch")
	require.NoError(t, b.Close())
	assert.Empty(t, profileProcesses(profile), "Chromium processes outlived Close")
	assert.False(t, alive(st.driverPID))
}

// Close while the first launch is still running returns, and leaves no
// process behind; the waiting Send fails with closed.
func TestCloseDuringLaunchLeavesNoProcess(t *testing.T) {
	b, profile := newTestBrowser(t, Options{})
	ctx := testCtx(t)
	c := b.Client("l")
	result := make(chan error, 1)
	go func() {
		_, err := c.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1"}`)})
		result <- err
	}()
	// wait until the launch has begun
	for {
		b.mu.Lock()
		l := b.launch
		b.mu.Unlock()
		if l != nil {
			break
		}
		runtime.Gosched()
	}
	require.NoError(t, b.Close())
	err := <-result
	assert.ErrorIs(t, err, browserbackend.ErrClosed)
	assert.Empty(t, profileProcesses(profile), "Chromium processes outlived Close")
	assert.Empty(t, driverChildren(), "a driver outlived Close")
}

// The driver killed while it launches the browser: the waiting Send fails
// with a transport error, nothing of that launch remains, and the next use
// launches again.
func TestDriverKilledDuringLaunchFailsAndNextUseRelaunches(t *testing.T) {
	b, profile := newTestBrowser(t, Options{})
	ctx := testCtx(t)
	result := make(chan error, 1)
	go func() {
		_, err := b.Client("kl").Send(ctx, browserbackend.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1"}`)})
		result <- err
	}()
	var drivers []procInfo
	for len(drivers) == 0 {
		drivers = driverChildren()
		runtime.Gosched()
	}
	require.NoError(t, syscall.Kill(drivers[0].pid, syscall.SIGKILL))
	err := <-result
	if err != nil { // the launch may have finished just before the kill
		assert.ErrorIs(t, err, browserbackend.ErrTransport)
	}
	c := b.Client("kl2")
	defer c.Close()
	assert.Equal(t, "2", evalValue(t, ctx, c, "1+1"))
	require.NoError(t, b.Close())
	assert.Empty(t, profileProcesses(profile))
	assert.Empty(t, driverChildren())
}
