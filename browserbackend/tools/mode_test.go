package tools_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

// everyTool calls each tool once with browser_mode set to mode and otherwise
// valid input, and returns the errors by tool name.
func everyTool(tl *tools.Tools, inv browserbackend.Invocation, mode string) map[string]error {
	ctx := context.Background()
	tgt := tools.Target{Selector: "#q"}
	errs := map[string]error{}
	_, errs["navigate"] = tl.Navigate(ctx, inv, tools.NavigateInput{BrowserMode: mode, URL: "http://127.0.0.1:1/"})
	_, errs["snapshot"] = tl.Read().Snapshot(ctx, inv, tools.SnapshotInput{BrowserMode: mode})
	_, errs["screenshot"] = tl.Read().Screenshot(ctx, inv, tools.ScreenshotInput{BrowserMode: mode})
	_, errs["click"] = tl.Act().Click(ctx, inv, tools.ElementInput{BrowserMode: mode, Target: tgt})
	_, errs["hover"] = tl.Act().Hover(ctx, inv, tools.ElementInput{BrowserMode: mode, Target: tgt})
	_, errs["type"] = tl.Act().Type(ctx, inv, tools.TypeInput{BrowserMode: mode, Target: tgt, Text: "x"})
	_, errs["press_key"] = tl.Act().PressKey(ctx, inv, tools.PressKeyInput{BrowserMode: mode, Key: "Enter"})
	_, errs["scroll"] = tl.Act().Scroll(ctx, inv, tools.ScrollInput{BrowserMode: mode})
	_, errs["select_option"] = tl.Act().SelectOption(ctx, inv, tools.SelectOptionInput{BrowserMode: mode, Target: tgt, Values: []string{"a"}})
	_, errs["wait_for"] = tl.Read().WaitFor(ctx, inv, tools.WaitForInput{BrowserMode: mode, Text: "x"})
	_, errs["extract"] = tl.Read().Extract(ctx, inv, tools.ExtractInput{BrowserMode: mode})
	_, errs["links"] = tl.Read().Links(ctx, inv, tools.LinksInput{BrowserMode: mode})
	_, errs["attach"] = tl.Attach(ctx, inv, tools.AttachInput{BrowserMode: mode})
	_, errs["detach"] = tl.Detach(ctx, inv, tools.ReleaseInput{BrowserMode: mode})
	_, errs["close"] = tl.Close(ctx, inv, tools.ReleaseInput{BrowserMode: mode})
	_, errs["status"] = tl.Status(ctx, inv, tools.StatusInput{BrowserMode: mode, Probe: true})
	_, errs["navigate_back"] = tl.Act().GoBack(ctx, inv, tools.HistoryInput{BrowserMode: mode})
	_, errs["navigate_forward"] = tl.Act().GoForward(ctx, inv, tools.HistoryInput{BrowserMode: mode})
	_, errs["reload"] = tl.Act().Reload(ctx, inv, tools.HistoryInput{BrowserMode: mode})
	_, errs["fill_form"] = tl.Act().FillForm(ctx, inv, tools.FillFormInput{BrowserMode: mode, Fields: []tools.FormField{{Target: tgt, Value: "x"}}})
	_, errs["drag"] = tl.Act().Drag(ctx, inv, tools.DragInput{BrowserMode: mode, From: tgt, To: tgt})
	_, errs["evaluate"] = tl.Dev().Evaluate(ctx, inv, tools.EvaluateInput{BrowserMode: mode, Function: "() => 1"})
	_, errs["console_messages"] = tl.Dev().Console(ctx, inv, tools.ConsoleInput{BrowserMode: mode})
	_, errs["network_requests"] = tl.Dev().Network(ctx, inv, tools.NetworkInput{BrowserMode: mode})
	_, errs["pdf"] = tl.Dev().PDF(ctx, inv, tools.PDFInput{BrowserMode: mode})
	_, errs["resize"] = tl.Dev().Resize(ctx, inv, tools.ViewportInput{BrowserMode: mode, Width: 10, Height: 10})
	return errs
}

// fakeChain returns fake providers of every kind, all available, and Tools
// over them.
func fakeChain() (*tools.Tools, []*browserbackendtest.Provider) {
	provs := []*browserbackendtest.Provider{
		{K: browserbackend.KindExtension, Desc: refDesc(browserbackend.KindExtension)}, {K: browserbackend.KindHostBridge, Desc: refDesc(browserbackend.KindHostBridge)},
		{K: browserbackend.KindCDPInspect, Desc: refDesc(browserbackend.KindCDPInspect)}, {K: browserbackend.KindLocal, Desc: refDesc(browserbackend.KindLocal)},
	}
	var ps []browserbackend.Provider
	for _, p := range provs {
		ps = append(ps, p)
	}
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: ps, Logger: quietLogger()})
	return tools.New(tools.Options{Selector: sel, Logger: quietLogger()}), provs
}

