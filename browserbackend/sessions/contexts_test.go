package sessions_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/sessions"
)

var (
	owner  = sessions.Identity{ActorPrincipalID: "user-7", AgentID: "agent-a"}
	other  = sessions.Identity{ActorPrincipalID: "user-7", AgentID: "agent-b", Roles: []string{"support"}}
	secret = sessions.StorageState{
		Cookies: []sessions.Cookie{{Name: "sid", Value: "s3cr3t-cookie-value", Domain: "example.test", Path: "/"}},
		Origins: []sessions.OriginStorage{{Origin: "https://example.test", LocalStorage: [][2]string{{"token", "s3cr3t-storage-value"}}}},
	}
)

// A saved login is created empty, filled by its owner's session, and
// reopened only with a grant by agent id or role (default deny).
func TestSavedLoginsAreDefaultDeny(t *testing.T) {
	st := open(t, dbPath(t), newClock())
	ctx := t.Context()
	_, err := st.OpenContext(ctx, owner, sessions.ContextOpen{Name: "crm", Fill: true})
	require.ErrorIs(t, err, guard.ErrForbidden, "an unknown name")
	_, err = st.CreateContext(ctx, owner.ActorPrincipalID, "")
	require.ErrorIs(t, err, &guard.Error{Code: guard.CodeValidationFailed, Param: "context_name"})

	c, err := st.CreateContext(ctx, owner.ActorPrincipalID, "crm")
	require.NoError(t, err)
	assert.False(t, c.Saved)
	_, err = st.OpenContext(ctx, owner, sessions.ContextOpen{Name: "crm"})
	require.ErrorIs(t, err, guard.ErrForbidden, "opening an unsaved login without filling it")
	got, err := st.OpenContext(ctx, owner, sessions.ContextOpen{Name: "crm", Fill: true})
	require.NoError(t, err)
	assert.Empty(t, got.Cookies)
	require.NoError(t, st.SaveState(ctx, owner.ActorPrincipalID, "crm", secret))

	for _, who := range []sessions.Identity{owner, other, {ActorPrincipalID: "user-8", AgentID: "agent-a"}} {
		_, err = st.OpenContext(ctx, who, sessions.ContextOpen{Name: "crm"})
		require.ErrorIs(t, err, guard.ErrForbidden, "no grant: %+v", who)
	}
	require.NoError(t, st.GrantContext(ctx, owner.ActorPrincipalID, "crm", sessions.Grant{AgentID: "agent-a"}))
	got, err = st.OpenContext(ctx, owner, sessions.ContextOpen{Name: "crm"})
	require.NoError(t, err)
	assert.Equal(t, secret, got)
	_, err = st.OpenContext(ctx, other, sessions.ContextOpen{Name: "crm"})
	require.ErrorIs(t, err, guard.ErrForbidden, "the grant is agent-a's")
	require.NoError(t, st.GrantContext(ctx, owner.ActorPrincipalID, "crm", sessions.Grant{Role: "support"}))
	_, err = st.OpenContext(ctx, other, sessions.ContextOpen{Name: "crm"})
	require.NoError(t, err, "granted by role")
	require.NoError(t, st.RevokeContext(ctx, owner.ActorPrincipalID, "crm", sessions.Grant{Role: "support"}))
	_, err = st.OpenContext(ctx, other, sessions.ContextOpen{Name: "crm"})
	require.ErrorIs(t, err, guard.ErrForbidden, "revoked")
	require.ErrorIs(t, st.GrantContext(ctx, owner.ActorPrincipalID, "crm", sessions.Grant{AgentID: "a", Role: "r"}), guard.ErrValidationFailed)
}

