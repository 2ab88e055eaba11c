package hostproxy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ownedBody encodes a result body whose content is content, as a client
// does (json.Marshal), into a buffer of its own.
func ownedBody(t testing.TB, content string) []byte {
	data, err := json.Marshal(ResultBody{RequestID: "r1", Content: content})
	require.NoError(t, err)
	return data
}

// TestALargeContentDecodedInItsBufferIsWhatJSONUnmarshalGives: a large
// content (a screenshot's JSON) is unescaped over the body it came in, and
// the text is exactly what json.Unmarshal decodes, escapes of every kind
// included; small contents are copied as before.
func TestALargeContentDecodedInItsBufferIsWhatJSONUnmarshalGives(t *testing.T) {
	pad := strings.Repeat("iVBORw0KGgo+/=", inPlaceMin/14+1)
	p := &Proxy{}
	for name, content := range map[string]string{
		"base64 only":          `{"data":"` + pad + `"}`,
		"quotes and backslash": `{"data":"` + pad + `","s":"a \"q\" \\ b"}`,
		"control characters":   "{\"t\":\"line\\n\\ttab\\r\\b\\f\x01\"," + `"data":"` + pad + `"}`,
		"html escapes":         `{"h":"<a href='x'>&amp;</a>","data":"` + pad + `"}`,
		"non-ASCII":            `{"t":"été – 日本 😀","data":"` + pad + `"}`,
		"line separators":      "{\"t\":\"a\u2028b\u2029c\",\"data\":\"" + pad + "\"}",
		"small":                `{"a":1}`,
		"empty":                ``,
	} {
		t.Run(name, func(t *testing.T) {
			data := ownedBody(t, content)
			want, err := DecodeResult(data)
			require.NoError(t, err)
			got, err := p.decodeResultOwned(ownedBody(t, content))
			require.NoError(t, err)
			assert.Equal(t, len(content) >= inPlaceMin, got.esc != nil, "left escaped only when large")
			got.resolve()
			assert.Nil(t, got.esc)
			assert.Equal(t, want, got)
			assert.Equal(t, content, got.Content)
		})
	}
}

// TestUnquoteInPlaceHandlesEscapesJSONMarshalNeverWrites: literals another
// encoder may send (\/, \u escapes of ASCII, upper-case hex, surrogate
// pairs, unpaired surrogates) decode as json.Unmarshal decodes them.
func TestUnquoteInPlaceHandlesEscapesJSONMarshalNeverWrites(t *testing.T) {
	for _, lit := range []string{
		`""`, `"\/"`, `"a\u0041\u00E9b"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\ude00\ud83d"`,
		`"\ud83d\u0041"`, `"x\\\"\/\b\f\n\r\t"`, `"plain"`,
	} {
		var want string
		require.NoError(t, json.Unmarshal([]byte(lit), &want), lit)
		got := unquoteInPlace([]byte(lit))
		assert.Equal(t, want, string(got), lit)
	}
}

// TestAnOversizedContentThatIsNotAStringIsRefused: content must be a JSON
// string whatever its size; a large object is a malformed body, as
// DecodeResult says.
func TestAnOversizedContentThatIsNotAStringIsRefused(t *testing.T) {
	data := []byte(`{"requestId":"r1","content":{"data":"` + strings.Repeat("A", inPlaceMin) + `"}}`)
	_, want := DecodeResult(data)
	require.Error(t, want)
	_, err := (&Proxy{}).decodeResultOwned(data)
	require.Error(t, err)
}

func FuzzUnquoteInPlace(f *testing.F) {
	f.Add(`{"data":"abc\n\u00e9\ud83d\ude00"}`)
	f.Fuzz(func(t *testing.T, content string) {
		data := ownedBody(t, content)
		var w struct {
			Content literal `json:"content"`
		}
		require.NoError(t, json.Unmarshal(data, &w))
		want, err := DecodeResult(data)
		require.NoError(t, err)
		b := ResultBody{}
		if lit := []byte(w.Content); lit[0] == '"' && jsonValidUTF8(lit) {
			b.esc = &escapedContent{lit: lit}
			b.resolve()
		} else {
			b.Content = want.Content
		}
		if b.Content != want.Content {
			t.Fatalf("in place %q, json.Unmarshal %q", b.Content, want.Content)
		}
	})
}

