package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/browserchain/browserchain/browserbackend"
)

// ReasonAlwaysLast is the reason the local provider gives for its candidate:
// local is always the last resort.
const ReasonAlwaysLast = "local: always last"

// ReasonPinned is the reason when the invocation pins browser_mode local.
const ReasonPinned = "pinned: local requested"

// NewProvider returns the browserbackend.Provider of kind local. It
// always proposes, without blocking and without launching anything; the
// candidate's Build returns the invocation's Client attached to its
// conversation's page, launching the browser first if needed (so a launch
// failure is a construction-stage transport error with code launch_failed).
// Its Probe is a preflight for status reports: the browser executable and the
// Playwright driver must be present; it starts nothing.
//
// The provider is safe for concurrent use; b is shared by all invocations and
// closed by its owner, not by the provider.
func NewProvider(b *Browser) browserbackend.Provider {
	return provider{b}
}

type provider struct{ b *Browser }

// Descriptor declares the local kind: browser_mode "local" (alias
// "playwright"), transport label "playwright", and the remediation hints of
// a failed launch: how to install Chromium and the driver when they are
// missing (DetailNotInstalled), where to look when the browser itself failed
// to start.
var Descriptor = browserbackend.Descriptor{
	Kind:        browserbackend.KindLocal,
	Mode:        "local",
	Aliases:     []string{"playwright"},
	Transport:   "playwright",
	Caps:        browserbackend.CapTabs | browserbackend.CapDialogs | browserbackend.CapDownloads,
	Remediation: remediation,
}

func remediation(a browserbackend.Attempt) []string {
	switch {
	case a.Detail == DetailNotInstalled:
		return []string{
			"Install Chromium (Debian: apt-get install chromium) and the Playwright driver: run scripts/setup.sh.",
			"If Chromium lives elsewhere, set the local backend's executable path (local.Options.ExecutablePath or BROWSERCHAIN_CHROMIUM).",
		}
	case a.Code == browserbackend.CodeLaunchFailed:
		return []string{
			"The local Chromium is installed but did not start: its own error is in the attempt above " +
				"(a profile directory in use by another Chromium, or not writable, is a common cause).",
		}
	}
	return nil
}

// Rule is the selection rule of the local candidate: always proposed, last
// in the reference order (extension, host-bridge, cdp-inspect, local); the reason says whether it was pinned. It returns the
// candidate without Build or Probe.
func Rule(_ browserbackend.Invocation, env browserbackend.Env) browserbackend.Candidate {
	reason := ReasonAlwaysLast
	if env.Pinned {
		reason = ReasonPinned
	}
	return browserbackend.Candidate{Kind: browserbackend.KindLocal, Reason: reason}
}

// Describe returns Descriptor, with browserbackend.CapIsolated when the
// Browser runs with Options.Isolated.
func (p provider) Describe() browserbackend.Descriptor {
	d := Descriptor
	if p.b.opts.Isolated {
		d.Caps |= browserbackend.CapIsolated
	}
	return d
}

func (p provider) Propose(inv browserbackend.Invocation, env browserbackend.Env) (browserbackend.Candidate, error) {
	c := Rule(inv, env)
	conv, req := inv.ConversationID, inv.Tab
	c.Build = func(ctx context.Context) (browserbackend.ScopedClient, error) {
		return p.b.build(ctx, conv, req)
	}
	c.Probe = p.b.Preflight
	return c, nil
}

// Preflight checks, without starting anything, that the browser executable
// exists and that the Playwright driver is installed where playwright-go looks
// for it. A failure is a transport error with code launch_failed and the
// remediation hint (Detail DetailNotInstalled).
func (b *Browser) Preflight(context.Context) error {
	if _, err := os.Stat(b.opts.ExecutablePath); err != nil {
		return notInstalled(fmt.Sprintf("browser executable %s is not usable", b.opts.ExecutablePath), err)
	}
	dir, err := driverDirectory(b.opts.DriverDirectory)
	if err != nil {
		return notInstalled("cannot locate the Playwright driver", err)
	}
	if os.Getenv("PLAYWRIGHT_CLI_PATH") == "" {
		if _, err := os.Stat(filepath.Join(dir, "package", "cli.js")); err != nil {
			return notInstalled("the Playwright driver is not installed in "+dir, err)
		}
	}
	return nil
}

// driverDirectory resolves the driver directory the way playwright-go does:
// the explicit option, else $PLAYWRIGHT_DRIVER_PATH, else
// <user cache>/ms-playwright-go/<DriverVersion>.
func driverDirectory(explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if env := os.Getenv("PLAYWRIGHT_DRIVER_PATH"); env != "" {
		return env, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	cache := filepath.Join(home, ".cache")
	switch runtime.GOOS {
	case "darwin":
		cache = filepath.Join(home, "Library", "Caches")
	case "windows":
		cache = filepath.Join(home, "AppData", "Local")
	}
	return filepath.Join(cache, "ms-playwright-go", DriverVersion), nil
}

// DriverVersion is the Playwright (playwright-core) version that
// github.com/mxschmitt/playwright-go v0.6401.0 drives; scripts/setup.sh packs
// exactly this version from npm.
const DriverVersion = "1.64.1"
