package tabs_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/hostproxy/tabs"
)

// sender records the command and answers with result.
type sender struct {
	got    browserbackend.Command
	result string
}

func (s *sender) Send(_ context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
	s.got = cmd
	return json.RawMessage(s.result), nil
}

func TestTabOperations_SendTheirMethodAndParamsAndDecodeTheResult(t *testing.T) {
	ctx := context.Background()
	s := &sender{result: `{"tabs":[{"tabId":7,"windowId":1,"url":"https://a.test/","title":"A","active":true,"pinned":false}]}`}
	list, err := tabs.List(ctx, s)
	require.NoError(t, err)
	assert.Equal(t, []tabs.Tab{{ID: 7, WindowID: 1, URL: "https://a.test/", Title: "A", Active: true}}, list)
	assert.Equal(t, "Vellum.listTabs", s.got.Method)
	assert.JSONEq(t, `{}`, string(s.got.Params))

	// WIRE-3: createTab and findTab name the tab with a string.
	s.result = `{"tabId":"9","clientId":"ext-1"}`
	tab, err := tabs.Create(ctx, s, "about:blank", true)
	require.NoError(t, err)
	assert.Equal(t, tabs.Tab{ID: 9, URL: "about:blank", Active: true}, tab)
	assert.Equal(t, "Vellum.createTab", s.got.Method)
	assert.JSONEq(t, `{"url":"about:blank","active":true}`, string(s.got.Params))

	s.result = `{"tabId":"9","url":"https://mail.test/inbox","title":"Inbox"}`
	found, ok, err := tabs.Find(ctx, s, "https://mail.test/*")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, tabs.Tab{ID: 9, URL: "https://mail.test/inbox", Title: "Inbox"}, found)
	assert.Equal(t, "Vellum.findTab", s.got.Method)
	assert.JSONEq(t, `{"urlPattern":"https://mail.test/*"}`, string(s.got.Params))

	s.result = `{}`
	for method, op := range map[string]func(context.Context, tabs.Sender, tabs.ID) error{
		"Vellum.selectTab": tabs.Select, "Vellum.closeTab": tabs.Close,
		"Vellum.attach": tabs.Attach, "Vellum.detach": tabs.Detach,
	} {
		require.NoError(t, op(ctx, s, 3), method)
		assert.Equal(t, method, s.got.Method)
		assert.JSONEq(t, `{"tabId":3}`, string(s.got.Params), method)
	}
}

func TestTabOperations_AResultOfTheWrongShapeIsAnInvalidResponse(t *testing.T) {
	_, err := tabs.List(context.Background(), &sender{result: `{"tabs":"nope"}`})
	var e *browserbackend.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, browserbackend.ClassProtocol, e.Class)
	assert.Equal(t, browserbackend.CodeInvalidResponse, e.Code)
	assert.True(t, e.Dispatched)
}
