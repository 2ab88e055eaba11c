package tools_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/catalog"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/local"
)

func TestScreenshotAsFileWithoutACatalogueIsNotConfigured(t *testing.T) {
	tl, provs := fakeChain()
	_, err := tl.Read().Screenshot(t.Context(), browserbackend.Invocation{ConversationID: "c"}, tools.ScreenshotInput{AsFile: true})
	require.ErrorIs(t, err, tools.ErrFeatureNotConfigured)
	require.ErrorIs(t, err, &guard.Error{Code: guard.CodeFeatureNotConfigured, Param: "as_file"})
	for _, p := range provs {
		assert.Zero(t, p.Builds(), "nothing was sent")
	}
}

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// TestScreenshotAsFileServesTheBytesThroughASignedLink: a real screenshot
// is catalogued; its link serves bytes with the result's sha256 until it
// expires (injected clock), then 403; a tampered link is 403.
func TestScreenshotAsFileServesTheBytesThroughASignedLink(t *testing.T) {
	s := startSite(t)
	cat, err := catalog.NewDir(t.TempDir())
	require.NoError(t, err)
	c := &testClock{t: time.Now()}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	links := catalog.NewLinks(cat, []byte("a test key of at least thirty-two bytes"), catalog.LinkOptions{BaseURL: srv.URL + "/v1/files", Now: c.Now})
	mux.Handle("/v1/files", links)

	b := local.New(local.Options{Logger: quietLogger()})
	t.Cleanup(func() { b.Close() })
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{local.NewProvider(b)}, Logger: quietLogger()})
	tl := tools.New(tools.Options{Selector: sel, ScreenshotDir: t.TempDir(), Logger: quietLogger(), Catalog: cat, Links: links})
	inv := browserbackend.Invocation{ConversationID: "conv-files", InterfaceID: "cli"}
	ctx := stepCtx(t)
	_, err = tl.Navigate(ctx, inv, tools.NavigateInput{URL: s.url("/form")})
	require.NoError(t, err)
	shot, err := tl.Read().Screenshot(ctx, inv, tools.ScreenshotInput{AsFile: true})
	require.NoError(t, err)
	require.NotNil(t, shot.File)
	assert.Equal(t, shot.SHA256, shot.File.SHA256)
	assert.Equal(t, shot.Size, shot.File.SizeBytes)

	fetch := func(link string) (int, string) {
		resp, err := srv.Client().Get(link)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		sum := sha256.Sum256(body)
		return resp.StatusCode, hex.EncodeToString(sum[:])
	}
	code, sum := fetch(shot.File.URL)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, shot.File.SHA256, sum)

	u, _ := url.Parse(shot.File.URL)
	q := u.Query()
	q.Set("exp", "99999999999")
	u.RawQuery = q.Encode()
	code, _ = fetch(u.String())
	assert.Equal(t, http.StatusForbidden, code, "tampered")

	c.Add(catalog.DefaultLinkTTL)
	code, _ = fetch(shot.File.URL)
	assert.Equal(t, http.StatusForbidden, code, "expired")
}
