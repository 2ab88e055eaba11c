package local

import (
	"encoding/json"
	"slices"
)

// encodeResult returns json.Marshal(v), byte for byte, for the decoded
// result playwright-go hands back (a map[string]any). A map's string
// values that need no escaping (a screenshot's base64 data, most of all)
// are copied once into an output of the exact size, where json.Marshal
// grows a buffer by doubling and then copies it out (about three times a
// large result allocated instead of once). Other values go through
// json.Marshal one by one.
func encodeResult(v any) ([]byte, error) {
	m, ok := v.(map[string]any)
	if !ok || m == nil {
		return json.Marshal(v)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	type part struct {
		key   []byte
		plain string // a string value copied between quotes
		enc   []byte // any other value, encoded
	}
	parts := make([]part, len(keys))
	n := 2 + max(len(keys)-1, 0) // braces and commas
	for i, k := range keys {
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		parts[i].key = kb
		n += len(kb) + 1
		if s, ok := m[k].(string); ok && plainJSON(s) {
			parts[i].plain = s
			n += len(s) + 2
			continue
		}
		vb, err := json.Marshal(m[k])
		if err != nil {
			return nil, err
		}
		parts[i].enc = vb
		n += len(vb)
	}
	out := make([]byte, 0, n)
	out = append(out, '{')
	for i, p := range parts {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, p.key...)
		out = append(out, ':')
		if p.enc != nil {
			out = append(out, p.enc...)
			continue
		}
		out = append(out, '"')
		out = append(out, p.plain...)
		out = append(out, '"')
	}
	out = append(out, '}')
	return out, nil
}

// plainJSON reports whether json.Marshal writes s between quotes as it is:
// printable ASCII other than the quote, the backslash and the three
// characters it escapes for HTML.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}
