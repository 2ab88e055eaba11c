package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/local"
)

// scriptedModel answers from the snapshot text as a model would: it finds
// elements by role and name and plans with their refs.
type scriptedModel struct {
	act     func(req tools.ModelRequest) (tools.ActPlan, error)
	observe func(req tools.ModelRequest) ([]tools.ObservedElement, error)
	extract func(req tools.ModelRequest) (tools.ExtractAnswer, error)

	mu   sync.Mutex
	seen []tools.ModelRequest
}

func (m *scriptedModel) saw(req tools.ModelRequest) {
	m.mu.Lock()
	m.seen = append(m.seen, req)
	m.mu.Unlock()
}

func (m *scriptedModel) Act(_ context.Context, req tools.ModelRequest) (tools.ActPlan, error) {
	m.saw(req)
	return m.act(req)
}

func (m *scriptedModel) Observe(_ context.Context, req tools.ModelRequest) ([]tools.ObservedElement, error) {
	m.saw(req)
	return m.observe(req)
}

func (m *scriptedModel) Extract(_ context.Context, req tools.ModelRequest) (tools.ExtractAnswer, error) {
	m.saw(req)
	return m.extract(req)
}

// refOf returns the ref of the snapshot line with role and name, "" when
// there is none.
func refOf(snapshot, role, name string) string {
	re := regexp.MustCompile(`(?m)^\s*- ` + regexp.QuoteMeta(role) + ` "` + regexp.QuoteMeta(name) + `"[^\n]*\[ref=(e\d+)\]`)
	if m := re.FindStringSubmatch(snapshot); m != nil {
		return m[1]
	}
	return ""
}

