package cdpinspect_test

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// fakeLocal stands in for the local backend (another package) as the last
// auto candidate.
func fakeLocal() *browserbackendtest.Provider {
	return &browserbackendtest.Provider{K: bb.KindLocal, Reason: "always last"}
}

func TestSelectorServesLargeScreenshotThroughCDPInspect(t *testing.T) {
	b := chromiumtest.Start(t)
	srv := chromiumtest.FixtureServer(t, nil)
	for name, tc := range map[string]struct {
		enabled bool
		mode    bb.Mode
	}{
		"pinned":       {enabled: false, mode: bb.Mode("cdp-inspect")},
		"auto enabled": {enabled: true, mode: bb.ModeAuto},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := cdpinspect.DefaultConfig()
			cfg = cfgFor(b.Port)
			cfg.Enabled = tc.enabled
			local := fakeLocal()
			sel := bb.NewSelector(bb.Options{
				Providers: []bb.Provider{cdpinspect.NewProvider(cfg, cdpinspect.WithUserDataDirs()), local},
				Logger:    quietLog,
			})
			client := sel.Client(bb.Invocation{ConversationID: "c-" + name, InterfaceID: "cli", Mode: tc.mode})
			defer client.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			_, err := cdp.Call(ctx, client, emulation.SetDeviceMetricsOverride,
				emulation.SetDeviceMetricsOverrideParams{Width: 1400, Height: 1000, DeviceScaleFactor: 1})
			require.NoError(t, err)
			assert.Equal(t, bb.KindCDPInspect, client.Kind())
			_, err = cdp.Call(ctx, client, page.Enable, page.EnableParams{})
			require.NoError(t, err)
			loads := cdp.Events(ctx, client, page.LoadEventFired)
			_, err = cdp.Call(ctx, client, page.Navigate, page.NavigateParams{URL: srv.URL + "/noise"})
			require.NoError(t, err)
			for _, err := range loads {
				require.NoError(t, err)
				break
			}
			res, err := cdp.Call(ctx, client, runtime.Evaluate, runtime.EvaluateParams{Expression: "window.noiseReady === true", ReturnByValue: new(true)})
			require.NoError(t, err)
			assert.JSONEq(t, "true", string(res.Result.Value))

			shot, err := cdp.Call(ctx, client, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng})
			require.NoError(t, err)
			require.GreaterOrEqual(t, len(shot.Data), 1500*1000)
			img, err := png.Decode(bytes.NewReader(shot.Data))
			require.NoError(t, err)
			assert.Equal(t, 1400, img.Bounds().Dx())
			assert.Equal(t, 1000, img.Bounds().Dy())
			assert.Zero(t, local.Builds(), "local is never built when cdp-inspect serves")
		})
	}
}

func TestSelectorDesktopAutoWithoutChromeCoolsDownAndFallsThrough(t *testing.T) {
	cfg := cdpinspect.DefaultConfig() // desktop-auto on, 30 s cooldown
	cfg = cfgFor(closedPort(t))
	cfg.DesktopAuto = cdpinspect.DesktopAutoConfig{Enabled: true, CooldownMs: 30000}
	local := fakeLocal()
	sel := bb.NewSelector(bb.Options{
		Providers: []bb.Provider{cdpinspect.NewProvider(cfg, cdpinspect.WithUserDataDirs()), local},
		Logger:    quietLog,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	first := sel.Client(bb.Invocation{ConversationID: "a", InterfaceID: "macos"})
	defer first.Close()
	_, err := first.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: []byte(`{"expression":"1"}`)})
	require.NoError(t, err)
	assert.Equal(t, bb.KindLocal, first.Kind())
	att := first.Attempts()
	require.GreaterOrEqual(t, len(att), 2)
	assert.Equal(t, bb.KindCDPInspect, att[0].Kind)
	assert.Equal(t, bb.StageConstruction, att[0].Stage)
	assert.Equal(t, bb.CodeUnreachable, att[0].Code)
	assert.Equal(t, bb.CodeUnreachable, att[0].Detail)
	assert.True(t, sel.Cooldowns().Active(cdpinspect.CooldownKey), "the desktop-auto cooldown is recorded")

	second := sel.Client(bb.Invocation{ConversationID: "b", InterfaceID: "macos"})
	defer second.Close()
	_, err = second.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: []byte(`{"expression":"1"}`)})
	require.NoError(t, err)
	att = second.Attempts()
	require.NotEmpty(t, att)
	assert.Equal(t, bb.KindCDPInspect, att[0].Kind)
	assert.Equal(t, bb.StageCandidateSelection, att[0].Stage)
	assert.Equal(t, bb.CodeCooldown, att[0].Code, "cdp-inspect is skipped inside the cooldown")

	// A pinned cdp-inspect is not cooled down: it is tried and fails.
	pinned := sel.Client(bb.Invocation{ConversationID: "c", InterfaceID: "macos", Mode: bb.Mode("cdp-inspect")})
	defer pinned.Close()
	_, err = pinned.Send(ctx, bb.Command{Method: "Runtime.evaluate"})
	require.Error(t, err)
	var se *bb.SelectionError
	require.True(t, errors.As(err, &se), "%v", err)
	require.NotEmpty(t, se.Attempts)
	assert.Equal(t, bb.StageConstruction, se.Attempts[0].Stage)
	assert.True(t, errors.Is(err, bb.ErrUnreachable))
}
