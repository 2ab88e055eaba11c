package guard_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// publicResolver answers every name with a public address, except the names
// in m.
func resolver(m map[string]string) guard.Resolver {
	return guard.ResolverFunc(func(_ context.Context, _, host string) ([]netip.Addr, error) {
		if a, ok := m[host]; ok {
			return []netip.Addr{netip.MustParseAddr(a)}, nil
		}
		return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
	})
}

func TestAllowList(t *testing.T) {
	g := guard.MustNew(guard.Policy{
		AllowedDomains: []string{"https://*.corp.test", "shop.test:8443", "Bücher.test.", "EXAMPLE.org"},
		Resolver:       resolver(nil),
	})
	cases := []struct {
		url  string
		ok   bool
		rule string
	}{
		{"https://corp.test/", false, guard.RuleAllowedDomains}, // wildcard: subdomains only
		{"https://a.corp.test/x", true, ""},
		{"https://a.b.corp.test/", true, ""},
		{"https://corp.test.evil/", false, guard.RuleAllowedDomains},
		{"https://evilcorp.test/", false, guard.RuleAllowedDomains},
		{"http://a.corp.test/", false, guard.RuleAllowedDomains}, // the entry names https
		{"https://A.CORP.TEST./", true, ""},                      // upper case, trailing dot
		{"http://shop.test:8443/cart", true, ""},
		{"http://shop.test/", false, guard.RuleAllowedDomains}, // the entry names a port
		{"http://shop.test:8444/", false, guard.RuleAllowedDomains},
		{"http://bücher.test/", true, ""},
		{"http://xn--bcher-kva.test/", true, ""}, // the same host in punycode
		{"http://BÜCHER.TEST/", true, ""},
		{"http://example.org:8080/", true, ""}, // no port in the entry: any port
		{"javascript:alert(1)", false, guard.RuleScheme},
		{"file:///etc/passwd", false, guard.RuleScheme},
		{"chrome://settings", false, guard.RuleScheme},
		{"data:text/html,hi", false, guard.RuleScheme},
		{"about:blank", true, ""},
		{"about:srcdoc", false, guard.RuleScheme},
	}
	for _, c := range cases {
		err := g.CheckURL(t.Context(), c.url)
		if c.ok {
			assert.NoError(t, err, c.url)
			continue
		}
		var ge *guard.Error
		if assert.ErrorAs(t, err, &ge, c.url) {
			assert.Equal(t, guard.CodeForbidden, ge.Code, c.url)
			assert.Equal(t, c.url, ge.URL, c.url)
			assert.True(t, strings.HasPrefix(ge.Rule, c.rule), "%s: rule %q", c.url, ge.Rule)
			assert.ErrorIs(t, err, guard.ErrForbidden)
			assert.ErrorIs(t, err, browserbackend.ErrPolicy)
			assert.Contains(t, err.Error(), c.url)
		}
	}
}

func TestPolicyValidation(t *testing.T) {
	_, err := guard.New(guard.Policy{AllowedDomains: []string{}})
	require.ErrorIs(t, err, &guard.Error{Code: guard.CodeValidationFailed, Param: "allowed_domains"})
	require.ErrorIs(t, err, browserbackend.ErrPolicy)
	for _, bad := range []string{"ftp://x.test", "a.*.test", "x.test/path", "x.test:0", "x.test:99999", ""} {
		_, err := guard.New(guard.Policy{AllowedDomains: []string{bad}})
		assert.ErrorIs(t, err, guard.ErrValidationFailed, bad)
	}
	_, err = guard.New(guard.Policy{DevLoopback: []string{"127.0.0.1"}})
	assert.ErrorIs(t, err, &guard.Error{Code: guard.CodeValidationFailed, Param: "dev_loopback"})
}

func TestOpenWebIsLogged(t *testing.T) {
	for _, list := range [][]string{nil, {"*"}} {
		var buf bytes.Buffer
		g := guard.MustNew(guard.Policy{AllowedDomains: list, Resolver: resolver(nil),
			Logger: slog.New(slog.NewTextHandler(&buf, nil))})
		assert.False(t, g.Restricted())
		require.NoError(t, g.CheckURL(t.Context(), "https://anything.example/page?token=s3cret"))
		assert.Contains(t, buf.String(), "unrestricted browsing")
		assert.Contains(t, buf.String(), "https://anything.example/page")
		assert.NotContains(t, buf.String(), "s3cret", "query strings are not logged")
		// "*" does not lift the private-network block.
		assert.ErrorIs(t, g.CheckURL(t.Context(), "http://127.0.0.1/"), guard.ErrForbidden)
		// file: and javascript: stay refused on the open web; data: loads.
		assert.ErrorIs(t, g.CheckURL(t.Context(), "file:///etc/passwd"), guard.ErrForbidden)
		assert.NoError(t, g.CheckURL(t.Context(), "data:text/html,hi"))
	}
}

