package runtime_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/examples/server/runtime"
)

func TestCommandEndpointRefusesNavigationsOffTheAllowList(t *testing.T) {
	prov := &browserbackendtest.Provider{K: browserbackend.KindLocal}
	rt, err := runtime.New(runtime.Config{Key: bytes.Repeat([]byte("s"), 32), Logger: slog.New(slog.DiscardHandler),
		Fallbacks: []browserbackend.Provider{prov}, Guard: guard.MustNew(guard.Policy{AllowedDomains: []string{"app.example.com"}})})
	require.NoError(t, err)
	defer rt.Close()
	for _, m := range []string{"Page.navigate", "Target.createTarget"} {
		params, _ := json.Marshal(map[string]string{"url": "http://169.254.169.254/latest/meta-data"})
		_, err := rt.Run(t.Context(), runtime.CommandRequest{ConversationID: "c", Method: m, Params: params})
		require.ErrorIs(t, err, guard.ErrForbidden, m)
		require.ErrorIs(t, err, browserbackend.ErrPolicy, m)
	}
	assert.Zero(t, prov.Builds(), "no backend was contacted")
}
