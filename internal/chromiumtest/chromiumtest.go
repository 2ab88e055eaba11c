package chromiumtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// DefaultPath is the Chromium binary used when BROWSERCHAIN_CHROMIUM is unset.
const DefaultPath = "/usr/bin/chromium"

// PathEnv names the environment variable that overrides DefaultPath; the
// local backend honours the same variable.
const PathEnv = "BROWSERCHAIN_CHROMIUM"

// StartTimeout bounds how long Start waits for DevToolsActivePort.
const StartTimeout = 30 * time.Second

// portPollInterval is the period of the DevToolsActivePort poll (see Start).
const portPollInterval = 10 * time.Millisecond

// BaseArgs are the flags every test browser gets: headless, a
// free debugging port, no sandbox (tests run as root), and the switches that
// keep a Chromium on a closed network quiet.
var BaseArgs = []string{
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
}

// Path returns the Chromium binary: $BROWSERCHAIN_CHROMIUM, or DefaultPath.
func Path() string {
	if p := os.Getenv(PathEnv); p != "" {
		return p
	}
	return DefaultPath
}

// Option configures Start.
type Option func(*config)

type config struct {
	args      []string
	extension string
	width     int
	height    int
	startURL  string
}

// WithArgs appends extra command-line flags (after BaseArgs, so a repeated
// switch overrides the base value).
func WithArgs(args ...string) Option {
	return func(c *config) { c.args = append(c.args, args...) }
}

// WithExtension loads the unpacked extension in dir
// (--load-extension=DIR --disable-extensions-except=DIR; MV3 extensions load
// headless this way). dir is made absolute.
func WithExtension(dir string) Option {
	return func(c *config) { c.extension = dir }
}

// WithWindowSize sets the outer window size in CSS pixels (default
// 1280×800). Headless Chromium keeps room for its (invisible) toolbar, so the
// page viewport is as wide but less tall; set an exact viewport with
// Emulation.setDeviceMetricsOverride.
func WithWindowSize(width, height int) Option {
	return func(c *config) { c.width, c.height = width, height }
}

// WithStartURL sets the URL of the first tab (default about:blank).
func WithStartURL(u string) Option {
	return func(c *config) { c.startURL = u }
}

// Browser is a running headless Chromium owned by one test. Its fields are
// read-only. Methods are safe for concurrent use.
type Browser struct {
	// Port is the DevTools HTTP/WebSocket port on 127.0.0.1.
	Port int
	// BrowserWSURL is the browser-level WebSocket URL,
	// ws://127.0.0.1:<port>/devtools/browser/<id>.
	BrowserWSURL string
	// WSPath is the path part of BrowserWSURL, as in DevToolsActivePort.
	WSPath string
	// UserDataDir is the fresh profile directory (removed after the test).
	UserDataDir string
	// PID is the browser process id; it is also the process group id.
	PID int

	cmd    *exec.Cmd
	exited chan struct{} // closed when the browser process has been reaped
	log    *tailBuffer

	killOnce sync.Once
}

// HTTPURL returns http://127.0.0.1:<port>, the DevTools HTTP endpoint.
func (b *Browser) HTTPURL() string { return "http://127.0.0.1:" + strconv.Itoa(b.Port) }

// Exited is closed once the browser process has exited and been reaped.
func (b *Browser) Exited() <-chan struct{} { return b.exited }

// Kill sends SIGKILL to the browser's whole process group now and waits
// until the browser process is reaped and every other member of the group
// has exited (bounded by StartTimeout). Idempotent; safe to call from any
// goroutine. Start's cleanup calls it too.
func (b *Browser) Kill() {
	b.killOnce.Do(func() {
		_ = syscall.Kill(-b.PID, syscall.SIGKILL)
		<-b.exited
		_ = waitGroupGone(b.PID, StartTimeout)
	})
}

