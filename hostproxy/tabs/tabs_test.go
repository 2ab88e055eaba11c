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
	s := &sender{result: `{"tabs":[{"id":7,"url":"https://a.test/","active":true}]}`}
	list, err := tabs.List(ctx, s)
	require.NoError(t, err)
	assert.Equal(t, []tabs.Tab{{ID: 7, URL: "https://a.test/", Active: true}}, list)
	assert.Equal(t, "Vellum.listTabs", s.got.Method)
	assert.JSONEq(t, `{}`, string(s.got.Params))

	s.result = `{"tab":{"id":9,"url":"about:blank"}}`
	tab, err := tabs.Create(ctx, s, "about:blank", true)
	require.NoError(t, err)
	assert.Equal(t, tabs.Tab{ID: 9, URL: "about:blank"}, tab)
	assert.Equal(t, "Vellum.createTab", s.got.Method)
	assert.JSONEq(t, `{"url":"about:blank","active":true}`, string(s.got.Params))

	s.result = `{"tab":null}`
	_, found, err := tabs.Find(ctx, s, "", "Inbox")
	require.NoError(t, err)
	assert.False(t, found)
	assert.Equal(t, "Vellum.findTab", s.got.Method)
	assert.JSONEq(t, `{"title":"Inbox"}`, string(s.got.Params))

	s.result = `{}`
	for method, op := range map[string]func(context.Context, tabs.Sender, int) error{
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
