package eventhub_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/browserchain/browserchain/eventhub"
)

// FuzzParseEventID: the Last-Event-ID decoder never panics, and whatever it
// accepts is exactly the canonical rendering of what it returns.
func FuzzParseEventID(f *testing.F) {
	for _, s := range []string{"1a2b3c4d-1", "ff-18446744073709551615", "ff-18446744073709551616", "-1", "a-", "A-1", "a-01", "a-0", "a--1", "", "1a2b3c4d-1\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		epoch, seq, err := eventhub.ParseEventID(s)
		if err != nil {
			if !errors.Is(err, eventhub.ErrInvalidEventID) {
				t.Fatalf("error %v is not ErrInvalidEventID", err)
			}
			return
		}
		if got := epoch + "-" + strconv.FormatUint(seq, 10); got != s {
			t.Fatalf("accepted %q but it renders as %q", s, got)
		}
		if len(epoch) == 0 || len(epoch) > 16 {
			t.Fatalf("epoch %q out of bounds", epoch)
		}
	})
}

// FuzzDecodePing: the ping body decoder never panics; an accepted body has a
// bounded non-empty token and survives a re-encode.
func FuzzDecodePing(f *testing.F) {
	for _, s := range []string{`{"heartbeat":"abc"}`, `{"heartbeat":""}`, `{}`, `[]`, `null`, `{"heartbeat":1}`,
		`{"heartbeat":"a"} {}`, `{"heartbeat":"a","x":[1,2]}`, "{\"heartbeat\":\"\\u0000\"}", `{"heartbeat":"` + strings.Repeat("z", 65) + `"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := eventhub.DecodePing(body)
		if err != nil {
			return
		}
		if p.Heartbeat == "" || len(p.Heartbeat) > 64 {
			t.Fatalf("accepted token of length %d", len(p.Heartbeat))
		}
		b, _ := json.Marshal(p)
		q, err := eventhub.DecodePing(b)
		if err != nil || q != p {
			t.Fatalf("re-encoded body %s: %v %v", b, q, err)
		}
	})
}

// FuzzReadFrames: the SSE frame parser never panics, terminates, respects
// its size bound, and yields well-formed frames.
func FuzzReadFrames(f *testing.F) {
	for _, s := range []string{
		": heartbeat abc\n\n",
		"id: a-1\nevent: assistant_event\ndata: {\"x\":1}\n\n",
		"data: a\r\ndata: b\r\rdata:c\n\n",
		"\xef\xbb\xbfdata: bom\n\n",
		"id: x\x00y\ndata: nul id\n\n",
		"data: unterminated",
		"event: only-type\n\n",
		"retry: 10\ndata\n\n",
		": c\r",
		strings.Repeat("data: long\n", 40) + "\n",
	} {
		f.Add([]byte(s))
	}
	const max = 256
	f.Fuzz(func(t *testing.T, in []byte) {
		n := 0
		for fr, err := range eventhub.ReadFrames(bytes.NewReader(in), max) {
			if err != nil {
				if !errors.Is(err, eventhub.ErrFrameTooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			n++
			if n > len(in)+1 {
				t.Fatalf("more frames (%d) than input bytes", n)
			}
			if len(fr.Data) > max || len(fr.Comment) > max {
				t.Fatalf("frame over the %d-byte bound", max)
			}
			if fr.IsComment {
				if strings.ContainsAny(fr.Comment, "\r\n") || fr.Event != "" || fr.Data != "" {
					t.Fatalf("malformed comment frame %+v", fr)
				}
				continue
			}
			if strings.ContainsRune(fr.Data, '\r') || strings.ContainsAny(fr.Event, "\r\n") ||
				strings.ContainsAny(fr.ID, "\r\n\x00") || strings.ContainsAny(fr.LastEventID, "\r\n\x00") {
				t.Fatalf("malformed event frame %+v", fr)
			}
		}
	})
}
