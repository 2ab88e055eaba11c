package mcptools_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/sessions"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/browserbackend/tools/mcptools"
)

// browser_save_context creates a saved login owned by the server's actor;
// browser_navigate with its context_name is refused without a grant for
// the server's agent, and on a backend that cannot isolate it once granted.
func TestSaveContextOverMCP(t *testing.T) {
	st, err := sessions.Open(filepath.Join(t.TempDir(), "s.db"), sessions.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	log := browserbackendtest.DiscardLogger()
	prov := &browserbackendtest.Provider{K: browserbackend.KindExtension, Desc: refDesc(browserbackend.KindExtension)}
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{prov}, Logger: log})
	tl := tools.New(tools.Options{Selector: sel, Logger: log, Sessions: st})
	_, ms := serve(t, mcptools.Options{Tools: tl, ActorPrincipalID: "user-7", AgentID: "agent-a"})
	cs := connect(t, ms, nil)

	r, _ := ok[tools.SaveContextResult](t, cs, "browser_save_context", map[string]any{"context_name": "crm"})
	assert.Equal(t, tools.SaveContextCreated, r.State)
	require.NoError(t, st.SaveState(t.Context(), "user-7", "crm", sessions.StorageState{}))
	res := call(t, cs, "browser_navigate", map[string]any{"url": "https://example.com/", "context_name": "crm"})
	require.True(t, res.IsError)
	assert.Contains(t, text(res), "forbidden")
	require.NoError(t, st.GrantContext(t.Context(), "user-7", "crm", sessions.Grant{AgentID: "agent-a"}))
	res = call(t, cs, "browser_navigate", map[string]any{"url": "https://example.com/", "context_name": "crm"})
	require.True(t, res.IsError)
	assert.Contains(t, text(res), "does not isolate")
}
