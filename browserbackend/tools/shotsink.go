package tools

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// shotSink is the result of Page.captureScreenshot as Screenshot decodes it:
// the base64 "data" string of the answer is decoded while it is read, into
// the file, the SHA-256 and the first and last bytes of the image, so the
// decoded PNG is never held in memory and the answer is not copied again.
// The sessions of this package decode results with jsonv2, which calls
// UnmarshalJSONFrom with a decoder over the backend's answer, and hands the
// string as a view of that answer.
type shotSink struct {
	w    io.Writer
	sum  hash.Hash
	n    int64
	head []byte // the first pngHead bytes: the signature and IHDR
	tail []byte // the last len(pngEnd) bytes
	bad  error  // the answer is not base64 image data
	werr error  // writing the file failed
}

// pngHead is what png.DecodeConfig reads: the 8-byte signature and the IHDR
// chunk (length, type, 13 bytes, CRC).
const pngHead = 8 + 4 + 4 + 13 + 4

// pngEnd is the IEND chunk every complete PNG ends with.
var pngEnd = []byte{0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82}

func newShotSink(w io.Writer) *shotSink {
	return &shotSink{w: w, sum: sha256.New(), head: make([]byte, 0, pngHead), tail: make([]byte, 0, 2*len(pngEnd))}
}

// errShotData is the cause of a screenshot answer whose data is missing or
// not base64.
var errShotData = errors.New("tools: the screenshot answer has no base64 data")

// UnmarshalJSONFrom reads the answer object, streaming its "data" member and
// skipping the others.
func (s *shotSink) UnmarshalJSONFrom(dec *jsonv2.Decoder) error {
	if tok, err := dec.ReadToken(); err != nil {
		return err
	} else if tok.Kind() != '{' {
		s.bad = errShotData
		return s.bad
	}
	seen := false
	for dec.PeekKind() != '}' {
		key, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if key.String() != "data" {
			if err := dec.SkipValue(); err != nil {
				return err
			}
			continue
		}
		v, err := dec.ReadValue() // a view of the answer, valid until the next read
		if err != nil {
			return err
		}
		if v.Kind() != '"' {
			s.bad = errShotData
			return s.bad
		}
		if err := s.decode(v); err != nil {
			return err
		}
		seen = true
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	if !seen {
		s.bad = errShotData
		return s.bad
	}
	return nil
}

// decode writes the base64 string literal v, decoded.
func (s *shotSink) decode(v jsonv2.Value) error {
	b64 := []byte(v[1 : len(v)-1])
	if bytes.IndexByte(b64, '\\') >= 0 {
		// Escaped (a "\/" is legal JSON): unquote into a copy first.
		var str string
		if err := jsonv2.Unmarshal(v, &str); err != nil {
			return err
		}
		b64 = []byte(str)
	}
	var err error
	if bytes.IndexByte(b64, '\n') >= 0 || bytes.IndexByte(b64, '\r') >= 0 {
		// Line breaks (which base64 decoding skips) could split a quantum
		// across chunks: let the streaming decoder handle them.
		_, err = io.Copy(s, base64.NewDecoder(base64.StdEncoding, bytes.NewReader(b64)))
	} else {
		err = s.decodeChunks(b64)
	}
	if err != nil && s.werr == nil {
		s.bad = fmt.Errorf("%w: %w", errShotData, err)
		return s.bad
	}
	return err
}

// shotChunk is how much base64 decode decodes at a time (a multiple of 4):
// the decoded image passes through one buffer of 3/4 of it.
const shotChunk = 256 << 10

// decodeChunks decodes b64, which has no line breaks, a chunk at a time.
func (s *shotSink) decodeChunks(b64 []byte) error {
	buf := make([]byte, base64.StdEncoding.DecodedLen(min(len(b64), shotChunk)))
	for len(b64) > 0 {
		n := min(len(b64), shotChunk)
		if n < len(b64) && len(b64)-n < 4 {
			n = len(b64) // never leave a tail too short for a quantum
		}
		if n > shotChunk {
			buf = make([]byte, base64.StdEncoding.DecodedLen(n))
		}
		m, err := base64.StdEncoding.Decode(buf, b64[:n])
		if err != nil {
			return err
		}
		if _, err := s.Write(buf[:m]); err != nil {
			return err
		}
		b64 = b64[n:]
	}
	return nil
}

// Write takes decoded image bytes.
func (s *shotSink) Write(p []byte) (int, error) {
	if r := pngHead - len(s.head); r > 0 {
		s.head = append(s.head, p[:min(r, len(p))]...)
	}
	if len(p) >= len(pngEnd) {
		s.tail = append(s.tail[:0], p[len(p)-len(pngEnd):]...)
	} else {
		s.tail = append(s.tail, p...)
		s.tail = s.tail[max(0, len(s.tail)-len(pngEnd)):]
	}
	s.sum.Write(p)
	s.n += int64(len(p))
	if _, err := s.w.Write(p); err != nil {
		s.werr = err
		return 0, err
	}
	return len(p), nil
}

// check reports the image's dimensions, or why the bytes written are not a
// complete PNG (a cut answer decodes to an image without its IEND chunk).
func (s *shotSink) check() (image.Config, error) {
	cfg, err := png.DecodeConfig(bytes.NewReader(s.head))
	if err != nil {
		return image.Config{}, err
	}
	if !bytes.Equal(s.tail, pngEnd) {
		return image.Config{}, errors.New("tools: the screenshot's PNG is cut short (no IEND chunk)")
	}
	return cfg, nil
}

// shotFile is a screenshot being written: a temporary file in the
// screenshot directory, renamed to its final name by keep, or removed by
// discard, so a reader never sees a partial image.
type shotFile struct {
	dir  string
	f    *os.File
	kept bool
}

// newShotFile creates dir (0700) and a temporary file (0600) in it.
func newShotFile(dir string) (*shotFile, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, ".shot-*.tmp")
	if err != nil {
		return nil, err
	}
	return &shotFile{dir: dir, f: f}, nil
}

// keep closes the file and gives it its final name; it returns the absolute
// path.
func (s *shotFile) keep() (string, error) { return s.keepAs("shot", "png") }

// keepAs is keep with the name's prefix and extension.
func (s *shotFile) keepAs(prefix, ext string) (string, error) {
	if err := s.f.Close(); err != nil {
		return "", err
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name := fmt.Sprintf("%s-%s-%s.%s", prefix, time.Now().UTC().Format("20060102T150405.000"), hex.EncodeToString(rnd[:]), ext)
	final := filepath.Join(s.dir, name)
	if err := os.Rename(s.f.Name(), final); err != nil {
		return "", err
	}
	s.kept = true
	return filepath.Abs(final)
}

// discard removes the file unless keep succeeded.
func (s *shotFile) discard() {
	if !s.kept {
		s.f.Close()
		os.Remove(s.f.Name())
	}
}
