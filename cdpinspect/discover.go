package cdpinspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mafredri/cdp/devtool"

	bb "github.com/browserchain/browserchain/browserbackend"
)

// Source says where Discover found the browser.
type Source string

// The discovery sources, in the order they are tried.
const (
	SourceWebSocketURL       Source = "websocket_url"
	SourceDevToolsActivePort Source = "devtools_active_port"
	SourceJSONVersion        Source = "json_version"
)

// Endpoint is a discovered browser. It is valid only for the browser run it
// was discovered from: Discover never caches it, and Dial rediscovers on
// every call, so a restarted browser (new port, new WebSocket path) is
// always found afresh.
type Endpoint struct {
	// BrowserWSURL is the browser-level WebSocket URL. It grants full control
	// of the browser to anyone on the machine: do not log it.
	BrowserWSURL string
	// Source is where the URL came from.
	Source Source
	// UserDataDir is the profile whose DevToolsActivePort file was used
	// (SourceDevToolsActivePort only).
	UserDataDir string
	// Browser is the product string of /json/version ("Chrome/156.0…"),
	// when that step ran.
	Browser string
	// Pages is the number of page targets /json/list reported; -1 when
	// unknown (only Probe fills it, and only when /json/list answers).
	Pages int

	addrs []netip.Addr // checked loopback addresses of BrowserWSURL's host
}

// maxDiscoveryBody caps a /json/version or /json/list answer (bytes).
const maxDiscoveryBody = 1 << 20

// errBodyTooLarge marks a discovery answer above maxDiscoveryBody.
var errBodyTooLarge = errors.New("cdpinspect: discovery answer too large")

// Discover finds the browser of cfg, trying in order:
//
//  1. the explicit WebSocket URL (WithWebSocketURL), alone when set;
//  2. the DevToolsActivePort file of each user-data dir (WithUserDataDirs,
//     default KnownUserDataDirs) — Chrome 144+ with remote debugging turned on
//     at chrome://inspect answers 404 on /json/version, and only this file
//     holds the browser WebSocket path; a file is used when its port accepts
//     a TCP connection;
//  3. GET /json/version on cfg.Host:cfg.Port, through mafredri/cdp's devtool.
//
// Every network step is bounded by cfg's probe timeout (default 500 ms).
// Hosts must resolve to loopback addresses only, and connections go only to
// the addresses that were checked (no second lookup a DNS rebinding could
// change). Failures are *browserbackend.Error of ClassTransport with Code
// and Detail set to one of unreachable, timeout, non_loopback,
// non_chrome, invalid_response; when every step fails, the last step's error
// is returned and its message names the earlier failures. A cancelled ctx
// returns ClassAborted. Safe for concurrent use.
func Discover(ctx context.Context, cfg Config, opts ...Option) (Endpoint, error) {
	s := newSettings(opts)
	s.probeTimeout = probeTimeout(cfg)
	return discover(ctx, cfg, &s)
}

func probeTimeout(cfg Config) time.Duration {
	if d := cfg.ProbeTimeout(); d > 0 {
		return d
	}
	return DefaultProbeTimeout
}

func discover(ctx context.Context, cfg Config, s *settings) (Endpoint, error) {
	if s.wsURL != "" {
		return fromWebSocketURL(ctx, s.wsURL, SourceWebSocketURL, s)
	}
	var earlier []string
	for _, dir := range s.userDataDirs {
		ep, err := fromActivePortFile(ctx, dir, s)
		if err == nil {
			return ep, nil
		}
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if ctx.Err() != nil {
			return Endpoint{}, abortErr(ctx)
		}
		earlier = append(earlier, err.Error())
		s.logger.Debug("cdpinspect: DevToolsActivePort not usable", "dir", dir, "err", err)
	}
	ep, err := fromJSONVersion(ctx, cfg, s)
	if err != nil && len(earlier) > 0 {
		var e *bb.Error
		if errors.As(err, &e) && e.Class == bb.ClassTransport {
			e.Message += " (DevToolsActivePort: " + strings.Join(earlier, "; ") + ")"
		}
	}
	return ep, err
}

// discoveryErr builds the transport error of a failed discovery step.
func discoveryErr(code, msg string, cause error) *bb.Error {
	return &bb.Error{
		Class:   bb.ClassTransport,
		Code:    code,
		Detail:  code,
		Backend: bb.KindCDPInspect,
		Message: "discovery: " + msg,
		Err:     cause,
	}
}

