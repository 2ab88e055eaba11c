package tools

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/browserchain/browserchain/browserbackend"
)

// DefaultProbeTimeout bounds each active probe of Status when
// StatusOptions.ProbeTimeout is 0.
const DefaultProbeTimeout = 2 * time.Second

// How a backend's availability was established.
const (
	// VerifiedPreflight: the provider proposed (or skipped) the backend from
	// live state without touching the network.
	VerifiedPreflight = "preflight"
	// VerifiedProbe: Candidate.Probe actively checked the backend.
	VerifiedProbe = "probe"
)

// CodeNoProvider is the code of a backend kind no provider of the selector
// offers.
const CodeNoProvider = "no_provider"

// StatusOptions configures Status.
type StatusOptions struct {
	// Probe runs the Probe of every proposed candidate that has one, in
	// parallel, each bounded by ProbeTimeout and ctx.
	Probe bool
	// ProbeTimeout; 0 means DefaultProbeTimeout.
	ProbeTimeout time.Duration
}

// BackendStatus is the availability of one backend kind.
type BackendStatus struct {
	Kind browserbackend.Kind `json:"kind"`
	// Mode is the browser_mode that pins this backend; "" for host-bridge,
	// which is reached through auto only.
	Mode browserbackend.Mode `json:"mode,omitempty"`
	// Transport names how the backend is reached: "extension-ws" for the
	// extension (the label the seed's browser_status keeps although the
	// transport is now SSE plus POSTed results), "host-bridge-sse",
	// "cdp-ws", "playwright".
	Transport string `json:"transport"`
	Available bool   `json:"available"`
	// VerifiedBy is VerifiedPreflight or VerifiedProbe.
	VerifiedBy string `json:"verifiedBy"`
	// InAutoOrder is true when the auto chain of this invocation lists it.
	InAutoOrder bool `json:"inAutoOrder"`
	// Reason is the provider's reason for proposing or skipping.
	Reason string `json:"reason,omitempty"`
	// Code is the skip code (no_client, cooldown, not_configured …) or the
	// probe's failure code (unreachable, timeout …).
	Code string `json:"code,omitempty"`
	// DiscoveryCode is cdp-inspect's discovery outcome, when known.
	DiscoveryCode string `json:"discoveryCode,omitempty"`
	Message       string `json:"message,omitempty"`
	// UserActions is what a person can do to make it available
	// (browserbackend.Remediation).
	UserActions []string `json:"userActions,omitempty"`
}

// StatusReport is the data of the browser_status tool (SEL-13). It is plain
// data and JSON-serialisable.
type StatusReport struct {
	// Mode is the invocation's canonical browser_mode.
	Mode browserbackend.Mode `json:"mode"`
	// AutoOrder is the auto chain for this invocation, in try order.
	AutoOrder []browserbackend.Kind `json:"autoOrder"`
	// Backends lists every backend kind, in the reference order extension,
	// host-bridge, cdp-inspect, local.
	Backends []BackendStatus `json:"backends"`
	// StickyKind is the conversation's remembered backend (SEL-9), "" when
	// none.
	StickyKind browserbackend.Kind `json:"stickyKind,omitempty"`
	// RecommendedKind is the first available backend in AutoOrder;
	// RecommendedMode the browser_mode to use for it (auto for host-bridge,
	// or when nothing is available, "").
	RecommendedKind browserbackend.Kind `json:"recommendedKind,omitempty"`
	RecommendedMode browserbackend.Mode `json:"recommendedMode,omitempty"`
	// UserActions gathers the actions of the unavailable backends that come
	// before the recommended one in the reference order (what would give a
	// better browser), or of all of them when none is available; no
	// duplicates.
	UserActions []string `json:"userActions,omitempty"`
	// PinnedTabID is the conversation's extension tab (TOOL-2), 0 when none.
	PinnedTabID int `json:"pinnedTabId,omitempty"`
}

// Backend returns the status of kind k.
func (r StatusReport) Backend(k browserbackend.Kind) (BackendStatus, bool) {
	for _, b := range r.Backends {
		if b.Kind == k {
			return b, true
		}
	}
	return BackendStatus{}, false
}

// noActionCodes are unavailability codes a person need not act on: the
// host-bridge is left out because the extension serves instead, or because
// the call targets one extension client (hostproxy's skip codes).
var noActionCodes = map[string]bool{CodeNoProvider: true, "extension_connected": true, "target_client": true}

var referenceKinds = []browserbackend.Kind{
	browserbackend.KindExtension, browserbackend.KindHostBridge, browserbackend.KindCDPInspect, browserbackend.KindLocal,
}

var transports = map[browserbackend.Kind]string{
	browserbackend.KindExtension:  "extension-ws",
	browserbackend.KindHostBridge: "host-bridge-sse",
	browserbackend.KindCDPInspect: "cdp-ws",
	browserbackend.KindLocal:      "playwright",
}

func modeOf(k browserbackend.Kind) browserbackend.Mode {
	switch k {
	case browserbackend.KindExtension:
		return browserbackend.ModeExtension
	case browserbackend.KindCDPInspect:
		return browserbackend.ModeCDPInspect
	case browserbackend.KindLocal:
		return browserbackend.ModeLocal
	}
	return ""
}

