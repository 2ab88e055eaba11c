package cdpinspect

import (
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// Defaults of the options below.
const (
	// DefaultCommandTimeout is the deadline given to a command whose context
	// has none, so every command has a deadline.
	DefaultCommandTimeout = 30 * time.Second
	// DefaultReadLimit is the largest WebSocket message accepted, in bytes
	// (256 MiB). Chrome sends a full-page screenshot as one base64 message of
	// several MB; coder/websocket's own default (32 KiB) would break it.
	DefaultReadLimit = 256 << 20
	// DefaultProbeTimeout is used when the config's ProbeTimeoutMs is zero.
	DefaultProbeTimeout = 500 * time.Millisecond
	// DefaultIdleTimeout is how long a Provider keeps its shared browser
	// connection open after the last invocation using it closed
	// (WithIdleTimeout).
	DefaultIdleTimeout = 5 * time.Minute
	// closeTimeout bounds the detach (or close of a target we created)
	// that Close sends before it drops the socket.
	closeTimeout = 2 * time.Second
	// writeTimeout bounds one WebSocket write.
	writeTimeout = 10 * time.Second
)

// Option configures Discover, Dial and NewProvider (functional options; the
// defaults are set in one place, newSettings).
type Option func(*settings)

type settings struct {
	wsURL          string
	userDataDirs   []string
	logger         *slog.Logger
	commandTimeout time.Duration
	readLimit      int64
	connLost       func() // a test's hook: see conn.lostHook
	createTarget   bool
	probeTimeout   time.Duration    // from the config; 0 = DefaultProbeTimeout
	maxConvs       int              // Provider only: remembered conversations
	idleTimeout    time.Duration    // Provider only: the shared connection's idle timeout; < 0 closes when unused
	tab            tabChoice        // set by Provider per invocation
	now            func() time.Time // the clock of timeout diagnostics; nil = time.Now (tests inject one)
	isolated       bool             // Provider only: a browser context per conversation
}

// tabChoice is how attach picks the target; the zero value is Dial's rule
// (the first real page, or a new tab when there is none).
type tabChoice struct {
	targetID string          // attach exactly this target, or fail target_not_found
	open     bool            // always open a new tab
	exclude  map[string]bool // targets the first-page rule must skip (other conversations' tabs)
	// browserContextID is the browser context a new tab opens in; "" for
	// the browser's default one.
	browserContextID string
}

func newSettings(opts []Option) settings {
	s := settings{
		userDataDirs:   KnownUserDataDirs(),
		commandTimeout: DefaultCommandTimeout,
		readLimit:      DefaultReadLimit,
		createTarget:   true,
		idleTimeout:    DefaultIdleTimeout,
	}
	for _, o := range opts {
		o(&s)
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	return s
}

// WithWebSocketURL sets an explicit browser WebSocket URL
// (ws://127.0.0.1:9222/devtools/browser/<id>), the first discovery source. When set, the other sources are not consulted. The host must
// resolve to loopback only.
func WithWebSocketURL(u string) Option {
	return func(s *settings) { s.wsURL = u }
}

// WithUserDataDirs replaces the user-data directories whose
// DevToolsActivePort file is read (the second discovery step). The default is
// KnownUserDataDirs(); WithUserDataDirs() with no argument disables the
// file step.
func WithUserDataDirs(dirs ...string) Option {
	return func(s *settings) { s.userDataDirs = append([]string(nil), dirs...) }
}

// WithLogger sets the logger (nil means slog.Default()). Browser WebSocket
// paths and command params are never logged.
func WithLogger(l *slog.Logger) Option {
	return func(s *settings) { s.logger = l }
}

// WithCommandTimeout sets the deadline given to commands whose context has
// none (default DefaultCommandTimeout). d <= 0 keeps the default.
func WithCommandTimeout(d time.Duration) Option {
	return func(s *settings) {
		if d > 0 {
			s.commandTimeout = d
		}
	}
}

// WithReadLimit sets the largest accepted WebSocket message in bytes
// (default DefaultReadLimit). n <= 0 keeps the default. A larger message
// ends the Provider's shared browser connection (the WebSocket library
// cannot skip one message and read on): every invocation's in-flight
// commands fail as transport errors and the next Build dials anew, so set
// it above the largest answer any conversation may ask for.
func WithReadLimit(n int64) Option {
	return func(s *settings) {
		if n > 0 {
			s.readLimit = n
		}
	}
}

// WithCreateTarget controls whether Dial opens a new about:blank tab when the
// browser has no page target (default true). With false, such a browser
// fails with code no_targets. A tab opened this way is closed again by Close
// (Close closes only what the backend created).
func WithCreateTarget(create bool) Option {
	return func(s *settings) { s.createTarget = create }
}

// WithIsolatedContexts gives each conversation of a Provider a browser
// context of its own (Target.createBrowserContext; its tabs open with
// Target.createTarget browserContextId), disposed of when the
// conversation closes (Target.disposeBrowserContext): its cookies and
// storage are shared with no other conversation and not with the user's
// profile. The Provider then declares browserbackend.CapIsolated, and a
// TabActive invocation (adopt the user's tab) is refused with
// CodeNotSupported. Default false: on the user's own Chrome an isolated
// context is signed in nowhere, so isolation is the host's explicit
// choice (Chrome DevTools MCP's isolatedContext is opt-in too). Dial and
// DialConversation ignore it.
func WithIsolatedContexts(on bool) Option {
	return func(s *settings) { s.isolated = on }
}

// WithMaxConversations bounds how many conversations' tabs a Provider
// remembers (default DefaultMaxConversations; the least recently used is
// forgotten beyond it). n <= 0 keeps the default. Dial ignores it.
func WithMaxConversations(n int) Option {
	return func(s *settings) {
		if n > 0 {
			s.maxConvs = n
		}
	}
}

// WithIdleTimeout sets how long a Provider keeps its shared browser
// connection (one WebSocket to the browser, shared by every invocation and
// conversation; see Provider) open once no invocation uses it: the next
// invocation within d reuses the socket and its conversation's CDP session
// instead of dialling and attaching again. Default DefaultIdleTimeout
// (5 minutes); d == 0 keeps the default; d < 0 closes the connection as
// soon as the last invocation's Backend closes. A socket the browser drops
// ends at once regardless. Dial and DialConversation ignore it (their
// Backends own their socket).
func WithIdleTimeout(d time.Duration) Option {
	return func(s *settings) {
		if d != 0 {
			s.idleTimeout = d
		}
	}
}

// KnownUserDataDirs returns the default profile directories of Chrome
// (stable, beta, dev/unstable, canary) and Chromium for the running OS, in
// that order. Directories that do not exist are included; Discover skips
// missing files silently.
func KnownUserDataDirs() []string {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	switch runtime.GOOS {
	case "darwin":
		base := filepath.Join(home, "Library", "Application Support")
		return []string{
			filepath.Join(base, "Google", "Chrome"),
			filepath.Join(base, "Google", "Chrome Beta"),
			filepath.Join(base, "Google", "Chrome Dev"),
			filepath.Join(base, "Google", "Chrome Canary"),
			filepath.Join(base, "Chromium"),
		}
	case "windows":
		base := os.Getenv("LOCALAPPDATA")
		if base == "" {
			return nil
		}
		return []string{
			filepath.Join(base, "Google", "Chrome", "User Data"),
			filepath.Join(base, "Google", "Chrome Beta", "User Data"),
			filepath.Join(base, "Google", "Chrome Dev", "User Data"),
			filepath.Join(base, "Google", "Chrome SxS", "User Data"),
			filepath.Join(base, "Chromium", "User Data"),
		}
	default:
		base := os.Getenv("XDG_CONFIG_HOME")
		if base == "" {
			base = filepath.Join(home, ".config")
		}
		return []string{
			filepath.Join(base, "google-chrome"),
			filepath.Join(base, "google-chrome-beta"),
			filepath.Join(base, "google-chrome-unstable"),
			filepath.Join(base, "chromium"),
		}
	}
}
