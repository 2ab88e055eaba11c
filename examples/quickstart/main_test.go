package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image/png"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/browserchain/browserchain/browserbackend"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// With no extension, no desktop client and no Chrome on a debugging port, the
// auto chain falls through to local and the screenshot file is a valid PNG
// whose reported hash and size match (EX-1).
func TestQuickstartFallsThroughToLocal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "shot.png")
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	res, err := run(ctx, logger, "", "auto", "cli", out, nil)
	require.NoError(t, err)
	assert.Equal(t, browserbackend.KindLocal, res.Backend)
	require.NotEmpty(t, res.Attempts)
	last := res.Attempts[len(res.Attempts)-1]
	assert.Equal(t, browserbackend.KindLocal, last.Kind)
	assert.Equal(t, browserbackend.StageSuccess, last.Stage)
	for _, a := range res.Attempts[:len(res.Attempts)-1] {
		assert.NotEqual(t, browserbackend.StageSuccess, a.Stage, "%+v", a)
	}
	assert.Equal(t, "browserchain quickstart", res.Title)

	data, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, len(data), res.Screenshot.Bytes)
	sum := sha256.Sum256(data)
	assert.Equal(t, hex.EncodeToString(sum[:]), res.Screenshot.SHA256)
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	assert.Positive(t, img.Bounds().Dx())
}

func TestQuickstartRejectsInvalidMode(t *testing.T) {
	_, err := run(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), "", "host-bridge", "cli", filepath.Join(t.TempDir(), "x.png"), nil)
	assert.ErrorIs(t, err, browserbackend.ErrPolicy)
}

// A failed run with --json still prints one JSON object, carrying the error
// and the pinned-mode report instead of an empty screenshot.
func TestQuickstartJSONFailureCarriesErrorAndReport(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := cli([]string{"--json", "--mode", "extension", "--timeout", "1m", "--out", filepath.Join(t.TempDir(), "x.png")}, &stdout, &stderr)
	assert.Equal(t, 1, code)
	var res Result
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), stdout.String())
	assert.Empty(t, res.Backend)
	assert.Nil(t, res.Screenshot)
	assert.Contains(t, res.Error, `browser_mode "extension" is unavailable`)
	assert.Contains(t, res.Report, "extension")
	require.NotEmpty(t, res.Attempts)
	assert.Equal(t, browserbackend.KindExtension, res.Attempts[0].Kind)
}

func TestQuickstartInvalidModeIsAUsageError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, cli([]string{"--mode", "bogus"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "invalid browser_mode")
}

func TestPolicyFlagsRefuseBeforeAnyBrowserStarts(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, cli([]string{"--allowed-domains", "app.example.com", "--url", "http://169.254.169.254/latest/"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "forbidden")
	stderr.Reset()
	assert.Equal(t, 2, cli([]string{"--allowed-domains", "app.example.com", "--url", "https://elsewhere.example/"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "allowed_domains")
	stderr.Reset()
	assert.Equal(t, 2, cli([]string{"--allowed-domains="}, &stdout, &stderr), "an explicit empty list is invalid")
	assert.Contains(t, stderr.String(), "validation_failed")
}
