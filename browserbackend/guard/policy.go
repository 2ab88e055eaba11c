package guard

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"code.dny.dev/ssrf"
)

// Policy is what a host application allows a browser to do: where its pages
// may go, whether private networks are reachable, whether writes are
// allowed. It is a value: copy it, compare it, log it. Compile it with New.
type Policy struct {
	// AllowedDomains is the allow-list of page hosts:
	//   - nil: the open web; every checked URL is logged at Info;
	//   - ["*"]: the list is off (every checked URL logged), the
	//     private-network block still holds;
	//   - entries: "app.example.com" (that host only), "*.example.com"
	//     (subdomains of example.com only — list the apex separately), each
	//     optionally with a scheme ("https://…", then only that scheme) and a
	//     port (":8443", then only that port; without one any port).
	// Hosts are compared case-insensitively after IDNA mapping and removal
	// of a trailing dot. Under a list only http, https and about:blank pages
	// are allowed. An explicit empty list is invalid (validation_failed).
	AllowedDomains []string `json:"allowed_domains,omitempty"`
	// AllowWrites lifts the write guard: without it the tools refuse input
	// actions that look like writes (a form submission, a control labelled
	// buy, delete, send, …).
	AllowWrites bool `json:"allow_writes,omitempty"`
	// AllowScripts lets the evaluate tool run the agent's JavaScript in the
	// page; without it evaluate is refused (forbidden).
	AllowScripts bool `json:"allow_scripts,omitempty"`
	// DevLoopback is the development opt-in to loopback: "host:port" pairs
	// (a name or an IP literal) that may resolve to a loopback address
	// (127.0.0.0/8, ::1) although the private-network block refuses
	// loopback. Other private ranges stay blocked for them. Meant for test
	// pages served on loopback.
	DevLoopback []string `json:"dev_loopback,omitempty"`
	// Resolver looks up host names for the private-network block; nil means
	// net.DefaultResolver.
	Resolver Resolver `json:"-"`
	// Logger receives the unrestricted-browsing records; nil means
	// slog.Default().
	Logger *slog.Logger `json:"-"`
}

// Resolver looks up the addresses of a host name (*net.Resolver satisfies
// it). Implementations must be safe for concurrent use and honour ctx.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ResolverFunc adapts a function to Resolver.
type ResolverFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

// LookupNetIP calls f.
func (f ResolverFunc) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return f(ctx, network, host)
}

// entry is one compiled allow-list entry.
type entry struct {
	raw      string
	scheme   string // "" any of http, https
	host     string // normalised; for a wildcard, the parent domain
	wildcard bool
	port     string // "" any
}

// Guard is a compiled Policy: the URL checks (allow-list, private-network
// block) and the write setting the tools consult. Its policy is immutable;
// besides, it remembers the recent refusals of its egress proxies
// (EgressRefusal). A Guard is safe for concurrent use. The zero value is
// not usable; call New.
type Guard struct {
	policy  Policy
	open    bool // no list (nil or "*")
	entries []entry
	dev     map[string]bool // "host:port", normalised
	ssrf    *ssrf.Guardian
	res     Resolver
	log     *slog.Logger
	refused *refusals
}

// New validates p and compiles it. An explicit empty AllowedDomains, a
// malformed entry, or a malformed DevLoopback pair is validation_failed
// naming the parameter.
func New(p Policy) (*Guard, error) {
	g := &Guard{policy: p, dev: map[string]bool{}, res: p.Resolver, log: p.Logger, refused: &refusals{},
		ssrf: ssrf.New(ssrf.WithAnyPort(), ssrf.WithAnyNetwork())}
	if g.res == nil {
		g.res = net.DefaultResolver
	}
	if g.log == nil {
		g.log = slog.Default()
	}
	g.log = g.log.With("module", "browser-guard")
	switch {
	case p.AllowedDomains == nil:
		g.open = true
	case len(p.AllowedDomains) == 0:
		return nil, invalid("allowed_domains", "an explicit empty list allows nothing; omit it for the open web")
	case len(p.AllowedDomains) == 1 && strings.TrimSpace(p.AllowedDomains[0]) == "*":
		g.open = true
	default:
		for _, raw := range p.AllowedDomains {
			e, err := parseEntry(raw)
			if err != nil {
				return nil, invalid("allowed_domains", "entry "+strconv.Quote(raw)+": "+err.Error())
			}
			g.entries = append(g.entries, e)
		}
	}
	for _, hp := range p.DevLoopback {
		h, port, err := net.SplitHostPort(hp)
		if err != nil || port == "" {
			return nil, invalid("dev_loopback", "entry "+strconv.Quote(hp)+" is not host:port")
		}
		nh, err := NormalizeHost(h)
		if err != nil {
			return nil, invalid("dev_loopback", "entry "+strconv.Quote(hp)+": "+err.Error())
		}
		g.dev[net.JoinHostPort(nh, port)] = true
	}
	return g, nil
}

