package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/browserchain/browserchain/eventhub/wire"

	bb "github.com/browserchain/browserchain/browserbackend"
)

// PathExtensionFetch is the §1 row of the extension paired with
// Server.FetchOnlyURL: the same runtime without the result socket route, so
// the extension POSTs every result, as it did before the socket existed.
// It is the in-run "before" of the extension transport fix.
const PathExtensionFetch = "extension, results POSTed (server without the result socket)"

// StartFetchOnly starts a second browser with a copy of the reference
// extension paired with Server.FetchOnlyURL and returns its path, aimed at
// its client. CloseFetchOnly stops it.
func (w *World) StartFetchOnly(ctx context.Context) (*Path, error) {
	dir, err := CopyExtension(w.Root, w.Server.FetchOnlyURL)
	if err != nil {
		return nil, err
	}
	w.fetchClosers = append(w.fetchClosers, func() { os.RemoveAll(dir) })
	known := map[string]bool{}
	for _, c := range w.Server.Hub.Roster() {
		known[c.ClientID] = true
	}
	br, err := StartChromium(ctx, dir)
	if err != nil {
		return nil, err
	}
	w.fetchClosers = append(w.fetchClosers, br.Close)
	id, err := w.Server.waitNewClient(ctx, wire.InterfaceChromeExtension, known)
	if err != nil {
		return nil, err
	}
	inv := w.Server.Invocation("bench-ext-fetch", wire.InterfaceMacOS)
	inv.TargetClientID = id
	be := w.Server.Proxy.NewExtensionBackend(inv, hostproxyOpts)
	w.fetchClosers = append(w.fetchClosers, func() { be.Close() })
	p, _ := json.Marshal(map[string]any{"url": w.Fix.URL("/page"), "active": true})
	if _, err := be.Send(ctx, bb.Command{Method: "Vellum.createTab", Params: p}); err != nil {
		return nil, fmt.Errorf("benchreport: fetch-only extension: %w", err)
	}
	s := w.Server
	return &Path{Name: PathExtensionFetch,
		Note: "as the extension backend, but the server has no result socket, so each result is a fetch POST",
		Send: func(ctx context.Context, m string, p json.RawMessage) (json.RawMessage, error) {
			return be.Send(ctx, bb.Command{Method: m, Params: p})
		},
		Inside: func() (float64, float64, bool) { return s.Timing(s.LastRequestID()) },
	}, nil
}

// CloseFetchOnly stops the fetch-only browser and removes its path.
func (w *World) CloseFetchOnly() {
	for i := len(w.fetchClosers) - 1; i >= 0; i-- {
		w.fetchClosers[i]()
	}
	w.fetchClosers = nil
	var keep []*Path
	for _, p := range w.Paths {
		if p.Name != PathExtensionFetch {
			keep = append(keep, p)
		}
	}
	w.Paths = keep
}
