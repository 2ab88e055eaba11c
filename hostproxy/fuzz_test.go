package hostproxy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/browserchain/browserchain/browserbackend"
)

// The fuzz targets cover every decoder of client input on the server side:
// the three route bodies and the result content. Seeds live in
// testdata/fuzz/<Target>/ and run as ordinary tests.

func FuzzDecodeResult(f *testing.F) {
	f.Add([]byte(`{"requestId":"r1","content":"{\"a\":1}","isError":false}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeResult(data)
		if err != nil {
			if b != (ResultBody{}) {
				t.Fatalf("error with a non-zero body: %+v", b)
			}
			return
		}
		if b.RequestID == "" {
			t.Fatal("accepted a body without requestId")
		}
		res, err := ClassifyResult("M.m", browserbackend.KindExtension, b.Content, b.IsError)
		if err == nil {
			if !json.Valid(res) {
				t.Fatalf("success that is not JSON: %q", res)
			}
			return
		}
		var e *browserbackend.Error
		if !errors.As(err, &e) || e.Class == "" {
			t.Fatalf("unclassified error %v", err)
		}
	})
}

func FuzzDecodeEvent(f *testing.F) {
	f.Add([]byte(`{"method":"Page.loadEventFired","params":{"timestamp":1},"sessionId":"S"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeEvent(data)
		if err != nil {
			return
		}
		if b.Method == "" || (len(b.Params) > 0 && !json.Valid(b.Params)) {
			t.Fatalf("accepted an invalid event: %+v", b)
		}
	})
}

func FuzzDecodeInvalidation(f *testing.F) {
	f.Add([]byte(`{"sessionId":"S","targetId":"T","reason":"tab_closed"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeInvalidation(data)
		if err != nil {
			return
		}
		if b.SessionID == "" && b.TargetID == "" {
			t.Fatalf("accepted an invalidation naming nothing: %+v", b)
		}
		if _, err := json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzDecodeResultFrame: the fast path of a client socket's result frame
// decodes exactly what json.Unmarshal into clientFrame decodes, or leaves
// the frame to it.
func FuzzDecodeResultFrame(f *testing.F) {
	big, _ := json.Marshal(`{"data":"` + strings.Repeat("A", 8<<10) + `\u00e9\n"}`)
	f.Add([]byte(`{"type":"result","requestId":"r1","content":"{\"a\":1}","isError":false,"durationMs":1.5}`))
	f.Add([]byte(`{"type":"result","requestId":"r2","content":` + string(big) + `,"isError":true}`))
	f.Add([]byte(`{"type":"result","requestId":"r3","clientId":"c","content":"x","tabId":5}`))
	f.Add([]byte(`{"type":"result","requestId":"r4","Content":"x","content":"y"}`))
	f.Add([]byte(`{"type":"result","requestId":"r5","content":"\ud800"}`))
	f.Add([]byte(`{"type":"host_browser_event","method":"M","params":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := decodeResultFrame(data)
		if !ok {
			return
		}
		var want clientFrame
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("fast path took a frame encoding/json refuses (%v): %q", err, data)
		}
		if fast.Type != want.Type || fast.ClientID != want.ClientID || fast.RequestID != want.RequestID ||
			fast.Content != want.Content || fast.IsError != want.IsError || fast.esc != nil {
			t.Fatalf("fast path decoded %+v, encoding/json %+v", fast, want)
		}
	})
}
