package tabs

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTabID_NumberAndStringAreTheSameTab(t *testing.T) {
	var a, b struct {
		TabID ID `json:"tabId"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"tabId":"1234"}`), &a))
	require.NoError(t, json.Unmarshal([]byte(`{"tabId":1234}`), &b))
	assert.Equal(t, a, b)
	assert.Equal(t, ID(1234), a.TabID)
	for _, bad := range []string{`{"tabId":"7a"}`, `{"tabId":1.5}`, `{"tabId":-1}`, `{"tabId":true}`} {
		assert.Error(t, json.Unmarshal([]byte(bad), &a), bad)
	}
	require.NoError(t, json.Unmarshal([]byte(`{"tabId":null}`), &a))
	assert.Zero(t, a.TabID)
	out, _ := json.Marshal(b)
	assert.JSONEq(t, `{"tabId":1234}`, string(out))

	id, ok := ParseID("42")
	assert.True(t, ok)
	assert.Equal(t, ID(42), id)
	for _, s := range []string{"", "E3A1F2", "42x", "9B2C8F0D4E6A1B3C5D7E9F0A1B2C3D4E"} {
		_, ok := ParseID(s)
		assert.False(t, ok, s)
	}
}
