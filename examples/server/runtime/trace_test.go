package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/recorder"
	"github.com/browserchain/browserchain/examples/server/runtime"
)

func TestTraceDirRecordsTheCommandEndpointsCommands(t *testing.T) {
	fake := &browserbackendtest.Provider{K: browserbackend.KindLocal, NewBackend: func() *browserbackendtest.Backend {
		return browserbackendtest.NewBackend(browserbackend.KindLocal, func(ctx context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
			return json.RawMessage(`{"result":{"type":"number","value":2}}`), nil
		})
	}}
	dir := filepath.Join(t.TempDir(), "traces")
	rt, err := runtime.New(runtime.Config{Key: bytes.Repeat([]byte("s"), 32), AllowedOrigins: []string{origin},
		Fallbacks: []browserbackend.Provider{fake}, SelectorOptions: browserbackend.Options{Grace: -1}, TraceDir: dir})
	require.NoError(t, err)
	srv := httptest.NewServer(rt.Handler)
	t.Cleanup(func() { rt.Close(); srv.Close() })

	resp := do(t, srv, "POST", runtime.CommandPath, map[string]string{"Content-Type": "application/json"},
		`{"conversationId":"c1","browser_mode":"auto","method":"Runtime.evaluate","params":{"expression":"1+1"}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out runtime.CommandResponse
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	assert.JSONEq(t, `{"result":{"type":"number","value":2}}`, string(out.Result), "the answer is unchanged")

	raw, err := os.ReadFile(filepath.Join(dir, "c1.jsonl"))
	require.NoError(t, err)
	var types []recorder.Type
	var cmd *recorder.Command
	for line := range bytes.SplitSeq(bytes.TrimSpace(raw), []byte("\n")) {
		var e recorder.Entry
		require.NoError(t, json.Unmarshal(line, &e))
		types = append(types, e.Type)
		if e.Command != nil {
			cmd = e.Command
		}
	}
	assert.Contains(t, types, recorder.TypeAttempt)
	assert.Equal(t, recorder.TypeCall, types[len(types)-1])
	require.NotNil(t, cmd)
	assert.Equal(t, "Runtime.evaluate", cmd.Method)
	assert.JSONEq(t, `{"expression":"1+1"}`, cmd.Params)
	_, err = os.Stat(filepath.Join(dir, "c1.html"))
	require.NoError(t, err)
}
