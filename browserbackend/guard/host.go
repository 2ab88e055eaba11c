package guard

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// hostProfile maps a host name the way a browser does before looking it up:
// UTS #46 lookup mapping (which lower-cases), punycode for non-ASCII labels,
// and no STD3 restriction (browsers accept "_" in labels).
var hostProfile = idna.New(idna.MapForLookup(), idna.Transitional(false), idna.StrictDomainName(false))

// NormalizeHost returns host in the form the allow-list compares:
// brackets of an IPv6 literal removed, one trailing dot removed, IDNA-mapped
// to lower-case ASCII (punycode). An IPv4 literal in any form a browser
// accepts (decimal, octal, hex, fewer than four parts) becomes its dotted
// quad, an IPv6 literal its canonical text. It fails for an empty or
// unmappable host.
func NormalizeHost(host string) (string, error) {
	h := strings.TrimSuffix(host, ".")
	if strings.Contains(h, ":") {
		a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
		if err != nil || !a.Is6() {
			return "", errors.New("malformed IPv6 literal")
		}
		return a.String(), nil
	}
	if h == "" {
		return "", errors.New("empty host")
	}
	if a, ok, err := parseIPv4(h); err != nil {
		return "", err
	} else if ok {
		return a.String(), nil
	}
	a, err := hostProfile.ToASCII(h)
	if err != nil {
		return "", err
	}
	if a == "" {
		return "", errors.New("empty host")
	}
	if ip, ok, err := parseIPv4(a); err != nil {
		return "", err
	} else if ok { // full-width digits map to an IPv4 literal too
		return ip.String(), nil
	}
	return a, nil
}

// hostAddr returns the address of a normalised host that is an IP literal.
func hostAddr(h string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(h)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// parseIPv4 follows the WHATWG URL standard's IPv4 parser: a host whose last
// dot-separated part is a number is an IPv4 address written with one to four
// parts, each decimal, octal (leading 0) or hex (0x); the last part fills the
// remaining bytes. ok is false for a host that is a domain name; err is set
// for a host that ends in a number but is not a valid address (browsers
// refuse such URLs).
func parseIPv4(h string) (a netip.Addr, ok bool, err error) {
	parts := strings.Split(h, ".")
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	if _, numeric := ipv4Part(parts[len(parts)-1]); !numeric {
		return netip.Addr{}, false, nil
	}
	if len(parts) > 4 {
		return netip.Addr{}, false, errors.New("malformed IPv4 address")
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, numeric := ipv4Part(p)
		if !numeric {
			return netip.Addr{}, false, errors.New("malformed IPv4 address")
		}
		nums[i] = n
	}
	for _, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false, errors.New("malformed IPv4 address")
		}
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false, errors.New("malformed IPv4 address")
	}
	v := last
	for i, n := range nums[:len(nums)-1] {
		v += n << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true, nil
}

// ipv4Part parses one part of an IPv4 host; numeric is false when p is not a
// number in any base (so the host is a name). Values that overflow are
// reported as numeric with a value that fails the range checks.
func ipv4Part(p string) (n uint64, numeric bool) {
	if p == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(p) >= 2 && (p[:2] == "0x" || p[:2] == "0X"):
		base, p = 16, p[2:]
		if p == "" {
			return 0, true
		}
	case len(p) > 1 && p[0] == '0':
		base, p = 8, p[1:]
	}
	for _, c := range p {
		switch {
		case c >= '0' && c <= '9' && (base != 8 || c <= '7'):
		case base == 8 && (c == '8' || c == '9'):
			return 1 << 40, true // all digits, so a number, but not octal: invalid
		case base == 16 && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'):
		default:
			return 0, false
		}
	}
	v, err := strconv.ParseUint(p, base, 64)
	if err != nil {
		return 1 << 40, true
	}
	return v, true
}