func jsonValidUTF8(b []byte) bool { return strings.ToValidUTF8(string(b), "\uFFFD") == string(b) }

// TestTheFastResultDecoderAgreesWithJSONUnmarshal: bodies off the plain
// shape (case-folded or duplicate names, nulls, other types, unknown
// members, invalid UTF-8, trailing data) are accepted or refused, and
// decoded, exactly as json.Unmarshal does, on the route and the socket.
func TestTheFastResultDecoderAgreesWithJSONUnmarshal(t *testing.T) {
	big := `"` + strings.Repeat("A", inPlaceMin) + `"`
	p := &Proxy{}
	for _, body := range []string{
		`{"requestId":"r1","content":"{}","isError":false}`,
		`{"RequestID":"r1","Content":"{}","ISERROR":true}`,
		`{"requestId":"r1","requestId":"r2","content":"{}"}`,
		`{"requestId":"r1","content":null,"isError":null}`,
		`{"requestId":null,"content":"{}"}`,
		`{"requestId":"r1","content":{"a":1}}`,
		`{"requestId":"r1","content":"{}","isError":"yes"}`,
		`{"requestId":"r1","content":"{}","durationMs":1.5,"x":[{"y":null}]}`,
		"{\"requestId\":\"r\xff1\",\"content\":\"{}\"}",
		`{"requestId":"r1","content":"{}"} x`,
		`{"requestId":"r1","content":` + big + `}`,
		`{"requestId":"r1","content":` + big + `,"content":"{}"}`,
		`{"requestId":"r1","Content":` + big + `}`,
		`["requestId"]`,
		`{"requestId":"r1","content":"{}"`,
	} {
		want, wantErr := DecodeResult([]byte(body))
		got, err := p.decodeResultOwned([]byte(body))
		got.resolve()
		assert.Equal(t, wantErr != nil, err != nil, "route %s: %v / %v", body, wantErr, err)
		assert.Equal(t, want, got, "route %s", body)

		var wantMsg socketMessage
		wantErr = json.Unmarshal([]byte(body), &wantMsg)
		gotMsg, err := decodeSocketMessage([]byte(body))
		gotMsg.resolve()
		assert.Equal(t, wantErr != nil, err != nil, "socket %s: %v / %v", body, wantErr, err)
		if wantErr == nil {
			assert.Equal(t, wantMsg, gotMsg, "socket %s", body)
		}
	}
}

// TestValidJSONIsJSONValid: the fast check gives json.Valid's verdict,
// invalid UTF-8 and duplicate names included.
func TestValidJSONIsJSONValid(t *testing.T) {
	for _, s := range []string{`{}`, `{"a":1,"a":2}`, "\"\xff\"", `{"a":}`, `[1,2`, ` 1 `, `"\ud800"`, `nul`, ``} {
		assert.Equal(t, json.Valid([]byte(s)), validJSON([]byte(s)), s)
	}
}

// TestPlainBodiesTakeTheFastPath: the bodies and socket messages clients
// send are decoded by jsonv2, not handed to encoding/json.
func TestPlainBodiesTakeTheFastPath(t *testing.T) {
	var id, typ, content string
	var lit literal
	var isErr bool
	for _, data := range []string{
		`{"requestId":"r1","content":"{\"data\":\"iVBOR\"}","isError":false}`,
		`{"type":"result","requestId":"r1","content":"{}","isError":true,"durationMs":1.5,"handledMs":2}`,
	} {
		assert.True(t, decodeFast([]byte(data), fastMessage{strs: map[string]*string{"requestId": &id, "type": &typ},
			content: &lit, isError: &isErr}), data)
		require.NoError(t, json.Unmarshal(lit, &content))
	}
	assert.Equal(t, "r1", id)
	assert.Equal(t, "{}", content)
	assert.True(t, isErr)
}
