package browserbackend

import (
	"fmt"
	"strings"
)

// Kind names a backend. Kinds are wire names used in logs, attempt reports,
// status reports and the conversation memo. The core attaches no behaviour to
// any kind: what a kind is (how it is pinned, how it is reached, what a person
// should do when it fails, whether a pinned call waits for it) is what its
// Provider declares in its Descriptor.
type Kind string

// The names of the four reference backends. They are names only:
// a host app may add any other kind through its own Provider.
const (
	// KindExtension is the user's Chrome reached through the paired Chrome
	// extension over the event hub (package hostproxy).
	KindExtension Kind = "extension"
	// KindHostBridge is the user's Chrome reached through a desktop client over
	// the event hub (package hostproxy). It declares no mode: it is reached
	// through auto or the conversation memo only.
	KindHostBridge Kind = "host-bridge"
	// KindCDPInspect is a Chrome started with a remote-debugging port (package
	// cdpinspect).
	KindCDPInspect Kind = "cdp-inspect"
	// KindLocal is a sacrificial Chromium launched through Playwright (package
	// local).
	KindLocal Kind = "local"
)

// String returns the wire name.
func (k Kind) String() string { return string(k) }

// Mode is what a caller asks for per call (the tool input's browser_mode):
// ModeAuto, or the canonical mode a provider declares in Descriptor.Mode.
// Use Selector.ParseMode to turn a caller's string into a Mode.
type Mode string

// ModeAuto walks the providers in order (Options.Providers). The empty Mode means
// ModeAuto.
const ModeAuto Mode = "auto"

// String returns the wire name.
func (m Mode) String() string { return string(m) }

// modeTable maps every accepted spelling (folded to lower case) to its
// canonical mode and kind. It is built once from the providers' descriptors.
type modeTable struct {
	byName   map[string]modeEntry
	accepted string // "auto, extension, …" for error messages
	aliases  string // "cdp-debugger = cdp-inspect, …"
}

type modeEntry struct {
	mode Mode
	kind Kind
}

func newModeTable(ds []Descriptor) modeTable {
	t := modeTable{byName: map[string]modeEntry{"": {mode: ModeAuto}, string(ModeAuto): {mode: ModeAuto}}}
	accepted := []string{string(ModeAuto)}
	var aliases []string
	for _, d := range ds {
		if d.Mode == "" {
			continue
		}
		name := strings.ToLower(string(d.Mode))
		if _, dup := t.byName[name]; dup {
			continue
		}
		t.byName[name] = modeEntry{mode: d.Mode, kind: d.Kind}
		accepted = append(accepted, string(d.Mode))
		for _, a := range d.Aliases {
			a = strings.ToLower(strings.TrimSpace(a))
			if _, dup := t.byName[a]; dup || a == "" {
				continue
			}
			t.byName[a] = modeEntry{mode: d.Mode, kind: d.Kind}
			aliases = append(aliases, a+" = "+string(d.Mode))
		}
	}
	t.accepted = strings.Join(accepted, ", ")
	t.aliases = strings.Join(aliases, ", ")
	return t
}

// parse canonicalises s; ok is false for an unknown mode.
func (t modeTable) parse(s string) (modeEntry, bool) {
	e, ok := t.byName[strings.ToLower(strings.TrimSpace(s))]
	return e, ok
}

func (t modeTable) invalid(s string) *Error {
	msg := fmt.Sprintf("invalid browser_mode %q: accepted values are %s", s, t.accepted)
	if t.aliases != "" {
		msg += " (aliases: " + t.aliases + ")"
	}
	return &Error{Class: ClassPolicy, Code: CodeInvalidMode, Message: msg}
}
