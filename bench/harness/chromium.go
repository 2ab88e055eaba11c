package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// chromiumArgs are the flags of every browser the harness starts (SPEC §1):
// headless, a free debugging port, no sandbox (root), and the switches that
// keep Chromium quiet on a closed network. The same set as
// internal/chromiumtest, which a separate module cannot import.
var chromiumArgs = []string{
	"--headless=new",
	"--remote-debugging-port=0",
	"--no-sandbox",
	"--disable-gpu",
	"--disable-quic",
	"--no-first-run",
	"--no-default-browser-check",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
	"--disable-breakpad",
	"--disable-crash-reporter",
	"--disable-default-apps",
	"--disable-features=Translate,MediaRouter,OptimizationHints",
	"--password-store=basic",
	"--use-mock-keychain",
	"--mute-audio",
	"--hide-scrollbars",
	"--window-size=1280,800",
}

// ChromiumPath returns the browser binary: $CHROMIUM_PATH, else
// $BROWSERCHAIN_CHROMIUM, else /usr/bin/chromium.
func ChromiumPath() string {
	for _, env := range []string{"CHROMIUM_PATH", "BROWSERCHAIN_CHROMIUM"} {
		if p := os.Getenv(env); p != "" {
			return p
		}
	}
	return "/usr/bin/chromium"
}

// Chromium is a headless Chromium the harness started in its own process
// group. Close kills the group and removes the profile.
type Chromium struct {
	Port        int
	WSURL       string // ws://127.0.0.1:<port>/devtools/browser/<id>
	UserDataDir string
	PID         int

	exited    chan struct{}
	closeOnce sync.Once
}

// StartChromium launches Chromium with a fresh profile and, when extDir is
// not empty, the unpacked extension in extDir. It returns once the DevTools
// endpoint is up (DevToolsActivePort written), polling the file every 5 ms.
// extra are further command-line flags.
func StartChromium(ctx context.Context, extDir string, extra ...string) (*Chromium, error) {
	dir, err := os.MkdirTemp("", "benchreport-chromium-")
	if err != nil {
		return nil, err
	}
	args := append([]string{}, chromiumArgs...)
	args = append(args, "--user-data-dir="+dir)
	if extDir != "" {
		args = append(args, "--load-extension="+extDir, "--disable-extensions-except="+extDir)
	}
	args = append(args, extra...)
	args = append(args, "about:blank")
	cmd := exec.Command(ChromiumPath(), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("benchreport: start chromium: %w", err)
	}
	c := &Chromium{UserDataDir: dir, PID: cmd.Process.Pid, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(c.exited) }()

	file := filepath.Join(dir, "DevToolsActivePort")
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		if data, err := os.ReadFile(file); err == nil {
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			if len(lines) == 2 {
				if port, err := strconv.Atoi(lines[0]); err == nil {
					c.Port = port
					c.WSURL = "ws://127.0.0.1:" + lines[0] + strings.TrimSpace(lines[1])
					return c, nil
				}
			}
		}
		select {
		case <-tick.C:
		case <-c.exited:
			c.Close()
			return nil, errors.New("benchreport: chromium exited before writing DevToolsActivePort")
		case <-deadline.C:
			c.Close()
			return nil, errors.New("benchreport: no DevToolsActivePort after 30s")
		case <-ctx.Done():
			c.Close()
			return nil, ctx.Err()
		}
	}
}

// Close kills the browser's process group, waits for the browser to be
// reaped and removes its profile. Idempotent.
func (c *Chromium) Close() {
	c.closeOnce.Do(func() {
		_ = syscall.Kill(-c.PID, syscall.SIGKILL)
		select {
		case <-c.exited:
		case <-time.After(10 * time.Second):
		}
		// Helpers of the group exit with it; give the profile a moment.
		for range 50 {
			if syscall.Kill(-c.PID, 0) != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		_ = os.RemoveAll(c.UserDataDir)
	})
}
