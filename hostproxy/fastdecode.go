package hostproxy

import (
	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/browserchain/browserchain/internal/jsonfast"
)

// A result body or socket message is decoded by jsonv2 first
// (internal/jsonfast), which parses an answer of tens of MB several times
// faster than encoding/json. The fast path takes only the plain shape
// clients send; anything else (a member of another type, a null, a
// duplicate or case-folded member name, invalid UTF-8, a syntax error) is
// decoded again by encoding/json, so what is accepted, and how, is exactly
// what json.Unmarshal does.

// fastMessage is the fast path's view of one message: string members by
// name, the content literal (kept as a view of the input, not unescaped)
// and isError.
type fastMessage struct {
	strs    map[string]*string
	content *literal
	isError *bool
	// slow are member names the fast path does not take: a message with
	// one of them (exactly or case-folded) goes to encoding/json.
	slow []string
}

// member is decodeFast's jsonfast.Member.
func (f fastMessage) member(name string, dec *jsonv2.Decoder) error {
	switch name {
	case "content":
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		if v.Kind() != '"' {
			return jsonfast.ErrSlowPath
		}
		*f.content = literal(v)
	case "isError":
		t, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if k := t.Kind(); k != 't' && k != 'f' {
			return jsonfast.ErrSlowPath
		}
		*f.isError = t.Bool()
	default:
		p, ok := f.strs[name]
		if !ok {
			return jsonfast.ErrSlowPath // one of slow
		}
		t, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if t.Kind() != '"' {
			return jsonfast.ErrSlowPath
		}
		*p = t.String()
	}
	return nil
}

// decodeFast decodes data into f's members; false when it must be decoded
// by encoding/json instead (the members are then in an unspecified state).
func decodeFast(data []byte, f fastMessage) bool {
	names := make([]string, 0, len(f.strs)+len(f.slow)+2)
	names = append(names, "content", "isError")
	names = append(names, f.slow...)
	for n := range f.strs {
		names = append(names, n)
	}
	return jsonfast.Object(data, names, f.member)
}

// validJSON is jsonfast.Valid: json.Valid's verdict, found faster.
var validJSON = jsonfast.Valid
