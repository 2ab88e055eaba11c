package cdpinspect

import (
	"encoding/json"
	"strings"
	"testing"
	"unsafe"

	"github.com/browserchain/browserchain/internal/jsonfast"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDecodeFrameAgreesWithJSONUnmarshal: every frame, on the plain shape
// or off it (errors, nulls, escapes, duplicate or case-folded names, other
// types, invalid UTF-8, syntax errors), decodes as json.Unmarshal decodes
// it, or fails as it fails.
func TestDecodeFrameAgreesWithJSONUnmarshal(t *testing.T) {
	for _, data := range []string{
		`{"id":7,"result":{"data":"iVBOR"},"sessionId":"S1"}`,
		`{"method":"Page.loadEventFired","params":{"timestamp":1.5},"sessionId":"S1"}`,
		`{"id":7,"error":{"code":-32601,"message":"'Foo.bar' wasn't found"}}`,
		`{"id":7,"result":null}`,
		`{"id":7,"result":{}, "extra":[1,{"a":null}]}`,
		`{"ID":7,"Result":{"x":1}}`,
		`{"id":7,"id":8,"result":{}}`,
		`{"id":"7","result":{}}`,
		`{"id":7.5,"result":{}}`,
		`{"id":1e2,"result":{}}`,
		`{"method":"A.b\u0041","params":{}}`,
		"{\"method\":\"A.\xffb\",\"params\":{}}",
		`{"id":7,"result":{}`,
		`[1]`,
		`{"id":7,"result":{}} {}`,
	} {
		var want frame
		wantErr := json.Unmarshal([]byte(data), &want)
		var got frame
		err := decodeFrame([]byte(data), &got)
		assert.Equal(t, wantErr != nil, err != nil, "%s: %v / %v", data, wantErr, err)
		if wantErr == nil {
			assert.Equal(t, want, got, data)
		}
	}
}

// TestAReplyResultSharesItsFrame: a reply's result is a view of the frame
// it came in, not a copy (a screenshot answer is held once).
func TestAReplyResultSharesItsFrame(t *testing.T) {
	data := []byte(`{"id":3,"result":{"data":"` + strings.Repeat("A", 1<<20) + `"}}`)
	var f frame
	require.NoError(t, decodeFrame(data, &f))
	start := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(f.Result)))
	assert.True(t, at >= start && at < start+uintptr(len(data)), "the result points into the frame")
	assert.Equal(t, `{"data":"`+strings.Repeat("A", 1<<20)+`"}`, string(f.Result))
}

// TestPlainFramesTakeTheFastPath: the frames Chrome sends for replies and
// events are decoded by jsonv2, not handed to encoding/json.
func TestPlainFramesTakeTheFastPath(t *testing.T) {
	for _, data := range []string{
		`{"id":7,"result":{"data":"iVBOR"},"sessionId":"S1"}`,
		`{"method":"Page.loadEventFired","params":{"timestamp":1.5},"sessionId":"S1"}`,
		`{"id":8,"result":{}}`,
	} {
		var f frame
		assert.True(t, jsonfast.Object([]byte(data), frameNames, f.member), data)
	}
}
