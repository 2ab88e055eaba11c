//go:build linux

package local

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
)

// A hung (SIGSTOPped) Chromium: a command ends at its deadline with
// timeout, and Close still returns and leaves no process.
func TestStoppedBrowserTimesOutAndCloseLeavesNoProcess(t *testing.T) {
	b, profile := newTestBrowser(t, Options{})
	b.setCloseTimeout(200 * time.Millisecond)
	ctx := testCtx(t)
	c := b.Client("s")
	evalValue(t, ctx, c, "1")
	procs := profileProcesses(profile)
	require.NotEmpty(t, procs)
	for _, p := range procs {
		_ = syscall.Kill(p.pid, syscall.SIGSTOP)
	}
	t.Cleanup(func() {
		for _, p := range procs {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	})
	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := c.Send(sctx, browserbackend.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1"}`)})
	assert.ErrorIs(t, err, browserbackend.ErrTimeout)
	_ = b.Close() // reports that the context could not close gracefully

	assert.Empty(t, profileProcesses(profile), "Chromium processes outlived Close")
	assert.Empty(t, driverChildren(), "a driver outlived Close")
}

// Many conversations over the page cap, opened and closed concurrently.
func TestManyConversationsStayWithinThePageCap(t *testing.T) {
	b, profile := newTestBrowser(t, Options{MaxPages: 3, PageIdle: -1})
	ctx := testCtx(t)
	var wg sync.WaitGroup
	errs := make(chan error, 24)
	for i := 0; i < 24; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := b.Client(fmt.Sprintf("conv-%d", i))
			_, err := c.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1"}`)})
			c.Close()
			if i%2 == 0 {
				_ = b.CloseConversation(fmt.Sprintf("conv-%d", i))
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.LessOrEqual(t, len(b.Conversations()), 3)
	require.NoError(t, b.Close())
	assert.Empty(t, profileProcesses(profile))
}

// Sends of many conversations racing Close: every call returns a result or
// a typed error, and no process remains.
func TestConcurrentSendsRacingCloseAllReturnTyped(t *testing.T) {
	b, profile := newTestBrowser(t, Options{MaxPages: 4})
	ctx := testCtx(t)
	evalValue(t, ctx, b.Client("warm"), "1")
	const n = 40
	errs := make(chan error, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		go func() {
			<-start
			if i == n/2 {
				errs <- b.Close()
				return
			}
			c := b.Client(fmt.Sprintf("c%d", i%8))
			defer c.Close()
			_, err := c.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1"}`)})
			errs <- err
		}()
	}
	close(start)
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			var e *browserbackend.Error
			require.ErrorAs(t, err, &e, "untyped error %v", err)
			assert.Contains(t, []browserbackend.Class{browserbackend.ClassClosed, browserbackend.ClassTransport}, e.Class, "%v", err)
		}
	}
	require.NoError(t, b.Close())
	assert.Empty(t, profileProcesses(profile))
	assert.Empty(t, driverChildren())
}

// Chromium and the driver killed while Close runs: Close returns and no
// process remains.
func TestKillsDuringCloseLeaveNoProcess(t *testing.T) {
	b, profile := newTestBrowser(t, Options{})
	ctx := testCtx(t)
	evalValue(t, ctx, b.Client("kc"), "1")
	b.mu.Lock()
	driverPID := b.st.driverPID
	b.mu.Unlock()
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		killProfileProcesses(profile)
		_ = syscall.Kill(driverPID, syscall.SIGKILL)
	}()
	_ = b.Close() // may report the interrupted close
	<-killed
	assert.Empty(t, profileProcesses(profile))
	assert.Empty(t, driverChildren())
}
