package cdpinspect

import (
	"context"
	"fmt"
	"time"

	"github.com/browserchain/browserchain/wire"

	bb "github.com/browserchain/browserchain/browserbackend"
)

// Candidate reasons of the provider (SEL-3). Desktop-auto reasons start with
// "desktopAuto:", which is what marks a candidate as cooldown-eligible in the
// seed.
const (
	ReasonPinned      = "pinned: cdp-inspect requested"
	ReasonConfigured  = "configured: cdpInspect.enabled"
	ReasonDesktopAuto = "desktopAuto: macos turn"
)

// Provider proposes the cdp-inspect candidate (SEL-2, SEL-3, SEL-6a). It
// never touches the network in Propose: the candidate's Build discovers and
// dials, its Probe only discovers. Safe for concurrent use; it holds no
// mutable state.
//
// Each Build opens its own browser WebSocket (one connection per
// invocation; see the package doc for why).
type Provider struct {
	cfg  bb.Config
	opts []Option
}

var _ bb.Provider = (*Provider)(nil)

// NewProvider returns the cdp-inspect provider for cfg (normally
// browserbackend.DefaultConfig or LoadConfig's result). opts apply to every
// Build and Probe (WithWebSocketURL, WithUserDataDirs, WithLogger, …).
func NewProvider(cfg bb.Config, opts ...Option) *Provider {
	return &Provider{cfg: cfg, opts: append([]Option(nil), opts...)}
}

// Kind returns browserbackend.KindCDPInspect.
func (p *Provider) Kind() bb.Kind { return bb.KindCDPInspect }

// Propose applies SEL-3's rule for cdp-inspect:
//   - a pinned invocation (env.Pinned) always gets the candidate, without a
//     cooldown key;
//   - cdpInspect.enabled gives it to every invocation, reason
//     "configured: cdpInspect.enabled", without a cooldown key (an explicitly
//     enabled cdp-inspect is never cooled down, SEL-6a);
//   - a "macos" turn with desktopAuto.enabled gets a desktop-auto candidate
//     (reason "desktopAuto: …") carrying CooldownKey
//     browserbackend.CooldownDesktopAuto and CooldownFor
//     desktopAuto.cooldownMs — unless that cooldown is active, which is a
//     skip with code browserbackend.CodeCooldown;
//   - anything else is a skip with code browserbackend.CodeNotConfigured.
func (p *Provider) Propose(inv bb.Invocation, env bb.Env) (bb.Candidate, error) {
	ci := p.cfg.CDPInspect
	switch {
	case env.Pinned:
		return p.candidate(ReasonPinned, "", 0), nil
	case ci.Enabled:
		return p.candidate(ReasonConfigured, "", 0), nil
	case inv.InterfaceID == wire.InterfaceMacOS && ci.DesktopAuto.Enabled:
		if env.Cooldowns != nil {
			if left := env.Cooldowns.Remaining(bb.CooldownDesktopAuto); left > 0 {
				return bb.Candidate{}, bb.Skip(bb.CodeCooldown,
					fmt.Sprintf("desktop-auto cdp-inspect skipped (cooldown active, %v left)", left.Round(time.Millisecond)))
			}
		}
		return p.candidate(ReasonDesktopAuto, bb.CooldownDesktopAuto, ci.DesktopAuto.Cooldown()), nil
	case inv.InterfaceID == wire.InterfaceMacOS:
		return bb.Candidate{}, bb.Skip(bb.CodeNotConfigured, "cdpInspect.enabled is off and desktopAuto.enabled is off")
	default:
		return bb.Candidate{}, bb.Skip(bb.CodeNotConfigured,
			fmt.Sprintf("cdpInspect.enabled is off and the turn's interface %q is not macos", inv.InterfaceID))
	}
}

func (p *Provider) candidate(reason, cooldownKey string, cooldownFor time.Duration) bb.Candidate {
	cfg := p.cfg.CDPInspect
	return bb.Candidate{
		Kind:   bb.KindCDPInspect,
		Reason: reason,
		Build: func(ctx context.Context) (bb.ScopedClient, error) {
			b, err := Dial(ctx, cfg, p.opts...)
			if err != nil {
				return nil, err
			}
			return b, nil
		},
		Probe: func(ctx context.Context) error {
			_, err := Probe(ctx, cfg, p.opts...)
			return err
		},
		CooldownKey: cooldownKey,
		CooldownFor: cooldownFor,
	}
}

// Probe runs discovery only (for the status report, SEL-13): it returns the
// endpoint, with Pages counted from /json/list when that answers (-1
// otherwise), or the discovery error Dial would return. It opens no
// WebSocket.
func Probe(ctx context.Context, cfg bb.CDPInspectConfig, opts ...Option) (Endpoint, error) {
	s := newSettings(opts)
	s.probeTimeout = probeTimeout(cfg)
	ep, err := discover(ctx, cfg, &s)
	if err != nil {
		return Endpoint{}, err
	}
	ep.Pages = countPages(ctx, ep, s.probeTimeout)
	return ep, nil
}
