package catalog_test

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
	"go.uber.org/goleak"

	"github.com/browserchain/browserchain/browserbackend/catalog"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

var key = []byte("0123456789abcdef0123456789abcdef")

func get(t *testing.T, srv *httptest.Server, link string) (int, []byte) {
	u, err := url.Parse(link)
	require.NoError(t, err)
	resp, err := srv.Client().Get(srv.URL + "/files?" + u.RawQuery)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestSignedLinkServesTheBytesUntilItExpires(t *testing.T) {
	dir := t.TempDir()
	cat, err := catalog.NewDir(dir)
	require.NoError(t, err)
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	links := catalog.NewLinks(cat, key, catalog.LinkOptions{BaseURL: "http://example.invalid/files", Now: c.Now})
	mux := http.NewServeMux()
	mux.Handle("/files", links)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	data := []byte("\x89PNG fake image bytes")
	f, err := cat.Put(t.Context(), "image/png", data)
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	assert.Equal(t, hex.EncodeToString(sum[:]), f.SHA256)
	assert.Equal(t, int64(len(data)), f.Size)

	link, exp, err := links.URL(f.ID)
	require.NoError(t, err)
	assert.Equal(t, c.Now().Add(15*time.Minute), exp)
	code, body := get(t, srv, link)
	require.Equal(t, http.StatusOK, code)
	got := sha256.Sum256(body)
	assert.Equal(t, f.SHA256, hex.EncodeToString(got[:]), "the link serves the bytes with the right sha256")

	// Tampered: another id, another expiry, another signature.
	other, _ := cat.Put(t.Context(), "image/png", []byte("other"))
	u, _ := url.Parse(link)
	for _, mutate := range []func(q url.Values){
		func(q url.Values) { q.Set("id", other.ID) },
		func(q url.Values) { q.Set("exp", "99999999999") },
		func(q url.Values) { q.Set("sig", otherFirst(q.Get("sig"))) },
		func(q url.Values) { q.Del("sig") },
	} {
		q := u.Query()
		mutate(q)
		code, _ := get(t, srv, "x?"+q.Encode())
		assert.Equal(t, http.StatusForbidden, code)
	}

	c.Add(14*time.Minute + 59*time.Second)
	code, _ = get(t, srv, link)
	assert.Equal(t, http.StatusOK, code, "still valid")
	c.Add(time.Second)
	code, _ = get(t, srv, link)
	assert.Equal(t, http.StatusForbidden, code, "expired")

	// The index survives a reopen.
	again, err := catalog.NewDir(dir)
	require.NoError(t, err)
	g, rc, err := again.Open(t.Context(), f.ID)
	require.NoError(t, err)
	rc.Close()
	assert.Equal(t, f.SHA256, g.SHA256)
	_, _, err = again.Open(t.Context(), "f_000000000000000000000000")
	assert.ErrorIs(t, err, catalog.ErrNotFound)
}

// otherFirst returns sig with its first character replaced by a different
// one (a fixed replacement would leave a signature that starts with it
// unchanged).
func otherFirst(sig string) string {
	if sig[0] == '0' {
		return "1" + sig[1:]
	}
	return "0" + sig[1:]
}
