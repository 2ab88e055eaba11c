package eventhub

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"
)

// FuzzRenderFrameRoundTrip: every frame the hub renders — any conversation
// id, any message text — parses back through ReadFrames into the same
// envelope.
func FuzzRenderFrameRoundTrip(f *testing.F) {
	f.Add("conv-1", "hello", uint64(1))
	f.Add("", "line1\nline2\r\n", uint64(42))
	f.Add("c\u2028x", "\x00\xff", uint64(1<<63))
	f.Fuzz(func(t *testing.T, conv, text string, seq uint64) {
		var convJSON []byte
		if conv != "" {
			convJSON, _ = json.Marshal(conv)
		}
		raw, _ := json.Marshal(map[string]string{"text": text})
		at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
		fr := renderFrame("abcd1234", seq, conv, convJSON, at, raw)
		var got []Frame
		for x, err := range ReadFrames(bytes.NewReader(fr.data), 0) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, x)
		}
		if len(got) != 1 {
			t.Fatalf("%d frames from %q", len(got), fr.data)
		}
		if got[0].Event != wire.EventTypeAssistant || got[0].ID != fr.id {
			t.Fatalf("frame header %+v", got[0])
		}
		env, err := got[0].Envelope()
		if err != nil {
			t.Fatal(err)
		}
		var msg map[string]string
		if err := json.Unmarshal(env.Message, &msg); err != nil {
			t.Fatal(err)
		}
		wantText := string([]rune(text)) // invalid UTF-8 becomes U+FFFD in JSON
		wantConv := string([]rune(conv))
		if env.ID != fr.id || env.Seq != seq || !env.EmittedAt.Equal(at) || env.ConversationID != wantConv || msg["text"] != wantText {
			t.Fatalf("round trip mismatch: %+v %q", env, msg["text"])
		}
		// What an in-process Subscription returns, taken from the render
		// without parsing, equals what a client parses.
		own := fr.envelope()
		if own.ID != env.ID || own.Seq != env.Seq || !own.EmittedAt.Equal(env.EmittedAt) ||
			own.ConversationID != env.ConversationID || !bytes.Equal(own.Message, env.Message) || !bytes.Equal(own.Message, raw) {
			t.Fatalf("own envelope %+v (message %q) differs from the parsed %+v", own, own.Message, env)
		}
	})
}
