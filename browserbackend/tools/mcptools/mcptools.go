package mcptools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

// ScreenshotContent chooses how browser_screenshot hands the image to the
// client.
type ScreenshotContent int

const (
	// ScreenshotImage puts the PNG into the result as image content (base64
	// on the wire). The default.
	ScreenshotImage ScreenshotContent = iota
	// ScreenshotResourceLink puts a resource link (ScreenshotURIPrefix +
	// file name) into the result; the client reads the image with
	// resources/read when it wants it.
	ScreenshotResourceLink
)

// ScreenshotURIPrefix starts the URI of every screenshot resource link.
const ScreenshotURIPrefix = "browserchain://screenshots/"

// Defaults of Options.
const (
	// DefaultInterfaceID is the invocation interface of MCP tool calls.
	DefaultInterfaceID = "mcp"
	// DefaultProgressInterval is how often a long tool reports progress.
	DefaultProgressInterval = time.Second
	// DefaultReleaseTimeout bounds closing one conversation when its session
	// ends.
	DefaultReleaseTimeout = 10 * time.Second
)

// SupportedProtocolVersions are the MCP protocol versions NewMCPServer
// offers: the session-based ones. A conversation belongs to an MCP session,
// so the sessionless protocol (2026-07-28 and later) is not offered.
var SupportedProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// Options configures New. Tools is required; the zero value of every other
// field works.
type Options struct {
	// Tools runs the calls; a session's end closes its conversation on
	// every provider (Tools.Close). With its KeepClients on
	// (as examples/mcp sets it), each session's conversation keeps one
	// Client for its calls and the session's end drops it; call
	// Tools.Shutdown after Close.
	Tools *tools.Tools
	// InterfaceID and ActorPrincipalID are those of every invocation;
	// InterfaceID "" means DefaultInterfaceID. ActorPrincipalID must be the
	// actor the extension or bridge paired as for them to serve.
	InterfaceID      string
	ActorPrincipalID string
	// AgentID and Roles are the agent of every invocation, matched by
	// saved logins' grants (browser_navigate context_name).
	AgentID string
	Roles   []string
	// DefaultMode is the browser_mode of a call that sends none; "" means
	// auto. An invalid value makes every such call a tool error.
	DefaultMode browserbackend.Mode
	// Screenshots chooses image content (default) or a resource link.
	Screenshots ScreenshotContent
	// ProgressInterval is the period of the progress notifications of
	// browser_navigate and browser_wait_for; 0 means
	// DefaultProgressInterval.
	ProgressInterval time.Duration
	// ReleaseTimeout bounds closing one conversation at a session's end; 0
	// means DefaultReleaseTimeout.
	ReleaseTimeout time.Duration
	// OnSessionEnd, optional, is called once per ended MCP session that made
	// a tool call, after its conversation was closed. It runs on the
	// goroutine that watched the session.
	OnSessionEnd func(conversationID string)
	// Logger receives one record per tool call (tool, backend, outcome,
	// duration; never typed text or arguments) and one per session end; the
	// same records go to the calling client through MCP logging once it has
	// set a level. nil means slog.Default().
	Logger *slog.Logger
}

// Server puts the browser tools on MCP servers and keeps the conversation of
// every MCP session it has served.
//
// Each MCP session gets a conversation of its own, "mcp-" plus the session
// id (or a random id on transports without one, such as stdio), unless a
// call names one in conversation_id. When a session ends — the client closed
// it, disconnected, or timed out — Server waits for its calls in flight
// (their contexts are cancelled by the SDK on a disconnect) and then closes
// the session's conversation with tools.Tools.Close: its extension tab or
// local page goes away. A conversation a call named outlives the session
// (clients name one to share it across sessions); it is closed by
// browser_close or by Close.
//
// A Server is safe for concurrent use. Close ends it.
type Server struct {
	opts Options
	base *slog.Logger // Options.Logger or slog.Default()
	log  *slog.Logger

	mu       sync.Mutex
	closed   bool
	sessions map[*mcp.ServerSession]*session
	named    map[string]bool // conversations named by a call's conversation_id
	wg       sync.WaitGroup  // session watchers
	inflight map[*inflightCall]struct{}

	// enums are the closed sets of the input schemas, browser_mode's
	// included.
	enums map[string][]string
}

// inflightCall is one tool call running; Close cancels it.
type inflightCall struct{ cancel context.CancelCauseFunc }