// Status reports, for the invocation inv, which backends are available and how
// that was verified, the auto order, the conversation's sticky kind, a
// recommended mode and what a person can do (SEL-13). It never builds a
// backend: availability comes from the providers' proposals
// (Selector.Plan; the auto plan, and a pinned plan for a kind the auto chain
// leaves out) and, with opts.Probe, from each candidate's Probe. inv.Mode is
// validated first (an invalid mode is CodeInvalidMode); the report covers
// every mode whatever inv.Mode is. Safe for concurrent use; returns within
// ctx plus one probe timeout.
func Status(ctx context.Context, sel *browserbackend.Selector, inv browserbackend.Invocation, opts StatusOptions) (StatusReport, error) {
	const op = "status"
	mode, err := parseMode(op, "", inv)
	if err != nil {
		return StatusReport{}, err
	}
	timeout := opts.ProbeTimeout
	if timeout <= 0 {
		timeout = DefaultProbeTimeout
	}
	rep := StatusReport{Mode: mode, AutoOrder: []browserbackend.Kind{}}
	if k, ok := sel.Memo().Get(inv.ConversationID); ok && inv.ConversationID != "" {
		rep.StickyKind = k
	}

	autoInv := inv
	autoInv.Mode = browserbackend.ModeAuto
	auto := sel.Plan(autoInv)
	rep.AutoOrder = append(rep.AutoOrder, auto.Kinds()...)

	type entry struct {
		st    BackendStatus
		probe func(context.Context) error
	}
	entries := make([]*entry, len(referenceKinds))
	for i, k := range referenceKinds {
		e := &entry{st: BackendStatus{Kind: k, Mode: modeOf(k), Transport: transports[k], VerifiedBy: VerifiedPreflight}}
		entries[i] = e
		found := false
		for _, c := range auto.Candidates {
			if c.Kind == k {
				e.st.Available, e.st.InAutoOrder, e.st.Reason, e.probe = true, true, c.Reason, c.Probe
				found = true
				break
			}
		}
		if !found {
			for _, a := range auto.Skipped {
				if a.Kind == k {
					e.st.Reason, e.st.Code, e.st.Message, e.st.DiscoveryCode = a.Reason, a.Code, a.Message, a.DiscoveryCode
					found = true
				}
			}
		}
		// A pinnable kind the auto chain leaves out may still serve a
		// pinned call (e.g. cdp-inspect not enabled for auto).
		if m := modeOf(k); m != "" && (!e.st.Available) {
			pinInv := inv
			pinInv.Mode = m
			if k != browserbackend.KindExtension {
				pinInv.TargetClientID = ""
			}
			pinned := sel.Plan(pinInv)
			if len(pinned.Candidates) > 0 {
				c := pinned.Candidates[0]
				e.st.Available, e.st.Reason, e.probe = true, c.Reason, c.Probe
				e.st.Code, e.st.Message = "", "pinned mode only"
				found = true
			} else if !found {
				for _, a := range pinned.Skipped {
					e.st.Reason, e.st.Code, e.st.Message = a.Reason, a.Code, a.Message
					found = true
				}
				var be *browserbackend.Error
				if !found && errors.As(pinned.Err, &be) {
					e.st.Code, e.st.Message = be.Code, be.Message
					found = true
				}
			}
		}
		if !found {
			e.st.Code, e.st.Message = CodeNoProvider, "no provider offers this backend"
		}
	}

	if opts.Probe {
		var wg sync.WaitGroup
		for _, e := range entries {
			if !e.st.Available || e.probe == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				pctx, cancel := context.WithTimeout(ctx, timeout)
				defer cancel()
				err := e.probe(pctx)
				e.st.VerifiedBy = VerifiedProbe
				if err != nil {
					be := browserbackend.Classify(err, false)
					if pctx.Err() != nil && be.Code == "" {
						be = &browserbackend.Error{Code: browserbackend.CodeTimeout, Message: "probe timed out"}
					}
					e.st.Available = false
					e.st.Code, e.st.DiscoveryCode, e.st.Message = be.Code, be.DiscoveryCode, be.Message
					if e.st.Message == "" {
						e.st.Message = err.Error()
					}
				}
			}()
		}
		wg.Wait()
	}

	for _, e := range entries {
		if !e.st.Available && !noActionCodes[e.st.Code] {
			code := e.st.Code
			if e.st.DiscoveryCode != "" {
				code = e.st.DiscoveryCode
			}
			e.st.UserActions = browserbackend.Remediation(e.st.Kind, code)
		}
		rep.Backends = append(rep.Backends, e.st)
	}
	for _, k := range rep.AutoOrder {
		if b, _ := rep.Backend(k); b.Available {
			rep.RecommendedKind = k
			rep.RecommendedMode = b.Mode
			if b.Mode == "" {
				rep.RecommendedMode = browserbackend.ModeAuto
			}
			break
		}
	}
	seen := map[string]bool{}
	for _, b := range rep.Backends {
		if rep.RecommendedKind != "" && b.Kind == rep.RecommendedKind {
			break
		}
		for _, a := range b.UserActions {
			if !seen[a] {
				seen[a] = true
				rep.UserActions = append(rep.UserActions, a)
			}
		}
	}
	return rep, nil
}
