package bridge

import (
	"bytes"
	"testing"

	"github.com/browserchain/browserchain/eventhub"
)

// FuzzDecodeFrame feeds arbitrary event data to the frame decoder: it must
// never panic, and whatever it accepts must be complete.
func FuzzDecodeFrame(f *testing.F) {
	f.Add([]byte(`{"id":"1","emittedAt":"2026-01-01T00:00:00Z","seq":1,"message":{"type":"host_browser_request","requestId":"r1","conversationId":"c","cdpMethod":"Runtime.evaluate","cdpParams":{"expression":"1+1"},"timeout_seconds":30}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeFrame(data)
		if err != nil {
			return
		}
		if m.Request != nil && (m.Request.RequestID == "" || m.Request.CDPMethod == "") {
			t.Fatalf("incomplete request accepted: %+v", m.Request)
		}
		if m.Cancel != nil && m.Cancel.RequestID == "" {
			t.Fatalf("cancel without id accepted")
		}
		if d := m.Timeout(); d < 0 || d > MaxRequestTimeout {
			t.Fatalf("timeout out of range: %v", d)
		}
	})
}

// FuzzReadStream runs raw bytes through the same path as the live stream:
// SSE framing, then frame decoding.
func FuzzReadStream(f *testing.F) {
	f.Add([]byte(": heartbeat abc\n\nevent: assistant_event\nid: 7\ndata: {\"id\":\"7\",\"seq\":7,\"message\":{\"type\":\"host_browser_cancel\",\"requestId\":\"r1\"}}\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for fr, err := range eventhub.ReadFrames(bytes.NewReader(data), 1<<16) {
			if err != nil {
				return
			}
			if fr.IsComment {
				continue
			}
			_, _ = DecodeFrame([]byte(fr.Data))
		}
	})
}
