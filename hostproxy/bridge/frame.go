package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/hostproxy"
)

// MaxRequestTimeout caps the timeout_seconds a request may ask for.
const MaxRequestTimeout = 10 * time.Minute

// Message is one decoded hub message addressed to the bridge. Exactly one of
// Request and Cancel is set for the two host-browser types; other message
// types (other host proxies, conversation events) decode with Type set and
// both nil, and are ignored by the bridge.
type Message struct {
	Type    string
	Request *hostproxy.RequestMessage
	Cancel  *hostproxy.CancelMessage
}

// Timeout returns the request's timeout_seconds as a duration, 0 when absent
// or not usable, capped at MaxRequestTimeout.
func (m Message) Timeout() time.Duration {
	if m.Request == nil {
		return 0
	}
	s := m.Request.TimeoutSeconds
	if math.IsNaN(s) || s <= 0 {
		return 0
	}
	if s >= MaxRequestTimeout.Seconds() {
		return MaxRequestTimeout
	}
	return time.Duration(s * float64(time.Second))
}

// DecodeFrame decodes the data of one SSE event from GET /v1/events: an
// eventhub.Envelope whose "message" is a JSON object with a string "type".
// For host_browser_request, requestId and cdpMethod are required and
// cdpParams, when present, must be a JSON object or null; for
// host_browser_cancel, requestId is required. Errors are prefixed "bridge: ".
func DecodeFrame(data []byte) (Message, error) {
	var env eventhub.Envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return Message{}, fmt.Errorf("bridge: frame is not an envelope: %w", err)
	}
	msg := bytes.TrimSpace(env.Message)
	if len(msg) == 0 || msg[0] != '{' {
		return Message{}, errors.New("bridge: envelope message is not a JSON object")
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(msg, &head); err != nil {
		return Message{}, fmt.Errorf("bridge: message: %w", err)
	}
	switch head.Type {
	case wire.TypeHostBrowserRequest:
		var r hostproxy.RequestMessage
		if err := json.Unmarshal(msg, &r); err != nil {
			return Message{}, fmt.Errorf("bridge: %s: %w", head.Type, err)
		}
		if r.RequestID == "" || r.CDPMethod == "" {
			return Message{}, fmt.Errorf("bridge: %s: requestId and cdpMethod are required", head.Type)
		}
		p := bytes.TrimSpace(r.CDPParams)
		if len(p) > 0 && !bytes.Equal(p, []byte("null")) && p[0] != '{' {
			return Message{}, fmt.Errorf("bridge: %s: cdpParams must be an object", head.Type)
		}
		if bytes.Equal(p, []byte("null")) {
			r.CDPParams = nil
		}
		return Message{Type: head.Type, Request: &r}, nil
	case wire.TypeHostBrowserCancel:
		var c hostproxy.CancelMessage
		if err := json.Unmarshal(msg, &c); err != nil {
			return Message{}, fmt.Errorf("bridge: %s: %w", head.Type, err)
		}
		if c.RequestID == "" {
			return Message{}, fmt.Errorf("bridge: %s: requestId is required", head.Type)
		}
		return Message{Type: head.Type, Cancel: &c}, nil
	}
	return Message{Type: head.Type}, nil
}
