package jsonfast_test

import (
	"encoding/json"
	"testing"

	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/stretchr/testify/assert"

	"github.com/browserchain/browserchain/internal/jsonfast"
)

func TestObjectTakesOnlyWhatEncodingJSONWouldReadTheSameWay(t *testing.T) {
	for _, tc := range []struct {
		data string
		ok   bool
		got  string // the "a" member's value, when ok
	}{
		{`{"a":"x","other":[1,{"b":2}]}`, true, `"x"`},
		{`{"other":null}`, true, ""},
		{`{"A":"x"}`, false, ""},         // encoding/json would match "a"
		{`{"a":"x","a":"y"}`, false, ""}, // duplicate name
		{`["a"]`, false, ""},
		{`{"a":"x"`, false, ""},
		{"{\"a\":\"\xff\"}", false, ""}, // invalid UTF-8
		{`{"a":null}`, false, ""},       // the member gives up
	} {
		var got string
		ok := jsonfast.Object([]byte(tc.data), []string{"a"}, func(name string, dec *jsonv2.Decoder) error {
			v, err := dec.ReadValue()
			if err != nil {
				return err
			}
			if v.Kind() == 'n' {
				return jsonfast.ErrSlowPath
			}
			got = string(v)
			return nil
		})
		assert.Equal(t, tc.ok, ok, tc.data)
		if tc.ok {
			assert.Equal(t, tc.got, got, tc.data)
		}
	}
}

func TestValidIsJSONValid(t *testing.T) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":}`, "\"\xff\"", `[1,2`, ` 1 `, ``} {
		assert.Equal(t, json.Valid([]byte(s)), jsonfast.Valid([]byte(s)), s)
	}
}
