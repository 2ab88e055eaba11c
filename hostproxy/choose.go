package hostproxy

import (
	"fmt"
	"sort"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/wire"
)

func isExtension(c eventhub.ClientInfo) bool {
	return c.InterfaceID == wire.InterfaceChromeExtension
}

// choose picks the client a Request would go to now, from the live roster:
//   - only host_browser-capable clients; with SourceActor only that actor's;
//     Route narrows further;
//   - TargetClientID pins that client (transport error, code no_client, when
//     it is not connected or not eligible);
//   - Vellum.* methods go only to chrome-extension clients; when none is
//     eligible the error is protocol-class with code extension_required (it
//     must not fail over);
//   - otherwise chrome-extension clients come before desktop bridges, most
//     recently active first within each group.
//
// No eligible client is a transport error with code no_client.
func (p *Proxy) choose(req Req) (eventhub.ClientInfo, error) {
	pseudo := wire.IsPseudoMethod(req.Method)
	if req.TargetClientID != "" {
		// One lookup, not a copy of the whole roster per request.
		if c, ok := p.hub.Client(req.TargetClientID); ok && req.eligible(c) {
			if pseudo && !isExtension(c) {
				return eventhub.ClientInfo{}, p.extensionRequired(req)
			}
			return c, nil
		}
		return eventhub.ClientInfo{}, p.errorf(req, browserbackend.ClassTransport, browserbackend.CodeNoClient, false,
			"target client %q is not connected or not eligible", req.TargetClientID)
	}
	var eligible []eventhub.ClientInfo
	if h, ok := p.hub.(filteredRoster); ok {
		eligible = h.RosterWhere(req.eligible)
	} else {
		roster := p.hub.Roster()
		eligible = make([]eventhub.ClientInfo, 0, len(roster))
		for _, c := range roster {
			if req.eligible(c) {
				eligible = append(eligible, c)
			}
		}
	}
	sort.SliceStable(eligible, func(i, j int) bool {
		ei, ej := isExtension(eligible[i]), isExtension(eligible[j])
		if ei != ej {
			return ei
		}
		return eligible[i].LastActive.After(eligible[j].LastActive)
	})
	for _, c := range eligible {
		if pseudo && !isExtension(c) {
			continue
		}
		return c, nil
	}
	if pseudo {
		return eventhub.ClientInfo{}, p.extensionRequired(req)
	}
	return eventhub.ClientInfo{}, p.errorf(req, browserbackend.ClassTransport, browserbackend.CodeNoClient, false,
		"no connected host_browser client is eligible")
}

// filteredRoster is a hub that copies only the roster entries a filter keeps
// (eventhub.InProcess): choosing among a few clients of one actor then costs
// nothing per other client.
type filteredRoster interface {
	RosterWhere(keep func(eventhub.ClientInfo) bool) []eventhub.ClientInfo
}

// rosterOf returns the roster as the rules see it, in Hub.Roster order: on
// a filteredRoster hub only the host_browser clients of actor (every actor's
// when empty), the only ones ExtensionRule and HostBridgeRule look at.
func (p *Proxy) rosterOf(actor string) []eventhub.ClientInfo {
	if h, ok := p.hub.(filteredRoster); ok {
		return h.RosterWhere(func(c eventhub.ClientInfo) bool {
			return c.Has(eventhub.CapHostBrowser) && (actor == "" || c.ActorPrincipalID == actor)
		})
	}
	return p.hub.Roster()
}

// eligible reports whether c may serve req: host_browser-capable, of
// req.SourceActor when set, and on req.Route. It only reads c.
func (req Req) eligible(c eventhub.ClientInfo) bool {
	if !c.Has(eventhub.CapHostBrowser) {
		return false
	}
	if req.SourceActor != "" && c.ActorPrincipalID != req.SourceActor {
		return false
	}
	switch req.Route {
	case RouteExtension:
		return isExtension(c)
	case RouteBridge:
		return !isExtension(c)
	}
	return true
}

func (p *Proxy) extensionRequired(req Req) error {
	return p.errorf(req, browserbackend.ClassProtocol, browserbackend.CodeExtensionRequired, false,
		"%s is implemented only by the chrome extension, and no chrome-extension client is eligible", req.Method)
}

func (p *Proxy) errorf(req Req, class browserbackend.Class, code string, dispatched bool, format string, args ...any) *browserbackend.Error {
	return &browserbackend.Error{
		Class: class, Code: code, Method: req.Method, Backend: req.Backend,
		Dispatched: dispatched, Message: fmt.Sprintf(format, args...),
	}
}
