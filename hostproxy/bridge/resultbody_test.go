package bridge

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/hostproxy"
)

// readSmall reads r a few bytes at a time, so escapes straddle Read calls.
func readSmall(t testing.TB, r io.Reader, size int) []byte {
	var out []byte
	buf := make([]byte, size)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
	}
}

func checkResultBody(t testing.TB, id, content string, isErr bool) {
	want, err := json.Marshal(hostproxy.ResultBody{RequestID: id, Content: content, IsError: isErr})
	require.NoError(t, err)
	for _, size := range []int{1, 2, 5, 7, 4096} {
		b := newResultBody(id, content, isErr)
		assert.Equal(t, int64(len(want)), b.Len(), "Len of %q", content)
		assert.Equal(t, string(want), string(readSmall(t, b, size)), "read in %d-byte pieces", size)
	}
}

func TestResultBody_IsExactlyWhatJSONMarshalWrites(t *testing.T) {
	for _, c := range []string{
		"", `{"result":{"type":"number","value":2}}`, `{"data":"iVBORw0KGgo="}`,
		"quotes \" and \\ backslashes", "<script>&amp;</script>", "ctl \x00\x01\x1f\b\f\n\r\t end",
		"utf-8 é 漢字 🙂", "line sep \u2028 para sep \u2029", "bad utf-8 \xff\xfe and \xe2\x82",
		strings.Repeat("A", 100000),
	} {
		checkResultBody(t, "req-1", c, false)
		checkResultBody(t, `id "with" <quotes>`, c, true)
	}
}

func TestResultBody_PassesIOTestReader(t *testing.T) {
	c := `{"a":"<b>\n` + strings.Repeat("x", 3000) + "\u2028\xff\"}"
	want, _ := json.Marshal(hostproxy.ResultBody{RequestID: "r", Content: c})
	require.NoError(t, iotest.TestReader(newResultBody("r", c, false), want))
}

func FuzzResultBody(f *testing.F) {
	f.Add("r1", `{"x":1}`, false)
	f.Add("", "\xff\u2028<&>\"\\\x00", true)
	f.Fuzz(func(t *testing.T, id, content string, isErr bool) {
		checkResultBody(t, id, content, isErr)
	})
}
