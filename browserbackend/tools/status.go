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
	// Mode is the browser_mode that pins this backend (its
	// Descriptor.Mode); "" for a kind reached through auto only
	// (host-bridge).
	Mode browserbackend.Mode `json:"mode,omitempty"`
	// Transport names how the backend is reached (its
	// Descriptor.Transport): "extension-ws" for the extension (the label of
	// the seed's browser_status; the transport itself is SSE plus POSTed
	// results), "host-bridge-sse", "cdp-ws", "playwright".
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
	// Detail is the backend's finer code (cdp-inspect's discovery outcome),
	// when known.
	Detail string `json:"detail,omitempty"`
	// Yielded is set when the provider stood aside for another candidate
	// (browserbackend.Yield): unavailable, but nothing to fix.
	Yielded bool   `json:"yielded,omitempty"`
	Message string `json:"message,omitempty"`
	// UserActions is what a person can do to make it available (the kind's
	// Descriptor.Remediation).
	UserActions []string `json:"userActions,omitempty"`
}

// StatusReport is the data of the browser_status tool. It is plain
// data and JSON-serialisable.
type StatusReport struct {
	// Mode is the invocation's canonical browser_mode.
	Mode browserbackend.Mode `json:"mode"`
	// AutoOrder is the auto chain for this invocation, in try order.
	AutoOrder []browserbackend.Kind `json:"autoOrder"`
	// Backends lists every kind the selector's providers describe, in
	// provider order (the reference order is extension, host-bridge,
	// cdp-inspect, local).
	Backends []BackendStatus `json:"backends"`
	// StickyKind is the conversation's remembered backend, "" when
	// none.
	StickyKind browserbackend.Kind `json:"stickyKind,omitempty"`
	// RecommendedKind is the first available backend in AutoOrder;
	// RecommendedMode the browser_mode to use for it (auto for host-bridge,
	// or when nothing is available, "").
	RecommendedKind browserbackend.Kind `json:"recommendedKind,omitempty"`
	RecommendedMode browserbackend.Mode `json:"recommendedMode,omitempty"`
	// UserActions gathers the actions of the unavailable backends that come
	// before the recommended one in provider order (what would give a
	// better browser), or of all of them when none is available; no
	// duplicates.
	UserActions []string `json:"userActions,omitempty"`
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

// Status reports, for the invocation inv, which backends are available and how
// that was verified, the auto order, the conversation's sticky kind, a
// recommended mode and what a person can do. It never builds a
// backend: availability comes from the providers' proposals
// (Selector.Plan; the auto plan, and a pinned plan for a kind the auto chain
// leaves out) and, with opts.Probe, from each candidate's Probe. inv.Mode is
// validated first (an invalid mode is CodeInvalidMode); the report covers
// every mode whatever inv.Mode is. Safe for concurrent use; returns within
// ctx plus one probe timeout.
func Status(ctx context.Context, sel *browserbackend.Selector, inv browserbackend.Invocation, opts StatusOptions) (StatusReport, error) {
	const op = "status"
	mode, err := parseMode(sel, op, "", inv)
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
	var entries []*entry
	for _, d := range sel.Descriptors() {
		e := &entry{st: BackendStatus{Kind: d.Kind, Mode: d.Mode, Transport: d.Transport, VerifiedBy: VerifiedPreflight}}
		entries = append(entries, e)
		e.probe = availability(&e.st, d, auto, sel, inv)
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
					e.st.Code, e.st.Detail, e.st.Message = be.Code, be.Detail, be.Message
					if e.st.Message == "" {
						e.st.Message = err.Error()
					}
				}
			}()
		}
		wg.Wait()
	}

	for _, e := range entries {
		if !e.st.Available && !e.st.Yielded {
			e.st.UserActions = sel.Remediation(browserbackend.Attempt{Kind: e.st.Kind, Stage: browserbackend.StageCandidateSelection,
				Code: e.st.Code, Detail: e.st.Detail, Message: e.st.Message})
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

// availability fills st from the auto plan, or, for a pinnable kind the auto
// chain leaves out (cdp-inspect not enabled for auto), from its pinned plan;
// it returns the candidate's Probe when one was proposed.
func availability(st *BackendStatus, d browserbackend.Descriptor, auto browserbackend.Plan, sel *browserbackend.Selector, inv browserbackend.Invocation) func(context.Context) error {
	for _, c := range auto.Candidates {
		if c.Kind == d.Kind {
			st.Available, st.InAutoOrder, st.Reason = true, true, c.Reason
			return c.Probe
		}
	}
	found := skipped(st, d.Kind, auto.Skipped)
	if d.Mode == "" {
		return nil
	}
	pinInv := inv
	pinInv.Mode = d.Mode
	if !d.TargetClients {
		pinInv.TargetClientID = ""
	}
	pinned := sel.Plan(pinInv)
	if len(pinned.Candidates) > 0 {
		c := pinned.Candidates[0]
		st.Available, st.Reason, st.Yielded = true, c.Reason, false
		st.Code, st.Message = "", "pinned mode only"
		return c.Probe
	}
	if found {
		return nil
	}
	if skipped(st, d.Kind, pinned.Skipped) {
		return nil
	}
	var be *browserbackend.Error
	if errors.As(pinned.Err, &be) {
		st.Code, st.Message = be.Code, be.Message
	}
	return nil
}

// skipped copies the last skip of kind k into st; false when there is none.
func skipped(st *BackendStatus, k browserbackend.Kind, as []browserbackend.Attempt) bool {
	found := false
	for _, a := range as {
		if a.Kind == k {
			st.Reason, st.Code, st.Message, st.Detail, st.Yielded = a.Reason, a.Code, a.Message, a.Detail, a.Yielded
			found = true
		}
	}
	return found
}
