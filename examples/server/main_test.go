package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/examples/extension"
	"github.com/browserchain/browserchain/examples/server/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestDefaults_PairTheVellumExtensionWithNoFlags: with no flags the server
// listens where the Vellum extension looks (127.0.0.1:7830) and accepts
// pairing, with the empty JSON body it sends, from every published Vellum
// id and from the reference extension (WIRE-6); /v1/events never answers
// 404.
func TestDefaults_PairTheVellumExtensionWithNoFlags(t *testing.T) {
	c, err := parseFlags(nil)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:7830", c.listen)
	assert.Equal(t, browserbackend.DefaultPolicy.Name, c.policy.Name)
	rt, err := runtime.New(runtime.Config{Key: bytes.Repeat([]byte("k"), 32), AllowedOrigins: c.origins})
	require.NoError(t, err)
	srv := httptest.NewServer(rt.Handler)
	defer func() { rt.Close(); srv.Close() }()
	pair := func(origin string) int {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/pair", strings.NewReader(""))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Vellum-Interface-Id", "chrome-extension")
		req.Header.Set("Origin", origin)
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, o := range append(runtime.VellumExtensionOrigins(), extension.Origin) {
		assert.Equal(t, http.StatusOK, pair(o), o)
	}
	assert.Equal(t, http.StatusForbidden, pair("chrome-extension://hijjdbfolakmbkdnkllajeiiiodmapng"))

	for _, tc := range []struct{ method, auth string }{{"GET", ""}, {"GET", "Bearer nope"}, {"POST", ""}, {"HEAD", ""}} {
		req, _ := http.NewRequest(tc.method, srv.URL+"/v1/events", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.NotEqual(t, http.StatusNotFound, resp.StatusCode, "%s /v1/events %q", tc.method, tc.auth)
	}
}

func TestFlags_OriginsAddOrReplaceAndPolicy(t *testing.T) {
	c, err := parseFlags([]string{"-add-origins", "hijjdbfolakmbkdnkllajeiiiodmapng", "-policy", "no-replay"})
	require.NoError(t, err)
	assert.Equal(t, append(append(runtime.VellumExtensionOrigins(), extension.Origin),
		"chrome-extension://hijjdbfolakmbkdnkllajeiiiodmapng"), c.origins)
	assert.Equal(t, browserbackend.NoReplayPolicy.Name, c.policy.Name)

	c, err = parseFlags([]string{"-allowed-origins", "chrome-extension://aaaabbbbccccddddeeeeffffgggghhhh,kajfcoaefacmjgdaloeafnpcfaeahcio"})
	require.NoError(t, err)
	assert.Equal(t, []string{"chrome-extension://aaaabbbbccccddddeeeeffffgggghhhh",
		"chrome-extension://kajfcoaefacmjgdaloeafnpcfaeahcio"}, c.origins)

	_, err = parseFlags([]string{"-policy", "sometimes"})
	assert.Error(t, err)
}