// Start launches headless Chromium for t and returns once its DevTools
// endpoint is up. The browser runs in its own process group (and gets
// SIGKILL if the test process dies, via Pdeathsig); t.Cleanup kills the
// group and waits for it. Start fails t when the browser cannot start.
//
// Chromium gives no signal when the debugging port is open other than
// writing <user-data-dir>/DevToolsActivePort, so Start polls for that file
// every 10 ms until StartTimeout, and stops early if the process exits.
func Start(t testing.TB, opts ...Option) *Browser {
	t.Helper()
	cfg := config{width: 1280, height: 800, startURL: "about:blank"}
	for _, o := range opts {
		o(&cfg)
	}
	dir := t.TempDir()
	args := append([]string{}, BaseArgs...)
	args = append(args,
		"--user-data-dir="+dir,
		fmt.Sprintf("--window-size=%d,%d", cfg.width, cfg.height),
	)
	if cfg.extension != "" {
		ext, err := filepath.Abs(cfg.extension)
		if err != nil {
			t.Fatalf("chromiumtest: extension dir: %v", err)
		}
		args = append(args, "--load-extension="+ext, "--disable-extensions-except="+ext)
	}
	args = append(args, cfg.args...)
	args = append(args, cfg.startURL)

	path := Path()
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Chromium's own scratch directories (org.chromium.Chromium.*) go into
	// a directory the test removes: a browser a test kills leaves them
	// behind. Its singleton socket's path must fit a Unix socket address,
	// so a long temporary directory keeps the system's.
	if scratch, err := os.MkdirTemp("", "chromiumtest-t-"); err == nil {
		t.Cleanup(func() { _ = os.RemoveAll(scratch) }) // after the browser's kill below
		if len(scratch) <= 55 {
			cmd.Env = append(os.Environ(), "TMPDIR="+scratch)
		}
	}
	logBuf := &tailBuffer{max: 64 << 10}
	cmd.Stdout = logBuf
	cmd.Stderr = logBuf
	if err := cmd.Start(); err != nil {
		t.Fatalf("chromiumtest: start %s: %v (install Debian's chromium or set %s)", path, err, PathEnv)
	}
	b := &Browser{UserDataDir: dir, PID: cmd.Process.Pid, cmd: cmd, exited: make(chan struct{}), log: logBuf}
	go func() {
		_ = cmd.Wait()
		close(b.exited)
	}()
	t.Cleanup(func() {
		b.Kill()
		if t.Failed() {
			t.Logf("chromiumtest: browser output (tail):\n%s", logBuf.String())
		}
	})

	port, wsPath, err := waitForPort(dir, b.exited, StartTimeout)
	if err != nil {
		b.Kill()
		t.Fatalf("chromiumtest: %v; browser output (tail):\n%s", err, logBuf.String())
	}
	b.Port = port
	b.WSPath = wsPath
	b.BrowserWSURL = "ws://127.0.0.1:" + strconv.Itoa(port) + wsPath
	return b
}

// waitForPort polls dir/DevToolsActivePort until it holds a port and a path.
func waitForPort(dir string, exited <-chan struct{}, timeout time.Duration) (int, string, error) {
	file := filepath.Join(dir, "DevToolsActivePort")
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(portPollInterval)
	defer tick.Stop()
	for {
		if data, err := os.ReadFile(file); err == nil {
			if port, path, err := ParseDevToolsActivePort(data); err == nil {
				return port, path, nil
			}
		}
		select {
		case <-exited:
			return 0, "", errors.New("chromium exited before writing DevToolsActivePort")
		case <-deadline.C:
			return 0, "", fmt.Errorf("no DevToolsActivePort after %v", timeout)
		case <-tick.C:
		}
	}
}

// ParseDevToolsActivePort parses the two-line DevToolsActivePort file: a
// port (1–65535) and the browser WebSocket path (/devtools/browser/<id>).
func ParseDevToolsActivePort(data []byte) (port int, path string, err error) {
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) < 2 {
		return 0, "", errors.New("chromiumtest: DevToolsActivePort: want 2 lines")
	}
	port, err = strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || port < 1 || port > 65535 {
		return 0, "", fmt.Errorf("chromiumtest: DevToolsActivePort: bad port %q", lines[0])
	}
	path = strings.TrimSpace(lines[1])
	if !strings.HasPrefix(path, "/devtools/browser/") {
		return 0, "", fmt.Errorf("chromiumtest: DevToolsActivePort: bad path %q", path)
	}
	return port, path, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
