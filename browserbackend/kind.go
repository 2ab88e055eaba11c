package browserbackend

import (
	"fmt"
	"strings"
)

// Kind names a backend. The four values are the wire names used in logs,
// attempt reports and the conversation memo (SPEC §0).
type Kind string

// The backend kinds, in the order the reference providers propose them.
const (
	// KindExtension is the user's Chrome reached through the paired Chrome
	// extension over the event hub (PXY-6, PXY-9).
	KindExtension Kind = "extension"
	// KindHostBridge is the user's Chrome reached through a desktop client over
	// the event hub (PXY-6, PXY-7). Never accepted as a caller's mode.
	KindHostBridge Kind = "host-bridge"
	// KindCDPInspect is a Chrome started with a remote-debugging port (INS-1).
	KindCDPInspect Kind = "cdp-inspect"
	// KindLocal is a sacrificial Chromium launched through Playwright (LOC-1).
	KindLocal Kind = "local"
)

// String returns the wire name.
func (k Kind) String() string { return string(k) }

// Mode is what a caller asks for per call (the tool input's browser_mode).
// The zero value is not valid; use ParseMode or ModeAuto.
type Mode string

// The caller-visible modes (SEL-7). host-bridge is deliberately absent: it is
// produced by selection or the conversation memo, never requested.
const (
	ModeAuto       Mode = "auto"
	ModeExtension  Mode = "extension"
	ModeCDPInspect Mode = "cdp-inspect"
	ModeLocal      Mode = "local"
)

// String returns the wire name.
func (m Mode) String() string { return string(m) }

// Kind returns the backend kind a pinned mode selects, and false for ModeAuto
// or an unknown mode.
func (m Mode) Kind() (Kind, bool) {
	switch m {
	case ModeExtension:
		return KindExtension, true
	case ModeCDPInspect:
		return KindCDPInspect, true
	case ModeLocal:
		return KindLocal, true
	}
	return "", false
}

// modeAliases maps accepted spellings to canonical modes. Keys are already
// folded to lower case.
var modeAliases = map[string]Mode{
	"":             ModeAuto,
	"auto":         ModeAuto,
	"extension":    ModeExtension,
	"cdp-inspect":  ModeCDPInspect,
	"cdp-debugger": ModeCDPInspect,
	"local":        ModeLocal,
	"playwright":   ModeLocal,
}

// ParseMode turns a caller's browser_mode into a Mode (SEL-7). Matching
// ignores case and surrounding space; the empty string is ModeAuto; the
// aliases cdp-debugger (= cdp-inspect) and playwright (= local) are accepted.
// Anything else, including "host-bridge", returns an *Error of class
// ClassPolicy with code CodeInvalidMode whose message lists the accepted
// values and aliases.
func ParseMode(s string) (Mode, error) {
	key := strings.ToLower(strings.TrimSpace(s))
	if m, ok := modeAliases[key]; ok {
		return m, nil
	}
	return "", &Error{
		Class: ClassPolicy,
		Code:  CodeInvalidMode,
		Message: fmt.Sprintf("invalid browser_mode %q: accepted values are auto, extension, cdp-inspect, local "+
			"(aliases: cdp-debugger = cdp-inspect, playwright = local)", s),
	}
}
