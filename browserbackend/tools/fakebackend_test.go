package tools_test

// Tests of the tools over fake backends (browserbackendtest): what they send
// and how they recover, without a browser.

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

// pageNavigateURL is the url of a Page.navigate command, "" for any other.
func pageNavigateURL(cmd browserbackend.Command) string {
	if cmd.Method != "Page.navigate" {
		return ""
	}
	var p struct {
		URL string `json:"url"`
	}
	_ = json.Unmarshal(cmd.Params, &p)
	return p.URL
}

// A renderer killed a moment before a navigation can be noticed by any of
// its first commands (make stress: Page.enable succeeded on the dead page
// and a later command failed target_crashed). Whichever command sees the
// crash, tools.Navigate loads about:blank (a fresh page) and runs the
// sequence again, at most three times (local's fresh page can be its
// spare, dead with the others, and on a loaded machine a refill too); a
// fourth crash is the caller's error.
func TestNavigateRecoversFromACrashSeenByAnyOfItsFirstCommands(t *testing.T) {
	const target = "http://127.0.0.1:1/page"
	crashed := &browserbackend.Error{Class: browserbackend.ClassTransport, Code: browserbackend.CodeTargetCrashed,
		Backend: browserbackend.KindLocal, Dispatched: true, Message: "local: the page's renderer crashed"}
	lost := &browserbackend.Error{Class: browserbackend.ClassTransport, Code: browserbackend.CodePageLost,
		Backend: browserbackend.KindLocal, Message: "local: the conversation's page went away"}
	for _, tc := range []struct {
		name   string
		method string // the command that sees the crash
		url    string // its url, for Page.navigate
		err    error
		times  int32
		ok     bool
		blank  int32 // how many about:blank loads land on a dead page too
	}{
		{"Page.enable", "Page.enable", "", crashed, 1, true, 0},
		{"Page.enable page lost", "Page.enable", "", lost, 1, true, 0},
		{"Page.setLifecycleEventsEnabled", "Page.setLifecycleEventsEnabled", "", crashed, 1, true, 0},
		{"Page.navigate", "Page.navigate", target, crashed, 1, true, 0},
		{"crashed again after about:blank (local's dead spare)", "Page.navigate", target, crashed, 2, true, 0},
		{"crashed a third time", "Page.navigate", target, crashed, 3, true, 0},
		{"crashed a fourth time", "Page.navigate", target, crashed, 4, false, 0},
		{"about:blank lands on a dead page (local's spare)", "Page.enable", "", crashed, 1, true, 1},
		{"about:blank lands on a dead page twice", "Page.enable", "", crashed, 1, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var left, blank atomic.Int32
			left.Store(tc.times)
			blank.Store(tc.blank)
			reply := func(_ context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
				if cmd.Method == tc.method && pageNavigateURL(cmd) == tc.url && left.Add(-1) >= 0 {
					return nil, tc.err
				}
				if pageNavigateURL(cmd) == "about:blank" && blank.Add(-1) >= 0 {
					return nil, crashed
				}
				if cmd.Method == "Runtime.evaluate" {
					return json.RawMessage(`{"result":{"type":"object","value":{"url":"` + target + `","title":"t","readyState":"complete"}}}`), nil
				}
				return nil, nil
			}
			res, urls, err := navigateOnFake(target, reply)
			var want []string
			if tc.method == "Page.navigate" {
				want = append(want, target)
				for i := int32(1); i < min(tc.times, 3); i++ {
					want = append(want, "about:blank", target)
				}
			}
			for i := int32(0); i <= min(tc.blank, 1); i++ {
				want = append(want, "about:blank")
			}
			if tc.blank < 2 {
				want = append(want, target)
			}
			if !tc.ok {
				require.Error(t, err)
				assert.ErrorIs(t, err, browserbackend.ErrTargetCrashed)
				assert.Equal(t, want, urls, "one more try, not a loop")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "t", res.Title)
			assert.Equal(t, want, urls)
		})
	}
}

