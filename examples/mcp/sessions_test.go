package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// -sessions-db gives browser_save_context its store: with no browser open
// it creates the empty saved login, in a file only its owner can read,
// sealed with the key of -sessions-key-file (created 0600); without the flag
// the tool is feature_not_configured.
func TestSessionsFlagsServeSavedLogins(t *testing.T) {
	dir := t.TempDir()
	db, key := filepath.Join(dir, "sessions.db"), filepath.Join(dir, "sessions.key")
	cs, _ := startServer(t, "-sessions-db", db, "-sessions-key-file", key, "-isolated", "-agent-id", "agent-7", "-roles", "sales,ops")
	res := callTool(t, cs, "browser_save_context", map[string]any{"context_name": "crm"})
	require.False(t, res.IsError, resultText(res))
	assert.Contains(t, resultText(res), "saved login crm")
	require.NoError(t, cs.Close())
	for _, f := range []string{db, key} {
		st, err := os.Stat(f)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), f)
	}

	cs, _ = startServer(t)
	res = callTool(t, cs, "browser_save_context", map[string]any{"context_name": "crm"})
	require.True(t, res.IsError)
	assert.Contains(t, resultText(res), "feature_not_configured")
}
