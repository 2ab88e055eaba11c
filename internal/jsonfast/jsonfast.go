// Package jsonfast walks the members of a JSON object with jsonv2, the
// parser behind the fast paths of cdpinspect's frame decoding and
// hostproxy's result decoding.
//
// jsonv2 parses a message of tens of MB several times faster than
// encoding/json, whose scanner visits every byte twice. A fast path built on
// Object takes only the plain shape a peer sends; when Object reports false
// the caller decodes the same bytes again with encoding/json, so what is
// accepted, and how, stays exactly what json.Unmarshal does.
package jsonfast

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// ErrSlowPath is returned by a member func to leave the whole message to
// encoding/json (a value of another type, a null, an escape it does not
// unquote).
var ErrSlowPath = errors.New("jsonfast: left to encoding/json")

// Member reads the value of the member called name from dec (a value read
// with ReadValue or ReadToken is a view of the input and stays valid after
// Object returns; the token's name is already consumed). It returns
// ErrSlowPath, or the decoder's error, to give up.
type Member func(name string, dec *jsonv2.Decoder) error

// Object decodes data, which must be one JSON object, calling member for
// each member whose name is exactly one of names, in input order, and
// skipping the others. It reports false — the caller must then use
// encoding/json — when data is not an object, is not valid JSON (or not
// UTF-8), has a duplicate member name, has a name that equals one of names
// only case-insensitively (encoding/json would match it), or member gave
// up. Members already read are then in an unspecified state. Safe for
// concurrent use (it keeps no state).
func Object(data []byte, names []string, member Member) bool {
	return jsonv2.Unmarshal(data, &walker{names, member}) == nil
}

type walker struct {
	names  []string
	member Member
}

// UnmarshalJSONFrom implements jsonv2's UnmarshalerFrom. Called through
// jsonv2.Unmarshal on a []byte, the values it reads are views of that
// input.
func (w walker) UnmarshalJSONFrom(dec *jsonv2.Decoder) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != '{' {
		return ErrSlowPath
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		name := tok.String() // before the next read voids the token
		switch w.match(name) {
		case exact:
			err = w.member(name, dec)
		case folded:
			err = ErrSlowPath
		default:
			err = dec.SkipValue()
		}
		if err != nil {
			return err
		}
	}
	_, err = dec.ReadToken()
	return err
}

type matchKind int

const (
	none matchKind = iota
	exact
	folded
)

func (w walker) match(name string) matchKind {
	m := none
	for _, n := range w.names {
		if n == name {
			return exact
		}
		if strings.EqualFold(n, name) {
			m = folded
		}
	}
	return m
}

// Valid is json.Valid, checked by jsonv2 first (several times faster on a
// large document); only what jsonv2 refuses is checked again by
// encoding/json, so the verdict is json.Valid's.
func Valid(data []byte) bool {
	return jsonv2.Value(data).IsValid(jsonv2.AllowInvalidUTF8(true)) || json.Valid(data)
}