// MustNew is New for policies known to be valid (tests, examples); it panics
// on an error.
func MustNew(p Policy) *Guard {
	g, err := New(p)
	if err != nil {
		panic(err)
	}
	return g
}

// Policy returns the policy g was compiled from.
func (g *Guard) Policy() Policy { return g.policy }

// AllowWrites reports whether the write guard is lifted.
func (g *Guard) AllowWrites() bool { return g.policy.AllowWrites }

// AllowScripts reports whether the agent's own JavaScript may run in pages.
func (g *Guard) AllowScripts() bool { return g.policy.AllowScripts }

// Restricted reports whether an allow-list is in force (not nil, not "*").
func (g *Guard) Restricted() bool { return !g.open }

func parseEntry(raw string) (entry, error) {
	e := entry{raw: raw}
	s := strings.TrimSpace(raw)
	if i := strings.Index(s, "://"); i >= 0 {
		e.scheme = strings.ToLower(s[:i])
		if e.scheme != "http" && e.scheme != "https" {
			return e, errors.New("scheme must be http or https")
		}
		s = s[i+3:]
	}
	if strings.ContainsAny(s, "/?#@") {
		return e, errors.New("want a host, *.domain, with an optional port")
	}
	host := s
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, perr := strconv.Atoi(p)
		if perr != nil || n < 1 || n > 65535 {
			return e, errors.New("port must be 1–65535")
		}
		host, e.port = h, p
	}
	if strings.HasPrefix(host, "*.") {
		e.wildcard, host = true, host[2:]
	}
	if strings.Contains(host, "*") {
		return e, errors.New("a wildcard is only allowed as the first label (*.example.com)")
	}
	h, err := NormalizeHost(host)
	if err != nil {
		return e, err
	}
	e.host = h
	return e, nil
}

func (e entry) match(scheme, host, port string) bool {
	if e.scheme != "" && e.scheme != scheme {
		return false
	}
	if e.port != "" && e.port != port {
		return false
	}
	if e.wildcard {
		return strings.HasSuffix(host, "."+e.host)
	}
	return host == e.host
}

// metadataNames are cloud metadata host names, blocked like their addresses.
var metadataNames = map[string]bool{
	"metadata.google.internal": true, "metadata.goog": true, "metadata": true,
	"instance-data": true, "instance-data.ec2.internal": true, "metadata.azure.internal": true,
}