func TestPrivateNetworksAlwaysBlocked(t *testing.T) {
	res := resolver(map[string]string{"intranet.test": "10.0.0.5", "v6.test": "::1", "mapped.test": "::ffff:192.168.1.1"})
	policies := map[string]guard.Policy{
		"open": {Resolver: res},
		"star": {AllowedDomains: []string{"*"}, Resolver: res},
	}
	hosts := []string{
		"127.0.0.1", "0x7f.1", "2130706433", "017700000001", "0177.0.0.1", "127.1", "0x7f000001",
		"[::ffff:127.0.0.1]", "[::1]", "[64:ff9b::7f00:1]", "169.254.169.254", "metadata.google.internal",
		"100.100.100.200", "[fd00:ec2::254]", "10.0.0.5", "192.168.0.1", "172.16.3.4", "0.0.0.0",
		"224.0.0.1", "192.0.2.7", "localhost", "app.localhost", "intranet.test", "v6.test", "mapped.test",
	}
	// Every host on the list: the block holds whatever the list says.
	policies["list"] = guard.Policy{AllowedDomains: append([]string{"public.test"}, hosts...), Resolver: res}
	for name, p := range policies {
		g := guard.MustNew(p)
		for _, h := range hosts {
			u := "http://" + h + "/"
			err := g.CheckURL(t.Context(), u)
			var ge *guard.Error
			if assert.ErrorAs(t, err, &ge, "%s: %s", name, h) {
				assert.Equal(t, guard.CodeForbidden, ge.Code, "%s: %s", name, h)
				assert.True(t, strings.HasPrefix(ge.Rule, guard.RulePrivateNetwork), "%s: %s rule %q", name, h, ge.Rule)
			}
		}
		assert.NoError(t, g.CheckURL(t.Context(), "http://public.test/"), name)
	}
}

func TestNormalizeHostIPv4Forms(t *testing.T) {
	for in, want := range map[string]string{
		"0x7f.1": "127.0.0.1", "2130706433": "127.0.0.1", "017700000001": "127.0.0.1", "127.1": "127.0.0.1",
		"0xA9.0xFE.0xA9.0xFE": "169.254.169.254", "10.0.0.5.": "10.0.0.5", "[::FFFF:7f00:1]": "::ffff:127.0.0.1",
		"Example.COM.": "example.com", "bücher.test": "xn--bcher-kva.test", "１２７.０.０.１": "127.0.0.1",
	} {
		got, err := guard.NormalizeHost(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
	for _, bad := range []string{"1.2.3.4.5", "256.1.1.1", "1.09", "0x1.0x1.0x1.0x100", ""} {
		_, err := guard.NormalizeHost(bad)
		assert.Error(t, err, bad)
	}
}

func TestDevLoopbackOptIn(t *testing.T) {
	res := resolver(map[string]string{"allowed.test": "127.0.0.1", "intranet.test": "10.0.0.5"})
	g := guard.MustNew(guard.Policy{AllowedDomains: []string{"allowed.test", "intranet.test", "127.0.0.1"},
		DevLoopback: []string{"allowed.test:8080", "127.0.0.1:9000", "intranet.test:80"}, Resolver: res})
	assert.NoError(t, g.CheckURL(t.Context(), "http://allowed.test:8080/"))
	assert.NoError(t, g.CheckURL(t.Context(), "http://127.0.0.1:9000/"))
	assert.ErrorIs(t, g.CheckURL(t.Context(), "http://allowed.test:8081/"), guard.ErrForbidden, "another port")
	assert.ErrorIs(t, g.CheckURL(t.Context(), "http://127.0.0.1:9001/"), guard.ErrForbidden)
	assert.ErrorIs(t, g.CheckURL(t.Context(), "http://intranet.test/"), guard.ErrForbidden, "only loopback is exempt")
	assert.NoError(t, g.CheckAddr("allowed.test", netip.MustParseAddrPort("127.0.0.1:8080")))
	assert.ErrorIs(t, g.CheckAddr("allowed.test", netip.MustParseAddrPort("127.0.0.1:8081")), guard.ErrForbidden)
	assert.ErrorIs(t, g.CheckAddr("", netip.MustParseAddrPort("[::ffff:10.1.1.1]:443")), guard.ErrForbidden)
	assert.NoError(t, g.CheckAddr("x.test", netip.MustParseAddrPort("93.184.215.14:443")))
}

func TestResolverFailureFailsClosed(t *testing.T) {
	g := guard.MustNew(guard.Policy{Resolver: guard.ResolverFunc(func(context.Context, string, string) ([]netip.Addr, error) {
		return nil, errors.New("no such host")
	})})
	err := g.CheckURL(t.Context(), "https://nowhere.test/")
	assert.ErrorIs(t, err, guard.ErrProviderError)
	assert.ErrorIs(t, err, browserbackend.ErrPolicy)
}

func TestContextOverride(t *testing.T) {
	_, ok := guard.FromContext(t.Context())
	assert.False(t, ok)
	g := guard.MustNew(guard.Policy{})
	got, ok := guard.FromContext(guard.NewContext(t.Context(), g))
	assert.True(t, ok)
	assert.Same(t, g, got)
	got, ok = guard.FromContext(guard.NewContext(t.Context(), nil))
	assert.True(t, ok)
	assert.Nil(t, got)
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// BenchmarkCheckURL is the pure cost of one URL check under a list (the
// resolver answers from memory).
func BenchmarkCheckURL(b *testing.B) {
	g := guard.MustNew(guard.Policy{AllowedDomains: []string{"app.example.com", "*.example.org"}, Resolver: resolver(nil), Logger: quiet()})
	ctx := context.Background()
	for b.Loop() {
		if err := g.CheckURL(ctx, "https://a.example.org/path?q=1"); err != nil {
			b.Fatal(err)
		}
	}
}