func TestInvalidBrowserModeIsRejectedBeforeAnyCDPCommand(t *testing.T) {
	for _, mode := range []string{"chrome", "host-bridge", "cdp", " auto2 "} {
		t.Run(mode, func(t *testing.T) {
			tl, provs := fakeChain()
			inv := browserbackend.Invocation{ConversationID: "c1", InterfaceID: "macos"}
			errs := everyTool(tl, inv, mode)
			assert.Len(t, errs, 26, "every tool is covered")
			for name, err := range errs {
				require.Error(t, err, name)
				assert.ErrorIs(t, err, tools.ErrInvalidMode, name)
				assert.ErrorIs(t, err, browserbackend.ErrPolicy, "%s: the cause is ParseMode's policy error", name)
				var be *browserbackend.Error
				require.ErrorAs(t, err, &be, name)
				assert.Equal(t, browserbackend.CodeInvalidMode, be.Code, name)
				assert.Contains(t, err.Error(), "cdp-debugger = cdp-inspect", "%s: the message lists the aliases", name)
			}
			for _, p := range provs {
				assert.Zero(t, p.Proposed(), "%s: no provider was even asked", p.K)
				assert.Zero(t, p.Builds(), "%s: nothing was built", p.K)
				for _, b := range p.Backends() {
					assert.Empty(t, b.Calls(), "%s: no CDP command was sent", p.K)
				}
			}
		})
	}
}

func TestInvocationModeIsValidatedWhenInputHasNone(t *testing.T) {
	tl, provs := fakeChain()
	inv := browserbackend.Invocation{ConversationID: "c1", Mode: "nonsense"}
	_, err := tl.Read().Extract(context.Background(), inv, tools.ExtractInput{})
	assert.ErrorIs(t, err, tools.ErrInvalidMode)
	for _, p := range provs {
		assert.Zero(t, p.Builds())
	}
}

func TestAliasesAndCaseSelectThePinnedBackend(t *testing.T) {
	for mode, want := range map[string]browserbackend.Kind{
		"PlayWright": browserbackend.KindLocal, " cdp-debugger ": browserbackend.KindCDPInspect,
		"LOCAL": browserbackend.KindLocal, "cdp-inspect": browserbackend.KindCDPInspect,
	} {
		tl, _ := fakeChain()
		res, err := tl.Read().Links(context.Background(), browserbackend.Invocation{ConversationID: "c"},
			tools.LinksInput{BrowserMode: mode})
		require.NoError(t, err, mode)
		assert.Equal(t, want, res.Backend, mode)
		assert.Empty(t, res.Links)
	}
}

func TestBadInputIsRejectedBeforeAnyCDPCommand(t *testing.T) {
	tl, provs := fakeChain()
	ctx := context.Background()
	inv := browserbackend.Invocation{ConversationID: "c1"}
	checks := map[string]error{}
	_, checks["navigate without url"] = tl.Navigate(ctx, inv, tools.NavigateInput{})
	_, checks["navigate javascript:"] = tl.Navigate(ctx, inv, tools.NavigateInput{URL: "javascript:alert(1)"})
	_, checks["click without target"] = tl.Act().Click(ctx, inv, tools.ElementInput{})
	_, checks["click bad ref"] = tl.Act().Click(ctx, inv, tools.ElementInput{Target: tools.Target{Ref: "button"}})
	_, checks["press unknown key"] = tl.Act().PressKey(ctx, inv, tools.PressKeyInput{Key: "Hyper+Q"})
	_, checks["links limit too big"] = tl.Read().Links(ctx, inv, tools.LinksInput{Limit: tools.MaxLinksLimit + 1})
	_, checks["links negative limit"] = tl.Read().Links(ctx, inv, tools.LinksInput{Limit: -1})
	_, checks["wait for two things"] = tl.Read().WaitFor(ctx, inv, tools.WaitForInput{Text: "a", Selector: "b"})
	_, checks["wait for nothing"] = tl.Read().WaitFor(ctx, inv, tools.WaitForInput{})
	_, checks["select without values"] = tl.Act().SelectOption(ctx, inv, tools.SelectOptionInput{Target: tools.Target{Selector: "s"}})
	_, checks["negative timeout"] = tl.Read().Extract(ctx, inv, tools.ExtractInput{TimeoutMs: -5})
	_, checks["screenshot width only"] = tl.Read().Screenshot(ctx, inv, tools.ScreenshotInput{Width: 10})
	for name, err := range checks {
		assert.ErrorIs(t, err, tools.ErrInvalidInput, name)
	}
	for _, p := range provs {
		assert.Zero(t, p.Builds(), "%s: nothing was built", p.K)
	}
}

func TestEvaluateUnderAGuardNeedsAllowScripts(t *testing.T) {
	provs := []*browserbackendtest.Provider{{K: browserbackend.KindLocal, Desc: refDesc(browserbackend.KindLocal)}}
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{provs[0]}, Logger: quietLogger()})
	tl := tools.New(tools.Options{Selector: sel, Logger: quietLogger(), Guard: guard.MustNew(guard.Policy{AllowedDomains: []string{"example.com"}})})
	t.Cleanup(tl.Shutdown)
	inv := browserbackend.Invocation{ConversationID: "c1", InterfaceID: "macos"}
	_, err := tl.Dev().Evaluate(context.Background(), inv, tools.EvaluateInput{Function: "() => document.cookie"})
	require.ErrorIs(t, err, tools.ErrForbidden)
	require.ErrorIs(t, err, &guard.Error{Code: guard.CodeForbidden, Param: "allow_scripts"})
	assert.Zero(t, provs[0].Builds(), "refused before any backend was built")
}
