package cdpinspect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// Config configures the cdp-inspect backend: the "hostBrowser.cdpInspect"
// configuration keys. Use DefaultConfig or LoadConfig: the zero value
// disables desktop-auto and has no port.
type Config struct {
	// Enabled adds cdp-inspect to every auto invocation (default false).
	Enabled bool `json:"enabled"`
	// Host is the DevTools HTTP host (default "localhost"); it must resolve to
	// loopback.
	Host string `json:"host"`
	// Port is the DevTools HTTP port, 1–65535 (default 9222).
	Port int `json:"port"`
	// ProbeTimeoutMs bounds every discovery HTTP step, 50–5000 (default 500).
	ProbeTimeoutMs int `json:"probeTimeoutMs"`
	// DesktopAuto adds cdp-inspect to macos turns.
	DesktopAuto DesktopAutoConfig `json:"desktopAuto"`
}

// DesktopAutoConfig configures desktop-auto cdp-inspect: cdp-inspect added
// to macos turns, with a cooldown after a transport failure.
type DesktopAutoConfig struct {
	// Enabled (default true) adds cdp-inspect to macos turns.
	Enabled bool `json:"enabled"`
	// CooldownMs, 0–300000 (default 30000), skips desktop-auto cdp-inspect
	// after a transport failure; 0 disables the cooldown. The reference
	// server uses the same window for the host-bridge cooldown.
	CooldownMs int `json:"cooldownMs"`
}

// DefaultConfig returns the defaults: disabled, localhost:9222, a 500 ms
// probe timeout, desktop-auto enabled with a 30 s cooldown.
func DefaultConfig() Config {
	return Config{
		Enabled:        false,
		Host:           "localhost",
		Port:           9222,
		ProbeTimeoutMs: 500,
		DesktopAuto:    DesktopAutoConfig{Enabled: true, CooldownMs: 30000},
	}
}

// Addr returns "host:port".
func (c Config) Addr() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }

// ProbeTimeout returns ProbeTimeoutMs as a duration.
func (c Config) ProbeTimeout() time.Duration {
	return time.Duration(c.ProbeTimeoutMs) * time.Millisecond
}

// Cooldown returns CooldownMs as a duration.
func (c DesktopAutoConfig) Cooldown() time.Duration {
	return time.Duration(c.CooldownMs) * time.Millisecond
}

// Validate checks every field's range and returns all problems joined, each
// naming its JSON path (e.g. "hostBrowser.cdpInspect.port: must be 1–65535, got 0").
func (c Config) Validate() error {
	var errs []error
	bad := func(field, rule string, got any) {
		errs = append(errs, fmt.Errorf("cdpinspect: hostBrowser.cdpInspect.%s: %s, got %v", field, rule, got))
	}
	ci := c
	if ci.Host == "" {
		bad("host", "must not be empty", `""`)
	}
	if ci.Port < 1 || ci.Port > 65535 {
		bad("port", "must be 1–65535", ci.Port)
	}
	if ci.ProbeTimeoutMs < 50 || ci.ProbeTimeoutMs > 5000 {
		bad("probeTimeoutMs", "must be 50–5000", ci.ProbeTimeoutMs)
	}
	if ci.DesktopAuto.CooldownMs < 0 || ci.DesktopAuto.CooldownMs > 300000 {
		bad("desktopAuto.cooldownMs", "must be 0–300000", ci.DesktopAuto.CooldownMs)
	}
	return errors.Join(errs...)
}

// LoadConfig reads "hostBrowser.cdpInspect" from a JSON document, fills unset
// keys with DefaultConfig, rejects unknown keys (also unknown keys of
// "hostBrowser"), and validates the result. A document without "hostBrowser"
// yields the defaults.
func LoadConfig(data []byte) (Config, error) {
	var doc struct {
		HostBrowser json.RawMessage `json:"hostBrowser"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return Config{}, fmt.Errorf("cdpinspect: config: %w", err)
	}
	hb := struct {
		CDPInspect *Config `json:"cdpInspect"`
	}{CDPInspect: new(Config)}
	*hb.CDPInspect = DefaultConfig()
	if len(doc.HostBrowser) > 0 && !bytes.Equal(doc.HostBrowser, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(doc.HostBrowser))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&hb); err != nil {
			return Config{}, fmt.Errorf("cdpinspect: config: hostBrowser: %w", err)
		}
	}
	cfg := DefaultConfig()
	if hb.CDPInspect != nil { // "cdpInspect": null keeps the defaults
		cfg = *hb.CDPInspect
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}
