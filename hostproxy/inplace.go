package hostproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// inPlaceMin is the smallest escaped content decoded in the received buffer
// itself; a smaller one is copied as json.Unmarshal does, so a result socket
// keeps reusing its read buffer for ordinary results.
const inPlaceMin = 64 << 10

// escapedContent is a result's content still in its JSON-escaped form,
// inside the buffer the body or message was read into. resolve turns it
// into ResultBody.Content by unescaping it over its own bytes: a screenshot
// answer (tens of MB) is then held once, where json.Unmarshal would allocate
// the decoded string twice (an unescape buffer, then the string).
type escapedContent struct {
	lit []byte // the string literal, quotes included; valid UTF-8
}

// literal records the raw bytes of a JSON value without copying them: with
// json.Unmarshal they are a sub-slice of the input.
type literal []byte

func (l *literal) UnmarshalJSON(data []byte) error {
	*l = data
	return nil
}

// decodeResultOwned is DecodeResult for a body this Proxy owns (nothing else
// reads or writes it while the result is handled, and it is not reused
// after the result was delivered): a large content is left escaped in data
// and unescaped over it by resolve, after Options.OnResult saw the body as
// received. A result relayed to another replica is unescaped the same way
// before it leaves (acceptResult): the relay sends the content's bytes as
// they are.
func (p *Proxy) decodeResultOwned(data []byte) (ResultBody, error) {
	type wire struct {
		RequestID string  `json:"requestId"`
		Content   literal `json:"content"`
		IsError   bool    `json:"isError"`
	}
	var w wire
	if !decodeFast(data, fastMessage{strs: map[string]*string{"requestId": &w.RequestID}, content: &w.Content, isError: &w.IsError}) {
		w = wire{}
		if err := decodeStrict(data, &w); err != nil {
			return ResultBody{}, fmt.Errorf("hostproxy: malformed result body: %w", err)
		}
	}
	if w.RequestID == "" {
		return ResultBody{}, ErrNoRequestID
	}
	b, err := contentOf(w.Content)
	if err != nil {
		return ResultBody{}, fmt.Errorf("hostproxy: malformed result body: %w", err)
	}
	b.RequestID, b.IsError = w.RequestID, w.IsError
	return b, nil
}

// contentOf returns a body whose content is lit, a JSON value: left escaped
// when it is a large string of valid UTF-8, else decoded as json.Unmarshal
// decodes it into a string (null leaves it empty; another type is an error).
func contentOf(lit literal) (ResultBody, error) {
	if len(lit) >= inPlaceMin && lit[0] == '"' && utf8.Valid(lit) {
		return ResultBody{esc: &escapedContent{lit: lit}}, nil
	}
	var b ResultBody
	if len(lit) > 0 {
		if err := json.Unmarshal(lit, &b.Content); err != nil {
			return ResultBody{}, err
		}
	}
	return b, nil
}

// resolve unescapes a content left escaped by decodeResultOwned into
// Content. It does nothing for a body decoded otherwise.
func (b *ResultBody) resolve() {
	if b.esc == nil {
		return
	}
	s := unquoteInPlace(b.esc.lit)
	b.Content = unsafe.String(unsafe.SliceData(s), len(s))
	b.esc = nil
}

// errLiteral is what unquoteInPlace panics with on a literal it was not
// meant to see (json.Unmarshal checked it first); never seen by callers.
var errLiteral = errors.New("hostproxy: not a checked JSON string literal")

// unquoteInPlace decodes lit, a JSON string literal (quotes included) that
// json.Unmarshal already checked and that is valid UTF-8, over its own
// bytes and returns the decoded prefix. The result is what json.Unmarshal
// gives for the literal (an unpaired surrogate escape becomes U+FFFD). No
// write overtakes the read: every escape is longer than what it decodes to
// and the opening quote is dropped.
func unquoteInPlace(lit []byte) []byte {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		panic(errLiteral)
	}
	src := lit[1 : len(lit)-1] // src[r] is lit[r+1]
	w := 0
	for r := 0; r < len(src); {
		if src[r] != '\\' {
			n := bytes.IndexByte(src[r:], '\\')
			if n < 0 {
				n = len(src) - r
			}
			w += copy(lit[w:], src[r:r+n])
			r += n
			continue
		}
		if r+1 >= len(src) {
			panic(errLiteral)
		}
		switch c := src[r+1]; c {
		case '"', '\\', '/':
			lit[w] = c
		case 'b':
			lit[w] = '\b'
		case 'f':
			lit[w] = '\f'
		case 'n':
			lit[w] = '\n'
		case 'r':
			lit[w] = '\r'
		case 't':
			lit[w] = '\t'
		case 'u':
			rr := hex4(src[r:])
			r += 6
			if utf16.IsSurrogate(rr) {
				if dec := utf16.DecodeRune(rr, hex4(src[r:])); dec != unicode.ReplacementChar {
					r += 6
					w += utf8.EncodeRune(lit[w:], dec)
					continue
				}
				rr = unicode.ReplacementChar
			}
			w += utf8.EncodeRune(lit[w:], rr)
			continue
		default:
			panic(errLiteral)
		}
		w++
		r += 2
	}
	return lit[:w]
}

// hex4 decodes the \uXXXX escape at the start of s, or returns -1.
func hex4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
