package sessions_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/sessions"
)

func TestContextsHandlerListsAndGrants(t *testing.T) {
	st := open(t, dbPath(t), newClock())
	_, err := st.CreateContext(t.Context(), "user-7", "crm")
	require.NoError(t, err)
	require.NoError(t, st.SaveState(t.Context(), "user-7", "crm", secret))
	h := sessions.ContextsHandler(st, func(r *http.Request) string { return r.Header.Get("X-User") })
	do := func(method, path, body, user string) (int, string) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if user != "" {
			req.Header.Set("X-User", user)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	code, _ := do("GET", sessions.ContextsPath, "", "")
	assert.Equal(t, http.StatusUnauthorized, code)
	code, body := do("GET", sessions.ContextsPath, "", "user-7")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"name":"crm"`)
	assert.NotContains(t, body, "s3cr3t", "never the content")
	code, body = do("POST", sessions.ContextsPath+"/crm/grants", `{"role":"support"}`, "user-7")
	require.Equal(t, http.StatusOK, code, body)
	var c sessions.SavedContext
	require.NoError(t, json.Unmarshal([]byte(body), &c))
	assert.Equal(t, []sessions.Grant{{Role: "support"}}, c.Grants)
	code, _ = do("POST", sessions.ContextsPath+"/crm/grants", `{"role":"support"}`, "user-8")
	assert.Equal(t, http.StatusForbidden, code, "another user's login")
	code, _ = do("POST", sessions.ContextsPath+"/crm/grants", `{}`, "user-7")
	assert.Equal(t, http.StatusBadRequest, code)
	code, body = do("DELETE", sessions.ContextsPath+"/crm/grants", `{"role":"support"}`, "user-7")
	require.Equal(t, http.StatusOK, code)
	assert.NotContains(t, body, "support")
	assert.Equal(t, http.StatusConflict, sessions.StatusOf(guard.CodeContextLocked))
}
