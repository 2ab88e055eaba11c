package local

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEncodeResultIsByteForByteJSONMarshal: the presized encoding of a
// decoded result is exactly json.Marshal's, for the values playwright-go
// hands back (strings plain and not, numbers, booleans, nulls, nested maps
// and lists, empty and nil maps).
func TestEncodeResultIsByteForByteJSONMarshal(t *testing.T) {
	for name, v := range map[string]any{
		"screenshot": map[string]any{"data": strings.Repeat("iVBORw0KGgo+/=", 1000)},
		"mixed": map[string]any{
			"b": true, "n": 1.5, "z": nil, "s": `needs "escaping" \ <html> & ` + "\n\u2028é",
			"list": []any{"x", 2.0, map[string]any{"k": "v"}}, "obj": map[string]any{"result": map[string]any{"type": "number", "value": 2.0}},
			"empty": "", "": "empty key", "ké\"y": "v",
		},
		"empty map": map[string]any{},
		"nil map":   map[string]any(nil),
		"not a map": []any{"a"},
		"string":    "s",
	} {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(v)
			require.NoError(t, err)
			got, err := encodeResult(v)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got))
		})
	}
}

// TestEncodeResultRefusesWhatJSONMarshalRefuses: a value json.Marshal
// cannot encode is an error, not a partial result.
func TestEncodeResultRefusesWhatJSONMarshalRefuses(t *testing.T) {
	_, err := encodeResult(map[string]any{"f": func() {}})
	assert.Error(t, err)
}
