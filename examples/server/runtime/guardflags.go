package runtime

import (
	"flag"
	"fmt"
	"log/slog"

	"github.com/browserchain/browserchain/browserbackend/guard"
)

// GuardFlags are the browser-policy flags the example programs share:
// -allowed-domains and -allow-writes. Register them with AddGuardFlags
// before the FlagSet is parsed and read them with Policy after.
type GuardFlags struct {
	fs      *flag.FlagSet
	allowed *string
	writes  *bool
}

// AddGuardFlags registers -allowed-domains (a comma-separated allow-list of
// page hosts: app.example.com, *.example.com, "*" for the open web) and
// -allow-writes (lift the write guard) on fs.
func AddGuardFlags(fs *flag.FlagSet) *GuardFlags {
	return &GuardFlags{
		fs: fs,
		allowed: fs.String("allowed-domains", "", `comma-separated allow-list of page hosts (app.example.com, *.example.com; "*": the open web, `+
			"still no private addresses); not given: no policy"),
		writes: fs.Bool("allow-writes", false, "with -allowed-domains: allow write-looking clicks, key presses and types"),
	}
}

// Policy returns the policy the flags describe, or nil when -allowed-domains
// was not given (no guard). A flag given with an empty value is an explicit
// empty list, which guard.New refuses (validation_failed). Call it after
// the FlagSet was parsed.
func (f *GuardFlags) Policy() *guard.Policy {
	var pol *guard.Policy
	f.fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "allowed-domains" {
			pol = &guard.Policy{AllowedDomains: append([]string{}, SplitList(*f.allowed)...), AllowWrites: *f.writes}
		}
	})
	return pol
}

// StartGuard builds the guard of pol (nil: no guard, nothing started) with
// log as its logger, and the egress proxy the local Chromium must go
// through: pass localArgs in local.Options.Args. stop closes the
// proxy; call it after the local browser is closed. It fails with guard.New's
// *guard.Error for an invalid policy.
func StartGuard(pol *guard.Policy, log *slog.Logger) (g *guard.Guard, localArgs []string, stop func(), err error) {
	if pol == nil {
		return nil, nil, func() {}, nil
	}
	p := *pol
	p.Logger = log
	if g, err = guard.New(p); err != nil {
		return nil, nil, nil, fmt.Errorf("-allowed-domains: %w", err)
	}
	egress, err := guard.NewEgressProxy(g, guard.EgressOptions{})
	if err != nil {
		return nil, nil, nil, err
	}
	return g, egress.ChromiumArgs(), func() { _ = egress.Close() }, nil
}
