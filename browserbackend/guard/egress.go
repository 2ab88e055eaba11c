package guard

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// EgressProxy is a small HTTP forward proxy on loopback for a browser the
// library launches itself (the local backend): it serves CONNECT
// tunnels and plain http:// requests, resolves the target name itself at
// connect time and checks every address it actually dials against the
// guard's private-network block (net.Dialer.Control), so a name that
// resolved to a public address when the page URL was checked and to a
// private one now (DNS rebinding) is refused with 403. It does not apply the
// allow-list: pages are checked by the tools; the proxy only keeps the
// browser off private networks. Each refusal is remembered by the guard
// (Guard.EgressRefusal), so the tools report a page the proxy refused as
// forbidden rather than as the proxy's 403 page or a tunnel failure.
//
// Start the browser with ChromiumArgs. An EgressProxy is safe for concurrent
// use; Close stops it and every tunnel.
type EgressProxy struct {
	g   *Guard
	res Resolver
	log *slog.Logger
	ln  net.Listener
	srv *http.Server

	mu      sync.Mutex
	tunnels map[net.Conn]struct{}
	wg      sync.WaitGroup
	closed  bool
}

// EgressOptions configures an EgressProxy. The zero value works.
type EgressOptions struct {
	// Resolver resolves target names at connect time; nil means the
	// guard's Policy.Resolver (or net.DefaultResolver).
	Resolver Resolver
	// DialTimeout bounds one upstream dial; 0 means 10 s.
	DialTimeout time.Duration
	// Logger receives refusals (host and rule, never request contents);
	// nil means the guard's logger.
	Logger *slog.Logger
}

// NewEgressProxy starts an egress proxy for g on 127.0.0.1 (a fresh port).
func NewEgressProxy(g *Guard, opts EgressOptions) (*EgressProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, &Error{Code: CodeProviderError, Param: "egress_proxy", Message: "cannot listen on loopback", Err: err}
	}
	p := &EgressProxy{g: g, res: opts.Resolver, log: opts.Logger, ln: ln, tunnels: map[net.Conn]struct{}{}}
	if p.res == nil {
		p.res = g.res
	}
	if p.log == nil {
		p.log = g.log
	}
	timeout := opts.DialTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	tr := &http.Transport{Proxy: nil, DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
		return p.dial(ctx, addr, timeout)
	}, MaxIdleConns: 16, IdleConnTimeout: 30 * time.Second}
	p.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect {
			p.connect(w, r, timeout)
			return
		}
		p.forward(w, r, tr)
	})}
	p.srv.RegisterOnShutdown(tr.CloseIdleConnections)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		_ = p.srv.Serve(ln)
	}()
	return p, nil
}

// Addr is the proxy's host:port on loopback.
func (p *EgressProxy) Addr() string { return p.ln.Addr().String() }

// ChromiumArgs are the flags that send a Chromium's traffic through the
// proxy, loopback included (Chromium bypasses proxies for loopback unless
// told not to): pass them in local.Options.Args.
func (p *EgressProxy) ChromiumArgs() []string {
	return []string{"--proxy-server=http://" + p.Addr(), "--proxy-bypass-list=<-loopback>"}
}

// Close stops the proxy and closes every open tunnel. Idempotent.
func (p *EgressProxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	for c := range p.tunnels {
		c.Close()
	}
	p.mu.Unlock()
	err := p.srv.Close()
	p.wg.Wait()
	return err
}

// dial resolves addr's host now and connects to the first address the guard
// allows; the check runs on the socket's real peer address (Control).
func (p *EgressProxy) dial(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &Error{Code: CodeValidationFailed, Param: "address", URL: addr, Message: "not host:port"}
	}
	var addrs []netip.Addr
	if nh, nerr := NormalizeHost(host); nerr == nil {
		if a, ok := hostAddr(nh); ok {
			addrs = []netip.Addr{a}
		} else if metadataNames[nh] {
			return nil, forbidden(addr, RulePrivateNetwork+": cloud metadata name", "the host "+nh+" is a metadata service")
		}
	}
	if addrs == nil {
		addrs, err = p.res.LookupNetIP(ctx, "ip", host)
		if err != nil || len(addrs) == 0 {
			return nil, &Error{Code: CodeProviderError, Param: "address", URL: addr, Rule: RulePrivateNetwork, Message: "the host could not be resolved", Err: err}
		}
	}
	d := net.Dialer{Timeout: timeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		if err := p.g.CheckAddr(host, ap); err != nil {
			return err
		}
		return nil
	}}
	var first error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

func (p *EgressProxy) refuse(w http.ResponseWriter, target string, err error) {
	var ge *Error
	if errors.As(err, &ge) && ge.Code == CodeForbidden {
		p.log.Warn("egress proxy refused a connection", "target", target, "rule", ge.Rule)
		p.g.refused.add(target, ge)
		http.Error(w, "guard: forbidden: "+ge.Rule, http.StatusForbidden)
		return
	}
	http.Error(w, "guard: cannot connect", http.StatusBadGateway)
}

func (p *EgressProxy) connect(w http.ResponseWriter, r *http.Request, timeout time.Duration) {
	up, err := p.dial(r.Context(), r.Host, timeout)
	if err != nil {
		p.refuse(w, r.Host, err)
		return
	}
	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		up.Close()
		return
	}
	down, brw, err := rc.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !p.track(down, up) {
		return
	}
	defer p.untrack(down, up)
	done := make(chan struct{}, 2)
	go func() {
		if n := brw.Reader.Buffered(); n > 0 {
			b, _ := brw.Reader.Peek(n)
			_, _ = up.Write(b)
		}
		_, _ = io.Copy(up, down)
		closeWrite(up)
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(down, up)
		closeWrite(down)
		done <- struct{}{}
	}()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
	}
}

func (p *EgressProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.tunnels[c] = struct{}{}
	}
	return true
}

func (p *EgressProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		c.Close()
		delete(p.tunnels, c)
	}
}

// hopHeaders are dropped when forwarding (RFC 9110 §7.6.1).
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func (p *EgressProxy) forward(w http.ResponseWriter, r *http.Request, tr *http.Transport) {
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "guard: only absolute http:// requests and CONNECT", http.StatusBadRequest)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	host := out.URL.Host
	if out.URL.Port() == "" {
		host = net.JoinHostPort(out.URL.Hostname(), "80")
	}
	out.URL.Host = host
	res, err := tr.RoundTrip(out)
	if err != nil {
		p.refuse(w, host, err)
		return
	}
	defer res.Body.Close()
	for _, h := range hopHeaders {
		res.Header.Del(h)
	}
	for k, vs := range res.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(res.StatusCode)
	_, _ = io.Copy(w, res.Body)
}
