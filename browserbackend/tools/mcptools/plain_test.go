package mcptools_test

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/browserbackend/tools/mcptools"
	"github.com/browserchain/browserchain/local"
)

// Without a model the plain-language tools say the server does not have
// one, and reach no backend.
func TestPlainToolsWithoutAModelOverMCP(t *testing.T) {
	tl, provs := fakeChain()
	_, ms := serve(t, mcptools.Options{Tools: tl})
	cs := connect(t, ms, nil)
	for _, c := range []struct {
		tool string
		args map[string]any
		says string
	}{
		{"browser_act", map[string]any{"instruction": "open the menu"}, "not available on this server"},
		{"browser_observe", map[string]any{"instruction": "the menu"}, "not available on this server"},
		{"browser_extract", map[string]any{"instruction": "the price"}, "not available on this server"},
		{"browser_extract", map[string]any{"schema": map[string]any{"type": "object"}}, "not available on this server"},
	} {
		res := call(t, cs, c.tool, c.args)
		require.True(t, res.IsError, c.tool)
		assert.Contains(t, text(res), c.says, c.tool)
	}
	for _, p := range provs {
		assert.Zero(t, p.Proposed(), p.K)
	}
}

// pageModel answers from the snapshot text: it types "hi" into the
// Query field and clicks Send, names the Send button, and extracts the
// heading.
type pageModel struct{}

var lineRef = func(role, name string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\s*- ` + role + ` "` + name + `"[^\n]*\[ref=(e\d+)\]`)
}

func (pageModel) ref(snap, role, name string) string {
	if m := lineRef(role, name).FindStringSubmatch(snap); m != nil {
		return m[1]
	}
	return ""
}

func (m pageModel) Act(_ context.Context, req tools.ModelRequest) (tools.ActPlan, error) {
	return tools.ActPlan{Actions: []tools.PlannedAction{
		{Action: tools.PlanType, Ref: m.ref(req.Page.Snapshot, "textbox", "Query"), Text: "hi"},
		{Action: tools.PlanClick, Ref: m.ref(req.Page.Snapshot, "button", "Send")},
	}}, nil
}

func (m pageModel) Observe(_ context.Context, req tools.ModelRequest) ([]tools.ObservedElement, error) {
	return []tools.ObservedElement{{Ref: m.ref(req.Page.Snapshot, "button", "Send"), Description: "the send button"}}, nil
}

func (pageModel) Extract(_ context.Context, req tools.ModelRequest) (tools.ExtractAnswer, error) {
	return tools.ExtractAnswer{Data: json.RawMessage(`{"title":` + mustJSON(req.Page.Title) + `}`)}, nil
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// browser_observe, browser_act and browser_extract with a schema, over
// the SDK's client, with a scripted model on a real page.
func TestPlainToolsOverMCPOnLocal(t *testing.T) {
	s := startSite(t)
	log := browserbackendtest.DiscardLogger()
	b := local.New(local.Options{Logger: log})
	t.Cleanup(func() { _ = b.Close() })
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{local.NewProvider(b)}, Logger: log})
	tl := tools.New(tools.Options{Selector: sel, Logger: log, Model: pageModel{}})
	_, ms := serve(t, mcptools.Options{Tools: tl})
	cs := connect(t, ms, nil)

	ok[tools.NavigateResult](t, cs, "browser_navigate", map[string]any{"url": s.URL + "/form"})
	obs, res := ok[tools.ObserveResult](t, cs, "browser_observe", map[string]any{"instruction": "the send button"})
	require.Len(t, obs.Elements, 1)
	assert.Contains(t, text(res), obs.Elements[0].Ref+" the send button")

	ex, _ := ok[mcptools.ExtractSummary](t, cs, "browser_extract", map[string]any{"instruction": "the page title",
		"schema": map[string]any{"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}}, "required": []string{"title"}}})
	assert.JSONEq(t, `{"title":"Contact"}`, string(ex.Data))

	act, res := ok[tools.ActResult](t, cs, "browser_act", map[string]any{"instruction": "send hi"})
	assert.True(t, act.Performed)
	assert.Contains(t, act.URL, "/done?q=hi")
	assert.Contains(t, text(res), "Done: type e")
	assert.Contains(t, text(res), "The page navigated to "+s.URL+"/done?q=hi")
}