// The plain-language tools on a real page with a scripted model, and
// without a model; one browser for every case.
func TestPlainLanguageToolsOnARealPage(t *testing.T) {
	s := startSite(t)
	b := local.New(local.Options{Logger: quietLogger()})
	t.Cleanup(func() { b.Close() })
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{local.NewProvider(b)}, Logger: quietLogger()})
	m := &scriptedModel{}
	var approvals []tools.ApprovalRequest
	var amu sync.Mutex
	withModel := tools.New(tools.Options{Selector: sel, Logger: quietLogger(), Model: m,
		Approvals: []string{tools.ApproveAct, tools.ApproveClick},
		Approve: func(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalDecision, error) {
			amu.Lock()
			defer amu.Unlock()
			approvals = append(approvals, req)
			return tools.ApprovalDecision{Approved: true, By: "test"}, nil
		}})
	noModel := tools.New(tools.Options{Selector: sel, Logger: quietLogger()})
	inv := browserbackend.Invocation{ConversationID: "conv-plain", InterfaceID: "cli"}
	ctx := context.Background()
	load := func(t *testing.T, path string) {
		_, err := withModel.Navigate(ctx, inv, tools.NavigateInput{URL: s.url(path)})
		require.NoError(t, err)
	}

	t.Run("act runs the plan through the act tools", func(t *testing.T) {
		load(t, "/form")
		m.act = func(req tools.ModelRequest) (tools.ActPlan, error) {
			return tools.ActPlan{Actions: []tools.PlannedAction{
				{Action: tools.PlanType, Ref: refOf(req.Page.Snapshot, "textbox", "Query"), Text: "hello"},
				{Action: tools.PlanSelect, Ref: refOf(req.Page.Snapshot, "combobox", "Colour"), Values: []string{"Green"}},
				{Action: tools.PlanClick, Ref: refOf(req.Page.Snapshot, "button", "Send")},
			}}, nil
		}
		res, err := withModel.Plain().Act(ctx, inv, tools.ActInput{Instruction: "send hello in green"})
		require.NoError(t, err)
		assert.True(t, res.Performed)
		require.Len(t, res.Actions, 3)
		assert.Empty(t, res.Actions[0].Text, "typed text is not echoed")
		assert.Contains(t, res.URL, "/done?q=hello&color=green")
		assert.Equal(t, browserbackend.KindLocal, res.Backend)
		last := m.seen[len(m.seen)-1]
		assert.Equal(t, "send hello in green", last.Instruction)
		assert.Equal(t, fixtureTitle, last.Page.Title)
		ex, err := withModel.Read().Extract(ctx, inv, tools.ExtractInput{Target: tools.Target{Selector: "#thanks"}})
		require.NoError(t, err)
		assert.Equal(t, "Thanks, hello!", ex.Text)
		var ops []string
		for _, a := range approvals {
			ops = append(ops, a.Op)
		}
		assert.Equal(t, []string{"act", "click"}, ops, "the act, and its planned click, each waited for approval")
		assert.Equal(t, `act "send hello in green"`, approvals[0].Summary)
	})

	t.Run("act never reports a quiet success", func(t *testing.T) {
		load(t, "/form")
		for _, tc := range []struct {
			name string
			plan func(snap string) tools.ActPlan
			err  error
			msg  string
		}{
			{"empty plan", func(string) tools.ActPlan { return tools.ActPlan{} }, nil, "planned no action"},
			{"unknown ref", func(string) tools.ActPlan {
				return tools.ActPlan{Actions: []tools.PlannedAction{{Action: tools.PlanClick, Ref: "e999999"}}}
			}, nil, "does not show"},
			{"an action fails", func(snap string) tools.ActPlan {
				return tools.ActPlan{Actions: []tools.PlannedAction{{Action: tools.PlanSelect, Ref: refOf(snap, "textbox", "Query"), Values: []string{"x"}}}}
			}, tools.ErrPageError, "planned action 1 (select"},
		} {
			m.act = func(req tools.ModelRequest) (tools.ActPlan, error) { return tc.plan(req.Page.Snapshot), nil }
			_, err := withModel.Plain().Act(ctx, inv, tools.ActInput{Instruction: "do it"})
			require.ErrorIs(t, err, tools.ErrProviderError, tc.name)
			assert.ErrorContains(t, err, tc.msg, tc.name)
			if tc.err != nil {
				assert.ErrorIs(t, err, tc.err, "%s: the action's own error is kept", tc.name)
			}
		}
		m.act = func(tools.ModelRequest) (tools.ActPlan, error) {
			return tools.ActPlan{}, errors.New("model overloaded")
		}
		_, err := withModel.Plain().Act(ctx, inv, tools.ActInput{Instruction: "do it"})
		require.ErrorIs(t, err, tools.ErrProviderError)
		assert.ErrorContains(t, err, "model overloaded")
	})

	t.Run("the write guard reads the instruction", func(t *testing.T) {
		load(t, "/form")
		u, err := url.Parse(s.main.URL)
		require.NoError(t, err)
		g, err := guard.New(guard.Policy{AllowedDomains: []string{"*"}, DevLoopback: []string{u.Host}, Logger: quietLogger()})
		require.NoError(t, err)
		gctx := guard.NewContext(ctx, g)
		asked := len(m.seen)
		_, err = withModel.Plain().Act(gctx, inv, tools.ActInput{Instruction: "send the form"})
		require.ErrorIs(t, err, tools.ErrForbidden)
		assert.ErrorContains(t, err, "it says send")
		assert.Len(t, m.seen, asked, "the model is not asked")

		m.act = func(req tools.ModelRequest) (tools.ActPlan, error) {
			return tools.ActPlan{Actions: []tools.PlannedAction{{Action: tools.PlanClick, Ref: refOf(req.Page.Snapshot, "button", "Send")}}}, nil
		}
		_, err = withModel.Plain().Act(gctx, inv, tools.ActInput{Instruction: "press the button"})
		require.ErrorIs(t, err, tools.ErrForbidden, "the planned click passes the click tool's write guard")
		assert.ErrorContains(t, err, "planned action 1 (click")
	})

	t.Run("observe names elements by ref", func(t *testing.T) {
		load(t, "/form")
		var send string
		m.observe = func(req tools.ModelRequest) ([]tools.ObservedElement, error) {
			send = refOf(req.Page.Snapshot, "button", "Send")
			return []tools.ObservedElement{{Ref: send, Description: "the form's submit button"}}, nil
		}
		res, err := withModel.Plain().Observe(ctx, inv, tools.ObserveInput{Instruction: "the submit button"})
		require.NoError(t, err)
		require.NotEmpty(t, send)
		assert.Equal(t, []tools.ObservedElement{{Ref: send, Description: "the form's submit button"}}, res.Elements)
		assert.Contains(t, res.URL, "/form")

		m.observe = func(tools.ModelRequest) ([]tools.ObservedElement, error) {
			return []tools.ObservedElement{{Ref: "e999999", Description: "made up"}}, nil
		}
		_, err = withModel.Plain().Observe(ctx, inv, tools.ObserveInput{Instruction: "the submit button"})
		require.ErrorIs(t, err, tools.ErrProviderError)
	})

	t.Run("extract answers as text or as data by a schema", func(t *testing.T) {
		load(t, "/form")
		m.extract = func(req tools.ModelRequest) (tools.ExtractAnswer, error) {
			if req.Schema == nil {
				return tools.ExtractAnswer{Text: "The form asks for a query."}, nil
			}
			has := strings.Contains(req.Page.Snapshot, `button "Send"`)
			return tools.ExtractAnswer{Data: json.RawMessage(`{"button": "Send", "found": ` + map[bool]string{true: "true", false: "false"}[has] + `}`)}, nil
		}
		res, err := withModel.Plain().Extract(ctx, inv, tools.ExtractInput{Instruction: "what does the form ask?"})
		require.NoError(t, err)
		assert.Equal(t, "The form asks for a query.", res.Text)
		assert.Nil(t, res.Data)

		schema := json.RawMessage(`{"type":"object","properties":{"button":{"type":"string"},"found":{"type":"boolean"}},"required":["button","found"]}`)
		res, err = withModel.Read().Extract(ctx, inv, tools.ExtractInput{Instruction: "the submit button's name", Schema: schema})
		require.NoError(t, err)
		assert.JSONEq(t, `{"button":"Send","found":true}`, string(res.Data))
		assert.Equal(t, string(res.Data), res.Text)

		strict := json.RawMessage(`{"type":"object","properties":{"button":{"type":"integer"}}}`)
		_, err = withModel.Plain().Extract(ctx, inv, tools.ExtractInput{Schema: strict})
		require.ErrorIs(t, err, tools.ErrProviderError, "data that does not satisfy the schema")
		_, err = withModel.Read().Extract(ctx, inv, tools.ExtractInput{Schema: json.RawMessage(`{"type":7}`)})
		require.ErrorIs(t, err, tools.ErrInvalidInput, "a schema that does not resolve")
		_, err = withModel.Read().Extract(ctx, inv, tools.ExtractInput{Instruction: "the heading", Target: tools.Target{Selector: "h1"}})
		require.ErrorIs(t, err, tools.ErrInvalidInput, "only a ref narrows what the model reads")
	})

	t.Run("without a model", func(t *testing.T) {
		load(t, "/form")
		_, err := noModel.Plain().Act(ctx, inv, tools.ActInput{Instruction: "send it"})
		require.ErrorIs(t, err, tools.ErrFeatureNotConfigured)
		_, err = noModel.Plain().Observe(ctx, inv, tools.ObserveInput{Instruction: "the button"})
		require.ErrorIs(t, err, tools.ErrFeatureNotConfigured)
		_, err = noModel.Plain().Extract(ctx, inv, tools.ExtractInput{Instruction: "the title"})
		require.ErrorIs(t, err, tools.ErrFeatureNotConfigured)
		res, err := noModel.Read().Extract(ctx, inv, tools.ExtractInput{Target: tools.Target{Selector: "h1"}})
		require.NoError(t, err, "the deterministic tools keep working")
		assert.Equal(t, "Contact", res.Text)
	})
}