// CheckURL checks a page URL against the policy: the scheme,
// the allow-list, and the private-network block for IP literals in every
// form and for host names through the Resolver. It returns nil when the page
// may load, else an *Error: forbidden (param "url", naming the URL and the
// rule), validation_failed for a URL that does not parse, provider_error
// when the resolver fails (the check fails closed). about:blank is always
// allowed. Under the open web or "*", an allowed URL is logged at Info.
func (g *Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return &Error{Code: CodeValidationFailed, Param: "url", URL: raw, Message: "malformed url"}
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme == "about" && strings.EqualFold(u.Opaque, "blank") {
		return nil
	}
	if scheme != "http" && scheme != "https" {
		if g.open && scheme == "data" {
			g.logOpen(raw)
			return nil
		}
		rule := RuleScheme + ": only http, https and about:blank"
		if g.open {
			rule = RuleScheme + ": only http, https, data and about:blank"
		}
		return forbidden(raw, rule, "the scheme "+strconv.Quote(scheme)+" is not allowed")
	}
	host, err := NormalizeHost(u.Hostname())
	if err != nil {
		return forbidden(raw, RuleScheme+": malformed host", "the host is not valid: "+err.Error())
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	if !g.open {
		ok := false
		for _, e := range g.entries {
			if e.match(scheme, host, port) {
				ok = true
				break
			}
		}
		if !ok {
			return forbidden(raw, RuleAllowedDomains, "the host "+host+" is not on the allow-list")
		}
	}
	if err := g.checkHost(ctx, raw, host, port); err != nil {
		return err
	}
	if g.open {
		g.logOpen(raw)
	}
	return nil
}

func (g *Guard) logOpen(raw string) {
	g.log.Info("unrestricted browsing: page allowed without an allow-list", "url", redactURL(raw))
}

// redactURL drops user info, query and fragment from a URL for logs.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		if i := strings.IndexAny(raw, "?#,"); i >= 0 {
			return raw[:i]
		}
		return raw
	}
	u.User, u.RawQuery, u.Fragment, u.RawFragment = nil, "", "", ""
	return u.String()
}

// checkHost applies the private-network block to a normalised host: an IP
// literal is classified directly, a metadata or localhost name refused, any
// other name resolved and every address classified.
func (g *Guard) checkHost(ctx context.Context, raw, host, port string) error {
	dev := g.dev[net.JoinHostPort(host, port)]
	if a, ok := hostAddr(host); ok {
		if err := g.checkAddr(raw, a, dev); err != nil {
			return err
		}
		return nil
	}
	if metadataNames[host] {
		return forbidden(raw, RulePrivateNetwork+": cloud metadata name", "the host "+host+" is a metadata service")
	}
	if (host == "localhost" || strings.HasSuffix(host, ".localhost")) && !dev {
		return forbidden(raw, RulePrivateNetwork+": loopback name", "the host "+host+" is loopback")
	}
	addrs, err := g.res.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return &Error{Code: CodeProviderError, Param: "url", URL: raw, Rule: RulePrivateNetwork,
			Message: "the host " + host + " could not be resolved", Err: err}
	}
	if len(addrs) == 0 {
		return &Error{Code: CodeProviderError, Param: "url", URL: raw, Rule: RulePrivateNetwork,
			Message: "the host " + host + " has no address"}
	}
	for _, a := range addrs {
		if err := g.checkAddr(raw, a.Unmap(), dev); err != nil {
			err.Message = "the host " + host + " resolves to " + a.String() + ", a blocked address"
			return err
		}
	}
	return nil
}

// CheckAddr applies the private-network block to an address being dialled
// for host:port (the egress proxy's check); host is the name the connection
// is for ("" if none), used only for the DevLoopback opt-in.
func (g *Guard) CheckAddr(host string, ap netip.AddrPort) error {
	dev := false
	if host != "" {
		if nh, err := NormalizeHost(host); err == nil {
			dev = g.dev[net.JoinHostPort(nh, strconv.Itoa(int(ap.Port())))]
		}
	}
	if err := g.checkAddr(net.JoinHostPort(host, strconv.Itoa(int(ap.Port()))), ap.Addr().Unmap(), dev); err != nil {
		err.Param = "address"
		return err
	}
	return nil
}

func (g *Guard) checkAddr(raw string, a netip.Addr, dev bool) *Error {
	if dev && a.IsLoopback() {
		return nil
	}
	if g.ssrf.SafeAddr(a) != nil {
		rule := RulePrivateNetwork + ": " + deniedPrefix(a)
		return forbidden(raw, rule, "the address "+a.String()+" is private, loopback or reserved")
	}
	return nil
}

// deniedPrefix names the special-purpose range that holds a blocked address,
// from the library's own tables.
func deniedPrefix(a netip.Addr) string {
	list := ssrf.IPv4DeniedPrefixes
	if a.Is6() {
		list = ssrf.IPv6DeniedPrefixes
	}
	for _, p := range list {
		if p.Contains(a) {
			return p.String()
		}
	}
	if a.Is6() && !ssrf.IPv6GlobalUnicast.Contains(a) {
		return "outside " + ssrf.IPv6GlobalUnicast.String()
	}
	return "reserved"
}
