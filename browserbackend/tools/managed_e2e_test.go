package tools_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/sessions"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/internal/chromiumtest"
	"github.com/browserchain/browserchain/local"
)

// loginSite serves /login (sets the sid cookie and a localStorage token)
// and /account, which shows both with an e-mail, a phone and a card number.
func loginSite(t *testing.T) string {
	mux := http.NewServeMux()
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: "signed-in-" + r.URL.Query().Get("u"), Path: "/", MaxAge: 3600})
		page(w, "Login", `<p>welcome</p><script>localStorage.setItem("token", "tok-42")</script>`)
	})
	mux.HandleFunc("/account", func(w http.ResponseWriter, r *http.Request) {
		sid := "anonymous"
		if c, err := r.Cookie("sid"); err == nil {
			sid = c.Value
		}
		page(w, "Account", `<p id="who">`+sid+`</p><p id="tok"></p>
<p>Mail ada@example.com, call +44 20 7946 0958, card 4111 1111 1111 1111, order 2026-03-01.</p>
<a href="mailto:ada@example.com">ada@example.com</a>
<script>document.getElementById("tok").textContent = "token=" + localStorage.getItem("token")</script>`)
	})
	return chromiumtest.LoopbackServer(t, mux).URL
}

// A saved login is filled in one conversation, reused in another with a
// grant and refused without; reads of the reopened browser need
// allow_extract and are redacted; a human_login lock answers
// context_locked.
func TestSavedLoginsAcrossConversations(t *testing.T) {
	base := loginSite(t)
	b := local.New(local.Options{Logger: quietLogger(), Isolated: true})
	t.Cleanup(func() { b.Close() })
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := sessions.Open(path, sessions.Options{Key: bytes.Repeat([]byte{1}, 32)})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{local.NewProvider(b)}, Logger: quietLogger()})
	tl := tools.New(tools.Options{Selector: sel, ScreenshotDir: t.TempDir(), Logger: quietLogger(), Sessions: st})
	ctx := stepCtx(t)
	inv := func(conv, agent string) browserbackend.Invocation {
		return browserbackend.Invocation{ConversationID: conv, InterfaceID: "cli", ActorPrincipalID: "user-7", AgentID: agent}
	}
	account := func(in browserbackend.Invocation, s tools.SessionInput) error {
		_, err := tl.Navigate(ctx, in, tools.NavigateInput{URL: base + "/account?mail=ada@example.com", SessionInput: s})
		return err
	}

	// Filled in one conversation.
	fill := inv("fill", "agent-a")
	r, err := tl.SaveContext(ctx, fill, tools.SaveContextInput{ContextName: "crm"})
	require.NoError(t, err)
	assert.Equal(t, tools.SaveContextCreated, r.State)
	_, err = tl.Navigate(ctx, fill, tools.NavigateInput{URL: base + "/login?u=ada", SessionInput: tools.SessionInput{ContextName: "crm", PersistContext: true}})
	require.NoError(t, err)
	_, err = tl.SaveContext(ctx, fill, tools.SaveContextInput{ContextName: "other"})
	require.ErrorIs(t, err, guard.ErrValidationFailed, "save_context from a browser open on another login")
	_, err = tl.Close(ctx, fill, tools.ReleaseInput{})
	require.NoError(t, err)
	files, _ := filepath.Glob(path + "*")
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		assert.False(t, bytes.Contains(raw, []byte("signed-in-ada")), "%s holds the cookie in plain text", f)
		if f == path {
			fi, err := os.Stat(f)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		}
	}

	// Refused without a grant; a plain conversation is signed out.
	require.ErrorIs(t, account(inv("nogrant", "agent-b"), tools.SessionInput{ContextName: "crm"}), guard.ErrForbidden)
	plain := inv("plain", "agent-b")
	require.NoError(t, account(plain, tools.SessionInput{}))
	ex, err := tl.Read().Extract(ctx, plain, tools.ExtractInput{})
	require.NoError(t, err)
	assert.Contains(t, ex.Text, "anonymous")
	assert.Contains(t, ex.Text, "ada@example.com", "no saved login: nothing redacted")

	// Reused with a grant; reads need allow_extract, and are redacted.
	require.NoError(t, st.GrantContext(ctx, "user-7", "crm", sessions.Grant{AgentID: "agent-b"}))
	gated := inv("gated", "agent-b")
	require.NoError(t, account(gated, tools.SessionInput{ContextName: "crm"}))
	_, err = tl.Read().Extract(ctx, gated, tools.ExtractInput{})
	require.ErrorIs(t, err, &guard.Error{Code: guard.CodeForbidden, Param: "allow_extract"})
	reuse := inv("reuse", "agent-b")
	require.NoError(t, account(reuse, tools.SessionInput{ContextName: "crm", AllowExtract: true}))
	ex, err = tl.Read().Extract(ctx, reuse, tools.ExtractInput{})
	require.NoError(t, err)
	assert.Contains(t, ex.Text, "signed-in-ada", "the cookie came back")
	assert.Contains(t, ex.Text, "token=tok-42", "the localStorage came back")
	for _, leak := range []string{"ada@example.com", "7946 0958", "4111 1111"} {
		assert.NotContains(t, ex.Text+ex.URL, leak)
	}
	for _, mark := range []string{tools.RedactedEmail, tools.RedactedPhone, tools.RedactedCard, "2026-03-01"} {
		assert.Contains(t, ex.Text, mark)
	}
	links, err := tl.Read().Links(ctx, reuse, tools.LinksInput{})
	require.NoError(t, err)
	require.Len(t, links.Links, 1)
	assert.Equal(t, "mailto:"+tools.RedactedEmail, links.Links[0].Href)
	assert.Equal(t, tools.RedactedEmail, links.Links[0].Text)
	shot, err := tl.Read().Screenshot(ctx, reuse, tools.ScreenshotInput{})
	require.NoError(t, err)
	assert.NotContains(t, shot.URL, "ada@example.com")
	for _, c := range []browserbackend.Invocation{gated, reuse, plain} {
		_, err = tl.Close(ctx, c, tools.ReleaseInput{})
		require.NoError(t, err)
	}

	// human_login: locked until the second save_context, then persisted.
	human, second := inv("human", "agent-a"), inv("second", "agent-a")
	_, err = tl.SaveContext(ctx, human, tools.SaveContextInput{ContextName: "desk"})
	require.NoError(t, err)
	_, err = tl.Navigate(ctx, human, tools.NavigateInput{URL: base + "/login?u=grace", SessionInput: tools.SessionInput{ContextName: "desk", HumanLogin: true}})
	require.NoError(t, err)
	err = account(second, tools.SessionInput{ContextName: "desk", PersistContext: true})
	require.ErrorIs(t, err, guard.ErrContextLocked)
	r, err = tl.SaveContext(ctx, human, tools.SaveContextInput{ContextName: "desk"})
	require.NoError(t, err)
	assert.Equal(t, tools.SaveContextMarked, r.State)
	_, err = tl.Close(ctx, human, tools.ReleaseInput{})
	require.NoError(t, err)
	c, err := st.Context(ctx, "user-7", "desk")
	require.NoError(t, err)
	assert.True(t, c.Saved)
	assert.True(t, c.LockedUntil.IsZero())
	assert.False(t, strings.Contains(c.Name, "grace"))
}
