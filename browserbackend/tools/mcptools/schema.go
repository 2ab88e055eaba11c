package mcptools

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

// closedSets are the allowed values of the string properties that take
// one of a fixed set, by JSON property name, wherever the property appears
// in an input schema. browser_mode's set is the Selector's (modesOf).
var closedSets = map[string][]string{
	"wait_until": {tools.WaitLoad, tools.WaitDOMContentLoaded, tools.WaitNone},
	"source":     {tools.SnapshotSourceDOM, tools.SnapshotSourceAccessibility},
	"level":      {"debug", "info", "warning", "error"},
	"action":     {"list", "new", "select", "close"}, // browser_tabs
	"step":       {"back", "forward", "reload"},      // browser_history
}

// modesOf returns every browser_mode value sel accepts: auto, then each
// provider's mode and its aliases, in provider order.
func modesOf(sel *browserbackend.Selector) []string {
	out := []string{string(browserbackend.ModeAuto)}
	for _, d := range sel.Descriptors() {
		if d.Mode != "" && !slices.Contains(out, string(d.Mode)) {
			out = append(out, string(d.Mode))
		}
		for _, a := range d.Aliases {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// modesText describes the browser_mode values of sel for a person or a
// model: "auto, extension, cdp-inspect (alias cdp-debugger), local (alias
// playwright)".
func modesText(sel *browserbackend.Selector) string {
	parts := []string{string(browserbackend.ModeAuto)}
	for _, d := range sel.Descriptors() {
		if d.Mode == "" {
			continue
		}
		p := string(d.Mode)
		if len(d.Aliases) > 0 {
			p += " (alias " + strings.Join(d.Aliases, ", ") + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// inputSchema returns the input schema of argument type A: the SDK's
// inference from the struct (jsonschema tags as descriptions, fields
// without omitempty required), with an enum on every string property
// named in sets, at any depth.
func inputSchema[A any](sets map[string][]string) (*jsonschema.Schema, error) {
	s, err := jsonschema.For[A](nil)
	if err != nil {
		return nil, fmt.Errorf("mcptools: input schema of %T: %w", *new(A), err)
	}
	addEnums(s, sets)
	return s, nil
}

func addEnums(s *jsonschema.Schema, sets map[string][]string) {
	if s == nil {
		return
	}
	for name, p := range s.Properties {
		if vals, ok := sets[name]; ok && p.Type == "string" {
			p.Enum = make([]any, len(vals))
			for i, v := range vals {
				p.Enum[i] = v
			}
		}
		addEnums(p, sets)
	}
	addEnums(s.Items, sets)
}

// sharedText is the one explanation of the properties every tool has
// (Common), for the server's instructions and browser_status's
// description; the properties themselves carry a short description.
func sharedText(sel *browserbackend.Selector) string {
	return "Every browser tool takes three optional arguments. browser_mode chooses the browser: " + modesText(sel) + ". " +
		"auto (the default) tries the user's Chrome through the paired extension or desktop bridge, then a Chrome with a " +
		"debugging port (cdp-inspect), then a private Chromium (local), and fails over on connection errors; the other " +
		"values pin that one backend and never fall back, and when it is unavailable the error lists what was tried and " +
		"how to fix it. Omit it unless the user asked for a particular browser. " +
		fmt.Sprintf("timeout_ms is the deadline of the whole call, 0 to %d ms; 0 or omitted uses the tool's default "+
			"(navigate %d, wait_for %d, others %d). ", tools.MaxTimeout.Milliseconds(), tools.DefaultNavigateTimeout.Milliseconds(),
			tools.DefaultWaitTimeout.Milliseconds(), tools.DefaultActionTimeout.Milliseconds()) +
		"conversation_id names the conversation whose page or tab the call acts in; omit it, since each MCP session has " +
		"a conversation of its own, unless calls of several sessions must share one page."
}
