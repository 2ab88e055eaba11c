package bridge

import (
	"encoding/json"
	"io"
	"strconv"
	"unicode/utf8"
)

// resultBody is the body of POST /v1/host-browser-result,
// {"requestId":…,"content":…,"isError":…}, produced as it is read: the
// content (a screenshot's JSON can be tens of MB) is escaped straight into
// the transport's buffer instead of into a growing copy first, as
// json.Marshal would. The bytes are those json.Marshal produces for
// hostproxy.ResultBody (HTML-safe escaping, invalid UTF-8 as U+FFFD), and
// Len tells their count in advance so the request carries a Content-Length
// and the server can size its buffer once.
type resultBody struct {
	head, tail string // encoded JSON before and after the content string
	content    string
	pos        int    // next byte of content to escape
	runEnd     int    // end of the current run of bytes that need no escaping
	stage      int    // 0 head, 1 content, 2 tail, 3 done
	off        int    // read offset within head or tail
	pend       []byte // escape bytes that did not fit the last Read
	buf        [6]byte
}

func newResultBody(requestID, content string, isError bool) *resultBody {
	id, _ := json.Marshal(requestID)
	return &resultBody{
		head:    `{"requestId":` + string(id) + `,"content":"`,
		tail:    `","isError":` + strconv.FormatBool(isError) + `}`,
		content: content,
	}
}

// Len is the body's length in bytes.
func (r *resultBody) Len() int64 {
	n := int64(len(r.head) + len(r.tail))
	for i := 0; i < len(r.content); {
		e, size := escape(r.content, i, nil)
		if e == nil {
			n += int64(size)
		} else {
			n += int64(len(e))
		}
		i += size
	}
	return n
}

// Read implements io.Reader.
func (r *resultBody) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		switch r.stage {
		case 0, 2:
			s := r.head
			if r.stage == 2 {
				s = r.tail
			}
			c := copy(p[n:], s[r.off:])
			n += c
			r.off += c
			if r.off == len(s) {
				r.stage++
				r.off = 0
			}
		case 1:
			if len(r.pend) > 0 {
				c := copy(p[n:], r.pend)
				n += c
				r.pend = r.pend[c:]
				continue
			}
			if r.pos < r.runEnd { // copied as is, possibly across Reads
				c := copy(p[n:], r.content[r.pos:r.runEnd])
				n += c
				r.pos += c
				continue
			}
			if r.pos == len(r.content) {
				r.stage = 2
				continue
			}
			e, size := escape(r.content, r.pos, r.buf[:0])
			if e == nil {
				r.runEnd = r.pos + size
				continue
			}
			r.pos += size
			c := copy(p[n:], e)
			n += c
			r.pend = e[c:]
		default:
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		}
	}
	return n, nil
}

const hexDigits = "0123456789abcdef"

// plainASCII marks the ASCII bytes JSON carries as they are (json.Marshal's
// HTML-safe set); bytes from 0x80 up are false and take the UTF-8 path.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// escape looks at s[i:]. For a run of bytes that JSON carries as they are it
// returns nil and the run's length; otherwise the escaped form of the next
// character (appended to dst) and that character's size in s.
func escape(s string, i int, dst []byte) ([]byte, int) {
	j := i
	for j < len(s) {
		c := s[j]
		if c < utf8.RuneSelf {
			if !plainASCII[c] {
				break
			}
			j++
			for j < len(s) && plainASCII[s[j]] { // the common case, one lookup a byte
				j++
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[j:])
		if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
			break
		}
		j += size
	}
	if j > i {
		return nil, j - i
	}
	c := s[i]
	if c < utf8.RuneSelf {
		switch c {
		case '"', '\\':
			return append(dst, '\\', c), 1
		case '\b':
			return append(dst, '\\', 'b'), 1
		case '\f':
			return append(dst, '\\', 'f'), 1
		case '\n':
			return append(dst, '\\', 'n'), 1
		case '\r':
			return append(dst, '\\', 'r'), 1
		case '\t':
			return append(dst, '\\', 't'), 1
		}
		return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF]), 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && size == 1 {
		return append(dst, `\ufffd`...), 1
	}
	return append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF]), size // U+2028, U+2029
}