// navigateOnFake runs tools.Navigate to target on a fake local backend
// that answers with reply, and returns its result and the url of every
// Page.navigate it sent.
func navigateOnFake(target string, reply browserbackendtest.Reply) (tools.NavigateResult, []string, error) {
	prov := &browserbackendtest.Provider{K: browserbackend.KindLocal, Desc: refDesc(browserbackend.KindLocal),
		NewBackend: func() *browserbackendtest.Backend {
			return browserbackendtest.NewBackend(browserbackend.KindLocal, reply)
		}}
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{prov}, Logger: quietLogger()})
	tl := tools.New(tools.Options{Selector: sel, Logger: quietLogger()})
	inv := browserbackend.Invocation{ConversationID: "conv", InterfaceID: "cli"}
	res, err := tl.Navigate(context.Background(), inv, tools.NavigateInput{BrowserMode: "local", URL: target})
	var urls []string
	for _, b := range prov.Backends() {
		for _, cmd := range b.Calls() {
			if u := pageNavigateURL(cmd); u != "" {
				urls = append(urls, u)
			}
		}
	}
	return res, urls, err
}

// On the extension the crashed tab's revival can abort the first
// navigation after it (make stress: navigation_failed net::ERR_ABORTED).
// After a crash an aborted navigation is sent once more; without a crash,
// or a second time, the abort is the caller's navigation_failed.
func TestNavigateSendsANavigationAbortedAfterACrashOnceMore(t *testing.T) {
	const target = "http://127.0.0.1:1/page"
	crashed := &browserbackend.Error{Class: browserbackend.ClassTransport, Code: browserbackend.CodeTargetCrashed,
		Backend: browserbackend.KindLocal, Dispatched: true, Message: "local: the page's renderer crashed"}
	for _, tc := range []struct {
		name    string
		crash   bool  // the first Page.enable sees a crash
		aborted int32 // how many navigations to target Chromium aborts
		ok      bool
		want    []string
	}{
		{"after a crash", true, 1, true, []string{"about:blank", target, target}},
		{"after a crash, twice", true, 2, false, []string{"about:blank", target, target}},
		{"without a crash", false, 1, false, []string{target}},
		{"a download after a crash", true, -1, false, []string{"about:blank", target}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var crash atomic.Bool
			crash.Store(tc.crash)
			var aborted atomic.Int32
			aborted.Store(tc.aborted)
			reply := func(_ context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
				switch {
				case cmd.Method == "Page.enable" && crash.Swap(false):
					return nil, crashed
				case pageNavigateURL(cmd) == target && tc.aborted < 0:
					return json.RawMessage(`{"frameId":"F","errorText":"net::ERR_ABORTED","isDownload":true}`), nil
				case pageNavigateURL(cmd) == target && aborted.Add(-1) >= 0:
					return json.RawMessage(`{"frameId":"F","errorText":"net::ERR_ABORTED"}`), nil
				case cmd.Method == "Runtime.evaluate":
					return json.RawMessage(`{"result":{"type":"object","value":{"url":"` + target + `","title":"t","readyState":"complete"}}}`), nil
				}
				return nil, nil
			}
			res, urls, err := navigateOnFake(target, reply)
			assert.Equal(t, tc.want, urls)
			if !tc.ok {
				var te *tools.Error
				require.ErrorAs(t, err, &te)
				if tc.aborted > 0 {
					assert.Equal(t, tools.CodeNavigationFailed, te.Code)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "t", res.Title)
		})
	}
}

// The screenshot tool asks Chromium to encode for speed unless Compact asks
// for the smallest PNG (the one Page.captureScreenshot parameter it sets
// either way).
func TestScreenshotEncodesForSpeedUnlessCompact(t *testing.T) {
	for _, compact := range []bool{false, true} {
		prov := &browserbackendtest.Provider{K: browserbackend.KindCDPInspect, Desc: refDesc(browserbackend.KindCDPInspect)}
		sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{prov}, Logger: quietLogger()})
		tl := tools.New(tools.Options{Selector: sel, ScreenshotDir: t.TempDir(), Logger: quietLogger()})
		inv := browserbackend.Invocation{ConversationID: "conv", InterfaceID: "cli"}
		_, _ = tl.Read().Screenshot(context.Background(), inv, tools.ScreenshotInput{Compact: compact})
		var sent []string
		for _, b := range prov.Backends() {
			for _, cmd := range b.Calls() {
				if cmd.Method == "Page.captureScreenshot" {
					var p struct {
						OptimizeForSpeed *bool `json:"optimizeForSpeed"`
					}
					require.NoError(t, json.Unmarshal(cmd.Params, &p))
					require.NotNil(t, p.OptimizeForSpeed, "compact=%v: said either way", compact)
					sent = append(sent, map[bool]string{true: "speed", false: "size"}[*p.OptimizeForSpeed])
				}
			}
		}
		want := map[bool]string{false: "speed", true: "size"}[compact]
		assert.Equal(t, []string{want}, sent, "compact=%v", compact)
	}
}
