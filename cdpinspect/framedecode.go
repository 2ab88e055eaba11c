package cdpinspect

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// decodeFrame decodes one browser message into f. jsonv2 parses it first:
// several times faster than encoding/json on a screenshot-sized reply
// (whose scanner visits every byte twice), with params and result kept as
// views of data. A frame off the plain shape Chrome sends (an error
// object, a null, another type, a duplicate or case-folded name, invalid
// UTF-8, a syntax error) is decoded again by json.Unmarshal, so what is
// accepted, and how, is exactly json.Unmarshal's.
func decodeFrame(data []byte, f *frame) error {
	if decodeFrameFast(data, f) {
		return nil
	}
	*f = frame{}
	return json.Unmarshal(data, f)
}

// decodeFrameFast is the jsonv2 path of decodeFrame; false leaves the frame
// to encoding/json (f is then in an unspecified state).
func decodeFrameFast(data []byte, f *frame) bool {
	return jsonv2.Unmarshal(data, &fastFrame{f}) == nil
}

// errSlowPath is the fast path leaving a frame to encoding/json.
var errSlowPath = errors.New("cdpinspect: left to encoding/json")

// fastFrame is the fast path's view of a frame.
type fastFrame struct{ f *frame }

var frameNames = []string{"id", "method", "params", "sessionId", "result", "error"}

// UnmarshalJSONFrom implements jsonv2's UnmarshalerFrom. With
// jsonv2.Unmarshal on a []byte, values read are views of that input.
func (ff fastFrame) UnmarshalJSONFrom(dec *jsonv2.Decoder) error {
	f := ff.f
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
		key := name.String() // before the next read voids the token
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		switch key {
		case "id":
			id, err := strconv.ParseInt(string(v), 10, 64)
			if v.Kind() != '0' || err != nil {
				return errSlowPath
			}
			f.ID = id
		case "method", "sessionId":
			if v.Kind() != '"' || strings.IndexByte(string(v), '\\') >= 0 {
				return errSlowPath // escaped: left to encoding/json to unquote
			}
			s := string(v[1 : len(v)-1])
			if key == "method" {
				f.Method = s
			} else {
				f.SessionID = s
			}
		case "params", "result":
			if v.Kind() == 'n' {
				return errSlowPath
			}
			if key == "params" {
				f.Params = json.RawMessage(v) // a view of the frame, like result
			} else {
				f.Result = sharedRaw(v)
			}
		default:
			for _, n := range frameNames {
				if strings.EqualFold(key, n) {
					return errSlowPath // "error", or a name encoding/json would fold
				}
			}
		}
	}
	_, err = dec.ReadToken()
	return err
}