// abortErr classifies the caller's ended context.
func abortErr(ctx context.Context) *bb.Error {
	e := bb.ContextError(ctx, "", false)
	e.Backend = bb.KindCDPInspect
	e.Message = "discovery interrupted: " + e.Message
	return e
}

// fromWebSocketURL checks a browser WebSocket URL: ws scheme, a
// /devtools/browser/ path, a loopback host.
func fromWebSocketURL(ctx context.Context, raw string, src Source, s *settings) (Endpoint, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "ws" || u.Host == "" || u.Port() == "" {
		return Endpoint{}, discoveryErr(bb.CodeInvalidResponse, fmt.Sprintf("not a ws://host:port/… URL: %.100q", raw), err)
	}
	if !strings.HasPrefix(u.Path, "/devtools/browser/") {
		return Endpoint{}, discoveryErr(bb.CodeInvalidResponse, "WebSocket path is not a DevTools browser endpoint (/devtools/browser/…)", nil)
	}
	addrs, err := resolveLoopback(ctx, u.Hostname(), s.probeTimeout)
	if err != nil {
		return Endpoint{}, err
	}
	return Endpoint{BrowserWSURL: u.String(), Source: src, Pages: -1, addrs: addrs}, nil
}

// ParseDevToolsActivePort decodes a DevToolsActivePort file: the first line
// is the port (1–65535), the second the browser WebSocket path
// (/devtools/browser/<id>). Anything else is an error.
func ParseDevToolsActivePort(data []byte) (port int, path string, err error) {
	lines := strings.Split(strings.TrimRight(string(data), "\r\n"), "\n")
	if len(lines) != 2 {
		return 0, "", fmt.Errorf("cdpinspect: DevToolsActivePort: want 2 lines, got %d", len(lines))
	}
	p := strings.TrimSpace(lines[0])
	port, err = strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 || strconv.Itoa(port) != p {
		return 0, "", fmt.Errorf("cdpinspect: DevToolsActivePort: bad port %.20q", p)
	}
	path = strings.TrimSpace(lines[1])
	id, ok := strings.CutPrefix(path, "/devtools/browser/")
	if !ok || !validTargetID(id) {
		return 0, "", fmt.Errorf("cdpinspect: DevToolsActivePort: bad path %.100q", path)
	}
	return port, path, nil
}

// validTargetID accepts the browser id of a DevTools path: a non-empty run
// of letters, digits, '-', '_' and '.' (Chrome writes a UUID), not "." or "..".
func validTargetID(id string) bool {
	if id == "" || id == "." || id == ".." || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// fromActivePortFile reads dir/DevToolsActivePort and checks that its port
// accepts a TCP connection on 127.0.0.1 within the probe timeout. A missing
// file returns an error matching os.ErrNotExist.
func fromActivePortFile(ctx context.Context, dir string, s *settings) (Endpoint, error) {
	file := filepath.Join(dir, "DevToolsActivePort")
	data, err := readSmallFile(file, 4096)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Endpoint{}, err
		}
		return Endpoint{}, discoveryErr(bb.CodeInvalidResponse, "read "+file, err)
	}
	port, path, err := ParseDevToolsActivePort(data)
	if err != nil {
		return Endpoint{}, discoveryErr(bb.CodeInvalidResponse, file, err)
	}
	addr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))
	pctx, cancel := context.WithTimeout(ctx, s.probeTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(pctx, "tcp", addr.String())
	if err != nil {
		if ctx.Err() != nil {
			return Endpoint{}, abortErr(ctx)
		}
		if pctx.Err() != nil {
			return Endpoint{}, discoveryErr(bb.CodeUnresponsive, fmt.Sprintf("port %d from %s did not accept within %v", port, file, s.probeTimeout), err)
		}
		return Endpoint{}, discoveryErr(bb.CodeUnreachable, fmt.Sprintf("port %d from %s (stale file?)", port, file), err)
	}
	c.Close()
	return Endpoint{
		BrowserWSURL: "ws://" + addr.String() + path,
		Source:       SourceDevToolsActivePort,
		UserDataDir:  dir,
		Pages:        -1,
		addrs:        []netip.Addr{addr.Addr()},
	}, nil
}

func readSmallFile(name string, max int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("cdpinspect: file larger than %d bytes", max)
	}
	return data, nil
}

