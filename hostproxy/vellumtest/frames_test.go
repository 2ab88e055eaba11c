package vellumtest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadFrames_AsTheExtensionsParser: the frames the real extension acts
// on, and the ones it silently drops.
func TestReadFrames_AsTheExtensionsParser(t *testing.T) {
	in := ": heartbeat\n\n" +
		"event: assistant_event\nid: 1\ndata: {\"a\":1}\n\n" +
		"data: {\"b\":\ndata: 2}\n\n" +
		"data:{\"nospace\":1}\n\n" +
		"data\n\n" +
		"data: {\"tail\":1}" // no blank line yet: not a frame
	var got []string
	require.NoError(t, readFrames(strings.NewReader(in), func(d string) { got = append(got, d) }))
	assert.Equal(t, []string{`{"a":1}`, "{\"b\":\n2}", ""}, got)
}
