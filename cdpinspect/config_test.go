package cdpinspect_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/cdpinspect"
)

// SEL-12: configuration.

func TestDefaultConfigHasTheSeedDefaults(t *testing.T) {
	c := cdpinspect.DefaultConfig()
	assert.False(t, c.Enabled)
	assert.Equal(t, "localhost", c.Host)
	assert.Equal(t, 9222, c.Port)
	assert.Equal(t, 500, c.ProbeTimeoutMs)
	assert.Equal(t, 500*time.Millisecond, c.ProbeTimeout())
	assert.True(t, c.DesktopAuto.Enabled)
	assert.Equal(t, 30000, c.DesktopAuto.CooldownMs)
	assert.Equal(t, 30*time.Second, c.DesktopAuto.Cooldown())
	assert.NoError(t, c.Validate())
}

func TestLoadConfigReadsHostBrowserAndFillsDefaults(t *testing.T) {
	c, err := cdpinspect.LoadConfig([]byte(`{
		"other": {"ignored": true},
		"hostBrowser": {"cdpInspect": {"enabled": true, "port": 9333, "desktopAuto": {"cooldownMs": 0}}}
	}`))
	require.NoError(t, err)
	want := cdpinspect.DefaultConfig()
	want.Enabled = true
	want.Port = 9333
	want.DesktopAuto.CooldownMs = 0
	assert.Equal(t, want, c, "unset keys keep their defaults, desktopAuto.enabled included")
}

func TestLoadConfigWithoutHostBrowserGivesDefaults(t *testing.T) {
	for _, doc := range []string{`{}`, `{"hostBrowser": null}`, `{"hostBrowser": {}}`, `{"hostBrowser": {"cdpInspect": {}}}`} {
		c, err := cdpinspect.LoadConfig([]byte(doc))
		require.NoError(t, err, doc)
		assert.Equal(t, cdpinspect.DefaultConfig(), c, doc)
	}
}

func TestLoadConfigValidatesEachField(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want string
	}{
		{`{"port": 0}`, "hostBrowser.cdpInspect.port: must be 1–65535, got 0"},
		{`{"port": 65536}`, "hostBrowser.cdpInspect.port: must be 1–65535, got 65536"},
		{`{"probeTimeoutMs": 49}`, "hostBrowser.cdpInspect.probeTimeoutMs: must be 50–5000, got 49"},
		{`{"probeTimeoutMs": 5001}`, "hostBrowser.cdpInspect.probeTimeoutMs: must be 50–5000, got 5001"},
		{`{"desktopAuto": {"cooldownMs": -1}}`, "hostBrowser.cdpInspect.desktopAuto.cooldownMs: must be 0–300000, got -1"},
		{`{"desktopAuto": {"cooldownMs": 300001}}`, "hostBrowser.cdpInspect.desktopAuto.cooldownMs: must be 0–300000, got 300001"},
		{`{"host": ""}`, "hostBrowser.cdpInspect.host: must not be empty"},
	} {
		_, err := cdpinspect.LoadConfig([]byte(`{"hostBrowser": {"cdpInspect": ` + tc.doc + `}}`))
		require.Error(t, err, tc.doc)
		assert.Contains(t, err.Error(), tc.want)
		assert.True(t, strings.HasPrefix(err.Error(), "cdpinspect: "), err.Error())
	}
	for _, ok := range []string{`{"port": 1}`, `{"port": 65535}`, `{"probeTimeoutMs": 50}`, `{"probeTimeoutMs": 5000}`,
		`{"desktopAuto": {"cooldownMs": 300000}}`} {
		_, err := cdpinspect.LoadConfig([]byte(`{"hostBrowser": {"cdpInspect": ` + ok + `}}`))
		assert.NoError(t, err, ok)
	}
}

func TestLoadConfigReportsEveryInvalidField(t *testing.T) {
	_, err := cdpinspect.LoadConfig([]byte(`{"hostBrowser": {"cdpInspect": {"port": -1, "probeTimeoutMs": 1, "desktopAuto": {"cooldownMs": -5}}}}`))
	require.Error(t, err)
	for _, f := range []string{"cdpInspect.port", "cdpInspect.probeTimeoutMs", "cdpInspect.desktopAuto.cooldownMs"} {
		assert.Contains(t, err.Error(), f)
	}
}

func TestLoadConfigRejectsUnknownKeys(t *testing.T) {
	for _, doc := range []string{
		`{"hostBrowser": {"cdpInspekt": {}}}`,
		`{"hostBrowser": {"cdpInspect": {"prot": 9222}}}`,
		`{"hostBrowser": {"cdpInspect": {"desktopAuto": {"cooldown": 5}}}}`,
	} {
		_, err := cdpinspect.LoadConfig([]byte(doc))
		require.Error(t, err, doc)
		assert.Contains(t, err.Error(), "unknown field", doc)
		assert.True(t, strings.HasPrefix(err.Error(), "cdpinspect: config"), err.Error())
	}
}

func TestLoadConfigRejectsMalformedJSONAndWrongTypes(t *testing.T) {
	for _, doc := range []string{``, `{`, `[]`, `{"hostBrowser": {"cdpInspect": {"port": "9222"}}}`, `{"hostBrowser": 5}`} {
		_, err := cdpinspect.LoadConfig([]byte(doc))
		assert.Error(t, err, doc)
	}
}
