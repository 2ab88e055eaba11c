package cdpinspect

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/browserchain/browserchain/internal/jsonfast"
)

// decodeFrame decodes one browser message into f. jsonv2 parses it first
// (internal/jsonfast): several times faster than encoding/json on a
// screenshot-sized reply, with params and result kept as views of data. A
// frame off the plain shape Chrome sends (an error object, a null, another
// type, a duplicate or case-folded name, invalid UTF-8, a syntax error) is
// decoded again by json.Unmarshal, so what is accepted, and how, is exactly
// json.Unmarshal's.
func decodeFrame(data []byte, f *frame) error {
	if jsonfast.Object(data, frameNames, f.member) {
		return nil
	}
	*f = frame{}
	return json.Unmarshal(data, f)
}

// frameNames are the members of a frame; "error" is among them so that a
// frame carrying one goes to encoding/json.
var frameNames = []string{"id", "method", "params", "sessionId", "result", "error"}

// member is decodeFrame's jsonfast.Member.
func (f *frame) member(name string, dec *jsonv2.Decoder) error {
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	switch name {
	case "id":
		id, err := strconv.ParseInt(string(v), 10, 64)
		if v.Kind() != '0' || err != nil {
			return jsonfast.ErrSlowPath
		}
		f.ID = id
	case "method", "sessionId":
		if v.Kind() != '"' || strings.IndexByte(string(v), '\\') >= 0 {
			return jsonfast.ErrSlowPath // escaped: left to encoding/json to unquote
		}
		s := string(v[1 : len(v)-1])
		if name == "method" {
			f.Method = s
		} else {
			f.SessionID = s
		}
	case "params":
		if v.Kind() == 'n' {
			return jsonfast.ErrSlowPath
		}
		f.Params = json.RawMessage(v) // a view of the frame, like result
	case "result":
		if v.Kind() == 'n' {
			return jsonfast.ErrSlowPath
		}
		f.Result = sharedRaw(v)
	default: // "error"
		return jsonfast.ErrSlowPath
	}
	return nil
}
