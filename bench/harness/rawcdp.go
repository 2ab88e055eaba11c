package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/coder/websocket"
)

// RawCDP is the floor of every comparison: a bare browser WebSocket
// (coder/websocket) with one flat session, one command at a time, the reply
// read on the caller's goroutine — no multiplexer, no reader goroutine, no
// classification. Not safe for concurrent use.
type RawCDP struct {
	ws        *websocket.Conn
	id        int
	SessionID string
	TargetID  string
}

// DialRaw connects to the browser at wsURL.
func DialRaw(ctx context.Context, wsURL string) (*RawCDP, error) {
	ws, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(256 << 20)
	return &RawCDP{ws: ws}, nil
}

// AttachNewTab opens a tab on url and attaches a flat session to it.
func (r *RawCDP) AttachNewTab(ctx context.Context, url string) error {
	p, _ := json.Marshal(map[string]any{"url": url})
	res, err := r.Call(ctx, "", "Target.createTarget", p)
	if err != nil {
		return err
	}
	var ct struct{ TargetID string }
	_ = json.Unmarshal(res, &ct)
	return r.Attach(ctx, ct.TargetID)
}

// AttachFirstPage attaches a flat session to the first page target.
func (r *RawCDP) AttachFirstPage(ctx context.Context) error {
	res, err := r.Call(ctx, "", "Target.getTargets", nil)
	if err != nil {
		return err
	}
	var ts struct {
		TargetInfos []struct{ TargetID, Type string } `json:"targetInfos"`
	}
	_ = json.Unmarshal(res, &ts)
	for _, t := range ts.TargetInfos {
		if t.Type == "page" {
			return r.Attach(ctx, t.TargetID)
		}
	}
	return errors.New("benchreport: no page target")
}

// Attach attaches a flat session to targetID.
func (r *RawCDP) Attach(ctx context.Context, targetID string) error {
	res, err := r.Call(ctx, "", "Target.attachToTarget", json.RawMessage(`{"targetId":"`+targetID+`","flatten":true}`))
	if err != nil {
		return err
	}
	var att struct{ SessionID string }
	_ = json.Unmarshal(res, &att)
	r.SessionID, r.TargetID = att.SessionID, targetID
	return nil
}

// Call sends one command and reads frames until its reply; events are
// skipped.
func (r *RawCDP) Call(ctx context.Context, sessionID, method string, params json.RawMessage) (json.RawMessage, error) {
	r.id++
	msg := make([]byte, 0, 128+len(params))
	msg = append(msg, `{"id":`...)
	msg = strconv.AppendInt(msg, int64(r.id), 10)
	msg = append(msg, `,"method":"`...)
	msg = append(msg, method...)
	msg = append(msg, '"')
	if len(params) > 0 {
		msg = append(msg, `,"params":`...)
		msg = append(msg, params...)
	}
	if sessionID != "" {
		msg = append(msg, `,"sessionId":"`...)
		msg = append(msg, sessionID...)
		msg = append(msg, '"')
	}
	msg = append(msg, '}')
	if err := r.ws.Write(ctx, websocket.MessageText, msg); err != nil {
		return nil, err
	}
	for {
		_, data, err := r.ws.Read(ctx)
		if err != nil {
			return nil, err
		}
		var f struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(data, &f); err != nil {
			return nil, err
		}
		if f.ID != r.id {
			continue
		}
		if f.Error != nil {
			return nil, fmt.Errorf("benchreport: %s: %d %s", method, f.Error.Code, f.Error.Message)
		}
		return f.Result, nil
	}
}

// Send runs method on the attached session.
func (r *RawCDP) Send(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return r.Call(ctx, r.SessionID, method, params)
}

// Close drops the socket.
func (r *RawCDP) Close() { r.ws.CloseNow() }