// resolveLoopback resolves host within timeout and returns its addresses
// when every one is a loopback address; otherwise non_loopback. A failed
// lookup is unreachable.
func resolveLoopback(ctx context.Context, host string, timeout time.Duration) ([]netip.Addr, error) {
	host = strings.Trim(host, "[]")
	if host == "" {
		return nil, discoveryErr(bb.CodeInvalidResponse, "empty host", nil)
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		lctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		addrs, err = net.DefaultResolver.LookupNetIP(lctx, "ip", host)
		if err != nil {
			if ctx.Err() != nil {
				return nil, abortErr(ctx)
			}
			if lctx.Err() != nil {
				return nil, discoveryErr(bb.CodeUnresponsive, fmt.Sprintf("resolving %q took longer than %v", host, timeout), err)
			}
			return nil, discoveryErr(bb.CodeUnreachable, fmt.Sprintf("resolving %q", host), err)
		}
		if len(addrs) == 0 {
			return nil, discoveryErr(bb.CodeUnreachable, fmt.Sprintf("%q has no address", host), nil)
		}
	}
	for i, a := range addrs {
		a = a.Unmap()
		addrs[i] = a
		if !a.IsLoopback() {
			return nil, discoveryErr(bb.CodeNonLoopback,
				fmt.Sprintf("host %q resolves to %s, which is not a loopback address; cdp-inspect only attaches to a browser on this machine", host, a), nil)
		}
	}
	return addrs, nil
}

// pinnedTransport returns an HTTP transport that connects only to addrs
// (already checked to be loopback), whatever host a URL names, never through
// a proxy, and reports whether a TCP connection was made.
func pinnedTransport(addrs []netip.Addr, dialed *dialRecord) *http.Transport {
	return &http.Transport{
		Proxy:             nil,
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
			_, port, err := net.SplitHostPort(address)
			if err != nil {
				return nil, err
			}
			var d net.Dialer
			var firstErr error
			for _, a := range addrs {
				c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(a.String(), port))
				if err == nil {
					dialed.set()
					return c, nil
				}
				if firstErr == nil {
					firstErr = err
				}
				if ctx.Err() != nil {
					break
				}
			}
			return nil, firstErr
		},
	}
}

// dialRecord remembers whether a discovery connection was established and
// the status of the last HTTP answer, so devtool's plain errors can be
// classified without reading their text.
type dialRecord struct {
	mu     sync.Mutex
	dialed bool
	status int
}

func (r *dialRecord) set() { r.mu.Lock(); r.dialed = true; r.mu.Unlock() }

func (r *dialRecord) get() (dialed bool, status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dialed, r.status
}

// recordingTransport notes each answer's status and caps its body.
type recordingTransport struct {
	next http.RoundTripper
	rec  *dialRecord
}

func (t recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	t.rec.mu.Lock()
	t.rec.status = resp.StatusCode
	t.rec.mu.Unlock()
	resp.Body = &cappedBody{rc: resp.Body, left: maxDiscoveryBody}
	return resp, nil
}

type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// fromJSONVersion asks cfg.Host:cfg.Port for /json/version.
func fromJSONVersion(ctx context.Context, cfg Config, s *settings) (Endpoint, error) {
	host := cfg.Host
	if host == "" {
		host = "localhost"
	}
	if cfg.Port < 1 || cfg.Port > 65535 {
		return Endpoint{}, discoveryErr(bb.CodeUnreachable, fmt.Sprintf("port %d out of range", cfg.Port), nil)
	}
	addrs, err := resolveLoopback(ctx, host, s.probeTimeout)
	if err != nil {
		return Endpoint{}, err
	}
	dt, rec := newDevTools(addrs, cfg.Port)
	target := net.JoinHostPort(host, strconv.Itoa(cfg.Port))

	pctx, cancel := context.WithTimeout(ctx, s.probeTimeout)
	defer cancel()
	v, err := dt.Version(pctx)
	if err != nil {
		return Endpoint{}, classifyHTTP(ctx, pctx, rec, "GET /json/version on "+target, s.probeTimeout, err)
	}
	wsURL, err := checkVersion(v)
	if err != nil {
		var e *bb.Error
		if errors.As(err, &e) {
			e.Message = "discovery: /json/version on " + target + ": " + strings.TrimPrefix(e.Message, "discovery: ")
		}
		return Endpoint{}, err
	}
	ep, err := fromWebSocketURL(ctx, wsURL, SourceJSONVersion, s)
	if err != nil {
		return Endpoint{}, err
	}
	ep.Browser = v.Browser
	return ep, nil
}

