package cdpinspect_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

func skipCode(t *testing.T, err error) string {
	t.Helper()
	require.Error(t, err)
	require.True(t, errors.Is(err, bb.ErrSkip), "want a skip, got %v", err)
	var s *bb.SkipError
	require.True(t, errors.As(err, &s))
	return s.Code
}

func TestProviderProposesDesktopAutoForMacOSOnly(t *testing.T) {
	cfg := cdpinspect.DefaultConfig() // enabled=false, desktopAuto on, 30 s
	p := cdpinspect.NewProvider(cfg)
	assert.Equal(t, bb.KindCDPInspect, p.Describe().Kind)
	env := bb.Env{Cooldowns: &bb.Cooldowns{}}

	c, err := p.Propose(bb.Invocation{InterfaceID: "macos"}, env)
	require.NoError(t, err)
	assert.Equal(t, bb.KindCDPInspect, c.Kind)
	assert.Regexp(t, `^desktopAuto:`, c.Reason)
	assert.Equal(t, cdpinspect.CooldownKey, c.CooldownKey)
	assert.Equal(t, 30*time.Second, c.CooldownFor)
	assert.NotNil(t, c.Build)
	assert.NotNil(t, c.Probe)

	for _, iface := range []string{"", "chrome-extension", "web", "cli", "windows", "MACOS"} {
		_, err := p.Propose(bb.Invocation{InterfaceID: iface}, env)
		assert.Equal(t, bb.CodeNotConfigured, skipCode(t, err), "interface %q", iface)
	}
}

func TestProviderSkipsMacOSWhenDesktopAutoDisabled(t *testing.T) {
	cfg := cdpinspect.DefaultConfig()
	cfg.DesktopAuto.Enabled = false
	_, err := cdpinspect.NewProvider(cfg).Propose(bb.Invocation{InterfaceID: "macos"}, bb.Env{Cooldowns: &bb.Cooldowns{}})
	assert.Equal(t, bb.CodeNotConfigured, skipCode(t, err))
}

func TestProviderEnabledProposesForEveryInterfaceWithoutCooldown(t *testing.T) {
	cfg := cdpinspect.DefaultConfig()
	cfg.Enabled = true
	p := cdpinspect.NewProvider(cfg)
	cool := &bb.Cooldowns{}
	cool.Record(cdpinspect.CooldownKey, time.Hour)
	for _, iface := range []string{"", "macos", "chrome-extension", "web", "cli"} {
		c, err := p.Propose(bb.Invocation{InterfaceID: iface}, bb.Env{Cooldowns: cool})
		require.NoError(t, err, "interface %q", iface)
		assert.Equal(t, "configured: cdpInspect.enabled", c.Reason)
		assert.Empty(t, c.CooldownKey, "an explicitly enabled cdp-inspect is never cooled down")
		assert.Zero(t, c.CooldownFor)
	}
}

func TestProviderCooldownSkipsOnlyDesktopAuto(t *testing.T) {
	cool := &bb.Cooldowns{}
	cool.Record(cdpinspect.CooldownKey, time.Minute)
	env := bb.Env{Cooldowns: cool}

	_, err := cdpinspect.NewProvider(cdpinspect.DefaultConfig()).Propose(bb.Invocation{InterfaceID: "macos"}, env)
	assert.Equal(t, bb.CodeCooldown, skipCode(t, err))
	assert.Contains(t, err.Error(), "cooldown active")

	// Another key's cooldown does not matter.
	other := &bb.Cooldowns{}
	other.Record(hostproxy.HostBridgeCooldownKey("alice"), time.Minute)
	_, err = cdpinspect.NewProvider(cdpinspect.DefaultConfig()).Propose(bb.Invocation{InterfaceID: "macos"}, bb.Env{Cooldowns: other})
	assert.NoError(t, err)

	// After the window the candidate is back (injected clock, no sleeping).
	now := time.Unix(1000, 0)
	clocked := &bb.Cooldowns{Now: func() time.Time { return now }}
	clocked.Record(cdpinspect.CooldownKey, 30*time.Second)
	_, err = cdpinspect.NewProvider(cdpinspect.DefaultConfig()).Propose(bb.Invocation{InterfaceID: "macos"}, bb.Env{Cooldowns: clocked})
	assert.Equal(t, bb.CodeCooldown, skipCode(t, err))
	now = now.Add(30 * time.Second)
	_, err = cdpinspect.NewProvider(cdpinspect.DefaultConfig()).Propose(bb.Invocation{InterfaceID: "macos"}, bb.Env{Cooldowns: clocked})
	assert.NoError(t, err)
}

func TestProviderPinnedIsNeverCooledDown(t *testing.T) {
	cool := &bb.Cooldowns{}
	cool.Record(cdpinspect.CooldownKey, time.Hour)
	cfg := cdpinspect.DefaultConfig()
	cfg.DesktopAuto.Enabled = false
	for _, iface := range []string{"macos", "cli", ""} {
		c, err := cdpinspect.NewProvider(cfg).Propose(bb.Invocation{InterfaceID: iface, Mode: bb.Mode("cdp-inspect")}, bb.Env{Pinned: true, Cooldowns: cool})
		require.NoError(t, err, "interface %q", iface)
		assert.Empty(t, c.CooldownKey)
		assert.Zero(t, c.CooldownFor)
		assert.NotRegexp(t, `^desktopAuto:`, c.Reason)
	}
}

func TestProviderProposeIsSafeForConcurrentUse(t *testing.T) {
	p := cdpinspect.NewProvider(cdpinspect.DefaultConfig())
	cool := &bb.Cooldowns{}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if i%2 == 0 {
					cool.Record(cdpinspect.CooldownKey, time.Millisecond)
				}
				_, _ = p.Propose(bb.Invocation{InterfaceID: "macos"}, bb.Env{Cooldowns: cool})
			}
		}()
	}
	wg.Wait()
}

func TestProviderBuildDialsAndProbeOnlyDiscovers(t *testing.T) {
	b := chromiumtest.Start(t)
	cfg := cdpinspect.DefaultConfig()
	cfg = cfgFor(b.Port)
	cfg.Enabled = true
	p := cdpinspect.NewProvider(cfg, cdpinspect.WithUserDataDirs())
	c, err := p.Propose(bb.Invocation{InterfaceID: "cli"}, bb.Env{Cooldowns: &bb.Cooldowns{}})
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, c.Probe(ctx))
	client, err := c.Build(ctx)
	require.NoError(t, err)
	defer client.Close()
	raw, err := client.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: []byte(`{"expression":"6*7","returnByValue":true}`)})
	require.NoError(t, err)
	assert.JSONEq(t, `{"result":{"type":"number","value":42,"description":"42"}}`, string(raw))
	_, isSource := client.(bb.EventSource)
	assert.True(t, isSource, "the backend is an EventSource")
}

func TestProviderBuildWithoutBrowserIsTransportError(t *testing.T) {
	cfg := cdpinspect.DefaultConfig()
	cfg = cfgFor(closedPort(t))
	c, err := cdpinspect.NewProvider(cfg, cdpinspect.WithUserDataDirs()).Propose(bb.Invocation{InterfaceID: "macos"}, bb.Env{Cooldowns: &bb.Cooldowns{}})
	require.NoError(t, err)
	_, err = c.Build(context.Background())
	assertDiscoveryErr(t, err, bb.CodeUnreachable)
	assertDiscoveryErr(t, c.Probe(context.Background()), bb.CodeUnreachable)
}
