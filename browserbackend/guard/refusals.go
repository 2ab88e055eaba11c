package guard

import (
	"net"
	"net/url"
	"strings"
	"sync"
)

// maxRefusals bounds how many refused host:port pairs a Guard remembers;
// the oldest is forgotten first.
const maxRefusals = 256

// refusals is the bounded memory of the forbidden refusals a Guard's egress
// proxies made, by normalised host:port.
type refusals struct {
	mu    sync.Mutex
	byKey map[string]*Error
	order []string // oldest first
}

func (r *refusals) add(hostport string, e *Error) {
	key, ok := refusalKey(hostport)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byKey == nil {
		r.byKey = map[string]*Error{}
	}
	if _, seen := r.byKey[key]; !seen {
		r.order = append(r.order, key)
		if len(r.order) > maxRefusals {
			delete(r.byKey, r.order[0])
			r.order = r.order[1:]
		}
	}
	r.byKey[key] = e
}

func (r *refusals) get(key string) *Error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byKey[key]
}

// refusalKey normalises a host:port the way the allow-list compares hosts.
func refusalKey(hostport string) (string, bool) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || port == "" {
		return "", false
	}
	nh, err := NormalizeHost(host)
	if err != nil {
		return "", false
	}
	return net.JoinHostPort(nh, port), true
}

// EgressRefusal reports whether an EgressProxy of g refused to connect to
// the host and port of rawURL (an http or https URL; without a port, its
// scheme's default). It returns that refusal as a forbidden *Error with
// param "url", URL rawURL and the proxy's rule, or nil when none of the
// last 256 host:port pairs the proxies refused matches. The tools consult
// it so that a page the proxy refused is reported as forbidden, never as
// a loaded page. Safe for concurrent use.
func (g *Guard) EgressRefusal(rawURL string) error {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	key, ok := refusalKey(net.JoinHostPort(u.Hostname(), port))
	if !ok {
		return nil
	}
	e := g.refused.get(key)
	if e == nil {
		return nil
	}
	return &Error{Code: CodeForbidden, Param: "url", URL: rawURL, Rule: e.Rule,
		Message: "the egress proxy refused to connect to " + key + ": " + e.Message}
}