// session is the state of one MCP session.
type session struct {
	conversationID string
	calls          sync.WaitGroup
	logger         *slog.Logger // slog plus the session's MCP logging
	files          sessionFiles // guarded by Server.mu
	used           usedConvs    // guarded by Server.mu
}

// maxUsedConversations bounds the conversations a session remembers having
// used; past it the one used longest ago is forgotten.
const maxUsedConversations = 256

// usedConvs are the conversations a session's tool calls acted in, the one
// used longest ago first.
type usedConvs struct {
	set   map[string]bool
	order []string
}

func (u *usedConvs) add(conv string) {
	if u.set[conv] {
		return
	}
	if u.set == nil {
		u.set = map[string]bool{}
	}
	u.set[conv] = true
	u.order = append(u.order, conv)
	for len(u.order) > maxUsedConversations {
		delete(u.set, u.order[0])
		u.order = u.order[1:]
	}
}

// usedBy reports whether conv is st's own conversation or one its tool
// calls acted in.
func (s *Server) usedBy(st *session, conv string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return conv == st.conversationID || st.used.set[conv]
}

// New returns a Server over opts.Tools; it panics when Tools is nil (a
// wiring bug).
func New(opts Options) *Server {
	if opts.Tools == nil {
		panic("mcptools: Options.Tools is nil")
	}
	if opts.InterfaceID == "" {
		opts.InterfaceID = DefaultInterfaceID
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = DefaultProgressInterval
	}
	if opts.ReleaseTimeout <= 0 {
		opts.ReleaseTimeout = DefaultReleaseTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	enums := map[string][]string{"browser_mode": modesOf(opts.Tools.Selector())}
	for k, v := range closedSets {
		enums[k] = v
	}
	return &Server{
		enums:    enums,
		opts:     opts,
		base:     log,
		log:      log.With("module", "browser-mcp"),
		sessions: map[*mcp.ServerSession]*session{},
		named:    map[string]bool{},
		inflight: map[*inflightCall]struct{}{},
	}
}

// NewMCPServer returns an MCP server named impl (nil: "browserchain") that
// offers SupportedProtocolVersions, the logging and resources capabilities,
// the browser tools and their files as resources (Register), and
// instructions that explain the properties every tool shares. Serve it with Run(ctx, StdioTransport(os.Stdin, os.Stdout, nil)) or
// mcp.NewStreamableHTTPHandler.
func (s *Server) NewMCPServer(impl *mcp.Implementation) *mcp.Server {
	if impl == nil {
		impl = &mcp.Implementation{Name: "browserchain", Version: "dev"}
	}
	srv := mcp.NewServer(impl, &mcp.ServerOptions{
		Instructions: "Browser tools over the user's Chrome (paired extension or desktop bridge), a Chrome with a " +
			"debugging port, or a private Chromium. Start with browser_navigate, read the page with browser_snapshot " +
			"and act on elements by their ref. browser_status says which browsers are available. " +
			sharedText(s.opts.Tools.Selector()),
		// Resources without listChanged: a session's list grows with its
		// own calls' files, which the session learns of from the results.
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{},
			Resources: &mcp.ResourceCapabilities{}},
		SupportedProtocolVersions: SupportedProtocolVersions,
		Logger:                    s.log,
	})
	s.Register(srv)
	return srv
}

// ErrClosed is the tool error of a call made after Close.
var ErrClosed = errors.New("mcptools: the browser tool server is closed")

