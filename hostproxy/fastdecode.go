package hostproxy

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// A result body or socket message is decoded by jsonv2 first, which parses
// an answer of tens of MB several times faster than encoding/json (whose
// scanner visits every byte twice, once to check and once to decode). The
// fast path takes only the plain shape clients send; anything else
// (a member of another type, a null, a duplicate or case-folded member
// name, invalid UTF-8, a syntax error) is decoded again by encoding/json,
// so what is accepted, and how, is exactly what json.Unmarshal does.

// errSlowPath is the fast path leaving a body to encoding/json.
var errSlowPath = errors.New("hostproxy: left to encoding/json")

// fastMessage is the fast path's view of one message: string members by
// name, the content literal (kept as a view of the input, not unescaped)
// and isError.
type fastMessage struct {
	strs    map[string]*string
	content *literal
	isError *bool
}

// UnmarshalJSONFrom implements jsonv2's UnmarshalerFrom. With
// jsonv2.Unmarshal on a []byte, values read are views of that input.
func (f fastMessage) UnmarshalJSONFrom(dec *jsonv2.Decoder) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != '{' {
		return errSlowPath
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return err
		}
		key := name.String()
		switch p, isStr := f.strs[key]; {
		case key == "content":
			v, err := dec.ReadValue()
			if err != nil {
				return err
			}
			if v.Kind() != '"' {
				return errSlowPath
			}
			*f.content = literal(v)
		case key == "isError":
			t, err := dec.ReadToken()
			if err != nil {
				return err
			}
			if k := t.Kind(); k != 't' && k != 'f' {
				return errSlowPath
			}
			*f.isError = t.Bool()
		case isStr:
			t, err := dec.ReadToken()
			if err != nil {
				return err
			}
			if t.Kind() != '"' {
				return errSlowPath
			}
			*p = t.String()
		default:
			if f.folds(key) {
				return errSlowPath // encoding/json matches names case-insensitively
			}
			if err := dec.SkipValue(); err != nil {
				return err
			}
		}
	}
	_, err = dec.ReadToken()
	return err
}

func (f fastMessage) folds(key string) bool {
	if strings.EqualFold(key, "content") || strings.EqualFold(key, "isError") {
		return true
	}
	for name := range f.strs {
		if strings.EqualFold(key, name) {
			return true
		}
	}
	return false
}

// decodeFast decodes data into f's members; false when it must be decoded
// by encoding/json instead (the members are then in an unspecified state).
func decodeFast(data []byte, f fastMessage) bool {
	return jsonv2.Unmarshal(data, &f) == nil
}

// validJSON is json.Valid, checked by jsonv2 first (several times faster on
// a large result); only what jsonv2 refuses is checked again by
// encoding/json, so the verdict is json.Valid's.
func validJSON(data []byte) bool {
	return jsonv2.Value(data).IsValid(jsonv2.AllowInvalidUTF8(true)) || json.Valid(data)
}
