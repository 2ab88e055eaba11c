package eventhub

import (
	"slices"

	"github.com/browserchain/browserchain/eventhub/wire"
)

// allCapabilities is every host-proxy capability, in a stable order.
var allCapabilities = []Capability{
	CapHostBash, CapHostFile, CapHostCU, CapHostAppControl, CapHostBrowser, CapHostUISnapshot,
}

// Capabilities returns the host-proxy capabilities an interface grants:
// chrome-extension → host_browser only; macos → all six; windows →
// all but host_app_control; any other interface (web, cli, unknown) → none.
// The result is a fresh slice the caller may keep.
func Capabilities(interfaceID string) []Capability {
	switch interfaceID {
	case wire.InterfaceChromeExtension:
		return []Capability{CapHostBrowser}
	case wire.InterfaceMacOS:
		return slices.Clone(allCapabilities)
	case wire.InterfaceWindows:
		return slices.DeleteFunc(slices.Clone(allCapabilities), func(c Capability) bool {
			return c == CapHostAppControl
		})
	default:
		return nil
	}
}

// Supports reports whether interfaceID grants capability c.
func Supports(interfaceID string, c Capability) bool {
	return slices.Contains(Capabilities(interfaceID), c)
}

// IsDesktop is the no-argument form of Supports: whether interfaceID
// is a full desktop client (macos, windows). chrome-extension is not: it
// grants host_browser only.
func IsDesktop(interfaceID string) bool {
	return interfaceID == wire.InterfaceMacOS || interfaceID == wire.InterfaceWindows
}