// enter registers a tool call of ss and returns the context it runs with
// (ctx, cancelled by Close with ErrClosed as its cause), its session state
// and the invocation it runs as; done must be called when the call returns.
//
// A call that uses the conversation (use) makes it one of the session's:
// the session may then read its trace.
func (s *Server) enter(ctx context.Context, ss *mcp.ServerSession, c Common, use bool) (context.Context, browserbackend.Invocation, *session, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, browserbackend.Invocation{}, nil, nil, ErrClosed
	}
	if ss == nil {
		return nil, browserbackend.Invocation{}, nil, nil, errNoSession
	}
	if err := tools.CheckConversationID(c.ConversationID); err != nil {
		return nil, browserbackend.Invocation{}, nil, nil, err // not kept in named
	}
	st := s.sessions[ss]
	if st == nil {
		st = &session{conversationID: "mcp-" + sessionKey(ss)}
		st.logger = slog.New(slog.NewMultiHandler(s.base.Handler(),
			mcp.NewLoggingHandler(ss, &mcp.LoggingHandlerOptions{LoggerName: "browserchain"}))).With("module", "browser-mcp")
		s.sessions[ss] = st
		s.wg.Add(1)
		go s.watch(ss, st)
	}
	conv := c.ConversationID
	if conv == "" {
		conv = st.conversationID
	}
	if use {
		// A call that only reads (browser_trace) opens nothing for Close
		// to release.
		if c.ConversationID != "" {
			s.named[conv] = true
		}
		st.used.add(conv)
	}
	st.calls.Add(1)
	ctx, cancel := context.WithCancelCause(ctx)
	call := &inflightCall{cancel: cancel}
	s.inflight[call] = struct{}{}
	done := func() {
		s.mu.Lock()
		delete(s.inflight, call)
		s.mu.Unlock()
		cancel(nil)
		st.calls.Done()
	}
	inv := browserbackend.Invocation{ConversationID: conv, InterfaceID: s.opts.InterfaceID,
		ActorPrincipalID: s.opts.ActorPrincipalID, AgentID: s.opts.AgentID, Roles: s.opts.Roles, Mode: s.opts.DefaultMode}
	return ctx, inv, st, done, nil
}

var errNoSession = errors.New("mcptools: a tool call without an MCP session")

// forgetNamed drops conv from the conversations calls have named (after a
// browser_close of it), so that a client naming many conversations over
// time does not grow the set without bound.
func (s *Server) forgetNamed(conv string) {
	s.mu.Lock()
	delete(s.named, conv)
	s.mu.Unlock()
}

func sessionKey(ss *mcp.ServerSession) string {
	if id := ss.ID(); id != "" {
		return id
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// watch waits for ss to end, then releases its conversations.
func (s *Server) watch(ss *mcp.ServerSession, st *session) {
	defer s.wg.Done()
	_ = ss.Wait()
	s.endSession(ss, st)
}

// endSession waits for the session's calls in flight, then closes the
// session's own conversation.
func (s *Server) endSession(ss *mcp.ServerSession, st *session) {
	st.calls.Wait()
	s.mu.Lock()
	delete(s.sessions, ss)
	s.mu.Unlock()
	s.release(st.conversationID)
	s.log.Info("mcp session ended", "conversationId", st.conversationID)
	if s.opts.OnSessionEnd != nil {
		s.opts.OnSessionEnd(st.conversationID)
	}
}

// release closes one conversation's page or tab, bounded by ReleaseTimeout.
func (s *Server) release(conv string) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.ReleaseTimeout)
	defer cancel()
	inv := browserbackend.Invocation{ConversationID: conv, InterfaceID: s.opts.InterfaceID,
		ActorPrincipalID: s.opts.ActorPrincipalID, AgentID: s.opts.AgentID, Roles: s.opts.Roles}
	if _, err := s.opts.Tools.Close(ctx, inv, tools.ReleaseInput{BrowserMode: string(browserbackend.ModeAuto)}); err != nil {
		s.log.Warn("closing the conversation of an ended mcp session failed", "conversationId", conv, "error", err)
	}
}

// Close cancels every tool call in flight (its context's cause is
// ErrClosed), ends every MCP session this Server has served
// (ServerSession.Close, which waits for those calls to return), closes
// their conversations, and makes later tool calls fail with ErrClosed. It
// returns when all of that is done, without waiting for any call's
// deadline; it is idempotent and safe to call concurrently, for instance
// while the SDK's Server.Run closes its session on a signal.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	live := make([]*mcp.ServerSession, 0, len(s.sessions))
	for ss := range s.sessions {
		live = append(live, ss)
	}
	for call := range s.inflight {
		call.cancel(ErrClosed)
	}
	s.mu.Unlock()
	for _, ss := range live {
		_ = ss.Close()
	}
	s.wg.Wait()
	s.mu.Lock()
	named := s.named
	s.named = map[string]bool{}
	s.mu.Unlock()
	for conv := range named {
		s.release(conv)
	}
	return nil
}

// Conversations returns the conversation ids of the live sessions and the
// conversations calls have named, in no particular order.
func (s *Server) Conversations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.sessions)+len(s.named))
	for _, st := range s.sessions {
		out = append(out, st.conversationID)
	}
	for c := range s.named {
		out = append(out, c)
	}
	return out
}