// newDevTools returns a devtool client for the pinned addresses. The URL
// names "localhost" so that devtool skips its own lookup-and-probe of other
// hosts and Chrome accepts the Host header; the transport dials only addrs.
func newDevTools(addrs []netip.Addr, port int) (*devtool.DevTools, *dialRecord) {
	rec := &dialRecord{}
	client := &http.Client{
		Transport: recordingTransport{next: pinnedTransport(addrs, rec), rec: rec},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("cdpinspect: discovery does not follow redirects")
		},
	}
	return devtool.New("http://localhost:"+strconv.Itoa(port), devtool.WithClient(client)), rec
}

// classifyHTTP turns a devtool error into a discovery error.
func classifyHTTP(ctx, pctx context.Context, rec *dialRecord, what string, timeout time.Duration, err error) error {
	dialed, status := rec.get()
	switch {
	case ctx.Err() != nil:
		return abortErr(ctx)
	case errors.Is(err, errBodyTooLarge):
		return discoveryErr(bb.CodeInvalidResponse, fmt.Sprintf("%s: answer larger than %d bytes", what, maxDiscoveryBody), err)
	case pctx.Err() != nil:
		return discoveryErr(bb.CodeUnresponsive, fmt.Sprintf("%s: no answer within the probe timeout (%v)", what, timeout), err)
	case !dialed:
		return discoveryErr(bb.CodeUnreachable, what+": nothing is listening (run Chrome with --remote-debugging-port, or enable remote debugging at chrome://inspect)", err)
	case status == 0:
		return discoveryErr(bb.CodeInvalidResponse, what+": not an HTTP answer", err)
	case status != http.StatusOK:
		return discoveryErr(bb.CodeNonChrome, fmt.Sprintf("%s: HTTP %d (not a Chrome DevTools endpoint; Chrome 144+ with remote debugging enabled at chrome://inspect answers 404 here and is found through its DevToolsActivePort file)", what, status), err)
	default:
		return discoveryErr(bb.CodeInvalidResponse, what+": malformed JSON", err)
	}
}

// DecodeVersion decodes a /json/version body the way devtool does (into
// devtool.Version) and checks it with the same rules as Discover. It returns
// the browser WebSocket URL, or a discovery *browserbackend.Error coded
// invalid_response (not a JSON object) or non_chrome (no browser WebSocket
// URL, or a Node.js inspector).
func DecodeVersion(body []byte) (string, error) {
	if len(body) > maxDiscoveryBody {
		return "", discoveryErr(bb.CodeInvalidResponse, "answer too large", nil)
	}
	v := new(devtool.Version)
	if err := json.Unmarshal(body, v); err != nil {
		return "", discoveryErr(bb.CodeInvalidResponse, "malformed JSON", err)
	}
	return checkVersion(v)
}

// checkVersion checks a decoded /json/version answer and returns its
// browser WebSocket URL: a non-Node Browser, a ws:// URL on a
// /devtools/browser/ path; otherwise non_chrome or invalid_response.
func checkVersion(v *devtool.Version) (string, error) {
	if v == nil {
		return "", discoveryErr(bb.CodeInvalidResponse, "empty answer", nil)
	}
	if v.Browser == "" || strings.HasPrefix(strings.ToLower(v.Browser), "node") {
		return "", discoveryErr(bb.CodeNonChrome, fmt.Sprintf("answer is not from Chrome (Browser %.60q)", v.Browser), nil)
	}
	if v.WebSocketDebuggerURL == "" {
		return "", discoveryErr(bb.CodeNonChrome, "answer has no webSocketDebuggerUrl", nil)
	}
	u, err := url.Parse(v.WebSocketDebuggerURL)
	if err != nil || u.Scheme != "ws" || u.Host == "" {
		return "", discoveryErr(bb.CodeInvalidResponse, fmt.Sprintf("webSocketDebuggerUrl %.100q is not a ws:// URL", v.WebSocketDebuggerURL), err)
	}
	if !strings.HasPrefix(u.Path, "/devtools/browser/") {
		return "", discoveryErr(bb.CodeNonChrome, "webSocketDebuggerUrl is not a browser endpoint", nil)
	}
	return v.WebSocketDebuggerURL, nil
}

// countPages asks /json/list for the number of page targets (Probe only);
// -1 when it cannot tell.
func countPages(ctx context.Context, ep Endpoint, timeout time.Duration) int {
	u, err := url.Parse(ep.BrowserWSURL)
	if err != nil {
		return -1
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return -1
	}
	dt, _ := newDevTools(ep.addrs, port)
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	list, err := dt.List(pctx)
	if err != nil {
		return -1
	}
	n := 0
	for _, t := range list {
		if t.Type == devtool.Page && eligiblePageURL(t.URL) {
			n++
		}
	}
	return n
}
