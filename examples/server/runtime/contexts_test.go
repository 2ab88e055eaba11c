package runtime_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/sessions"
	"github.com/browserchain/browserchain/examples/server/runtime"
)

// The runtime serves its actor's saved logins and grants when it has a
// session store.
func TestRuntimeServesSavedLoginsAndGrants(t *testing.T) {
	st, err := sessions.Open(filepath.Join(t.TempDir(), "s.db"), sessions.Options{})
	require.NoError(t, err)
	defer st.Close()
	rt, err := runtime.New(runtime.Config{Key: bytes.Repeat([]byte("s"), 32), Logger: slog.New(slog.DiscardHandler), ActorPrincipalID: "user-7",
		Fallbacks: []browserbackend.Provider{&browserbackendtest.Provider{K: browserbackend.KindLocal}}, Sessions: st})
	require.NoError(t, err)
	defer rt.Close()
	_, err = st.CreateContext(t.Context(), "user-7", "crm")
	require.NoError(t, err)
	srv := httptest.NewServer(rt.Handler)
	defer srv.Close()

	req, _ := http.NewRequest("POST", srv.URL+sessions.ContextsPath+"/crm/grants", strings.NewReader(`{"agent_id":"agent-b"}`))
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, err = srv.Client().Get(srv.URL + sessions.ContextsPath)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), `"agent_id":"agent-b"`)
}