// human_login holds a 15-minute lock: a second open is context_locked until
// the first session marks the login done or the lock expires.
func TestHumanLoginLocksTheSavedLogin(t *testing.T) {
	c := newClock()
	st := open(t, dbPath(t), c)
	ctx := t.Context()
	_, err := st.CreateContext(ctx, owner.ActorPrincipalID, "crm")
	require.NoError(t, err)
	_, err = st.OpenContext(ctx, owner, sessions.ContextOpen{Name: "crm", Fill: true, HumanLogin: true, SessionID: "bs_1"})
	require.NoError(t, err)
	_, err = st.OpenContext(ctx, owner, sessions.ContextOpen{Name: "crm", Fill: true, SessionID: "bs_2"})
	require.ErrorIs(t, err, guard.ErrContextLocked)
	require.ErrorIs(t, st.MarkHumanLoginDone(ctx, owner.ActorPrincipalID, "crm", "bs_2"), guard.ErrValidationFailed)

	c.Add(sessions.LockDuration - time.Second)
	_, err = st.OpenContext(ctx, owner, sessions.ContextOpen{Name: "crm", Fill: true, HumanLogin: true, SessionID: "bs_2"})
	require.ErrorIs(t, err, guard.ErrContextLocked, "still locked a second before the end")
	c.Add(time.Second)
	_, err = st.OpenContext(ctx, owner, sessions.ContextOpen{Name: "crm", Fill: true, HumanLogin: true, SessionID: "bs_2"})
	require.NoError(t, err, "the lock expired; bs_2 holds it now")
	done, err := st.HumanLoginDone(ctx, owner.ActorPrincipalID, "crm")
	require.NoError(t, err)
	assert.False(t, done)
	require.NoError(t, st.MarkHumanLoginDone(ctx, owner.ActorPrincipalID, "crm", "bs_2"))
	done, err = st.HumanLoginDone(ctx, owner.ActorPrincipalID, "crm")
	require.NoError(t, err)
	assert.True(t, done)
	_, err = st.OpenContext(ctx, owner, sessions.ContextOpen{Name: "crm", Fill: true, SessionID: "bs_3"})
	require.NoError(t, err, "marked done: unlocked")
}

// The store file is 0600; with a key no cookie or storage value is in any
// of its files, and another key cannot read it.
func TestSavedLoginsAreSealedWithTheHostsKey(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	for _, tc := range []struct {
		name  string
		key   []byte
		plain bool
	}{{"with a key", key, false}, {"without a key", nil, true}} {
		t.Run(tc.name, func(t *testing.T) {
			path := dbPath(t)
			st, err := sessions.Open(path, sessions.Options{Key: tc.key})
			require.NoError(t, err)
			ctx := t.Context()
			_, err = st.CreateContext(ctx, owner.ActorPrincipalID, "crm")
			require.NoError(t, err)
			require.NoError(t, st.SaveState(ctx, owner.ActorPrincipalID, "crm", secret))
			fi, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
			var all []byte
			files, _ := filepath.Glob(path + "*")
			for _, f := range files {
				b, err := os.ReadFile(f)
				require.NoError(t, err)
				all = append(all, b...)
			}
			assert.Equal(t, tc.plain, bytes.Contains(all, []byte("s3cr3t-cookie-value")))
			assert.Equal(t, tc.plain, bytes.Contains(all, []byte("s3cr3t-storage-value")))
			require.NoError(t, st.GrantContext(ctx, owner.ActorPrincipalID, "crm", sessions.Grant{AgentID: owner.AgentID}))
			got, err := st.OpenContext(ctx, owner, sessions.ContextOpen{Name: "crm"})
			require.NoError(t, err)
			assert.Equal(t, secret, got)
			require.NoError(t, st.Close())
			if tc.key == nil {
				return
			}
			st2, err := sessions.Open(path, sessions.Options{Key: bytes.Repeat([]byte{8}, 32)})
			require.NoError(t, err)
			defer st2.Close()
			_, err = st2.OpenContext(ctx, owner, sessions.ContextOpen{Name: "crm"})
			require.ErrorIs(t, err, guard.ErrProviderError, "another key")
		})
	}
	_, err := sessions.Open(dbPath(t), sessions.Options{Key: []byte("short")})
	require.ErrorIs(t, err, guard.ErrValidationFailed)
}
