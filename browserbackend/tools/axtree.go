package tools

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
)

// axTree is the result of Accessibility.getFullAXTree reduced to what the
// snapshot renders. It decodes itself from the token stream
// (jsonv2.UnmarshalerFrom): the properties, sources and ignored reasons that
// make up most of the answer are skipped without being built, and every
// node's child ids go into one shared slice.
type axTree struct {
	nodes []axNode
	// kids holds the child ids of every node; node i's are
	// kids[nodes[i].kid0 : nodes[i].kid0+nodes[i].nkids].
	kids []int64
}

// axNode is one node of an axTree. Ids are the protocol's numeric string
// ids parsed into integers.
type axNode struct {
	id, parent  int64
	hasParent   bool
	ignored     bool
	role, name  string
	value       string
	backend     cdp.BackendNodeID
	kid0, nkids int32
}

var errAXShape = errors.New("tools: unexpected shape of Accessibility.getFullAXTree")

// UnmarshalJSONFrom decodes {"nodes":[…]}; unknown members are skipped.
func (t *axTree) UnmarshalJSONFrom(d *jsonv2.Decoder) error {
	if err := expectDelim(d, '{'); err != nil {
		return err
	}
	for d.PeekKind() != '}' {
		name, err := d.ReadValue()
		if err != nil {
			return err
		}
		if string(name) != `"nodes"` || d.PeekKind() != '[' {
			if err := d.SkipValue(); err != nil {
				return err
			}
			continue
		}
		if _, err := d.ReadToken(); err != nil {
			return err
		}
		for d.PeekKind() != ']' {
			if err := t.readNode(d); err != nil {
				return err
			}
		}
		if _, err := d.ReadToken(); err != nil {
			return err
		}
	}
	_, err := d.ReadToken()
	return err
}

func expectDelim(d *jsonv2.Decoder, k byte) error {
	if byte(d.PeekKind()) != k {
		return errAXShape
	}
	_, err := d.ReadToken()
	return err
}

func (t *axTree) readNode(d *jsonv2.Decoder) error {
	if err := expectDelim(d, '{'); err != nil {
		return err
	}
	n := axNode{kid0: int32(len(t.kids))}
	for d.PeekKind() != '}' {
		name, err := d.ReadValue()
		if err != nil {
			return err
		}
		switch string(name) {
		case `"nodeId"`:
			n.id, err = readID(d)
		case `"parentId"`:
			n.parent, err = readID(d)
			n.hasParent = err == nil
		case `"ignored"`:
			var v []byte
			if v, err = d.ReadValue(); err == nil {
				n.ignored = string(v) == "true"
			}
		case `"role"`:
			n.role, err = readAXValue(d, true)
		case `"name"`:
			n.name, err = readAXValue(d, false)
		case `"value"`:
			n.value, err = readAXValue(d, false)
		case `"backendDOMNodeId"`:
			var v []byte
			if v, err = d.ReadValue(); err == nil {
				var id int64
				id, err = strconv.ParseInt(string(v), 10, 64)
				n.backend = cdp.BackendNodeID(id)
			}
		case `"childIds"`:
			if err = expectDelim(d, '['); err != nil {
				return err
			}
			for d.PeekKind() != ']' {
				var id int64
				if id, err = readID(d); err != nil {
					return err
				}
				t.kids = append(t.kids, id)
			}
			_, err = d.ReadToken()
		default:
			err = d.SkipValue()
		}
		if err != nil {
			return err
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	n.nkids = int32(len(t.kids)) - n.kid0
	t.nodes = append(t.nodes, n)
	return nil
}

// readID reads a node id: the protocol sends a string of digits
// (AXNodeId), sometimes negative.
func readID(d *jsonv2.Decoder) (int64, error) {
	v, err := d.ReadValue()
	if err != nil {
		return 0, err
	}
	v = bytes.Trim(v, `"`)
	id, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: node id %q", errAXShape, v)
	}
	return id, nil
}

// readAXValue reads an AXValue object ({"type":…,"value":…,…}) and returns
// its value as text: a string with its white space collapsed, a number or a
// boolean as written, "" for null or absent. role interns the common role
// names so they are not allocated per node.
func readAXValue(d *jsonv2.Decoder, role bool) (string, error) {
	if d.PeekKind() != '{' {
		return "", d.SkipValue()
	}
	if _, err := d.ReadToken(); err != nil {
		return "", err
	}
	var out string
	for d.PeekKind() != '}' {
		name, err := d.ReadValue()
		if err != nil {
			return "", err
		}
		if string(name) != `"value"` {
			if err := d.SkipValue(); err != nil {
				return "", err
			}
			continue
		}
		v, err := d.ReadValue()
		if err != nil {
			return "", err
		}
		out = axValueText(v, role)
	}
	_, err := d.ReadToken()
	return out, err
}

// roleNames interns the roles Chromium reports most.
var roleNames = func() map[string]string {
	m := map[string]string{}
	for _, r := range strings.Fields("StaticText InlineTextBox LineBreak generic none presentation GenericContainer " +
		"RootWebArea WebArea paragraph heading link button textbox row cell gridcell table rowgroup columnheader " +
		"rowheader list listitem ListMarker img image navigation main article section banner contentinfo " +
		"complementary region form group checkbox radio combobox option menuitem LabelText Iframe iframe " +
		"strong emphasis separator code Section time blockquote figure term definition") {
		m[r] = r
	}
	return m
}()

func axValueText(v []byte, role bool) string {
	switch {
	case len(v) == 0 || string(v) == "null":
		return ""
	case v[0] == '"':
		inner := v[1 : len(v)-1]
		if role {
			if r, ok := roleNames[string(inner)]; ok {
				return r
			}
		}
		if bytes.IndexByte(inner, '\\') >= 0 {
			var u string
			if jsonv2.Unmarshal(v, &u) != nil {
				return ""
			}
			inner = []byte(u)
		}
		return collapseSpace(inner)
	case v[0] == 't' || v[0] == 'f':
		return string(v)
	case v[0] == '-' || (v[0] >= '0' && v[0] <= '9'):
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return string(v)
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	default:
		return string(v)
	}
}

// collapseSpace returns b with leading and trailing white space removed and
// every inner run of it replaced by one space (strings.Fields joined by
// " "), copying once.
func collapseSpace(b []byte) string {
	clean := true
	prevSpace := true
	for i := 0; i < len(b); {
		r, size := rune(b[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(b[i:])
		}
		sp := unicode.IsSpace(r)
		if sp && (prevSpace || r != ' ') {
			clean = false
			break
		}
		prevSpace = sp
		i += size
	}
	if clean && !prevSpace {
		return string(b)
	}
	if clean && len(b) == 0 {
		return ""
	}
	return strings.Join(strings.Fields(string(b)), " ")
}
