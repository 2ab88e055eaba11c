package remote

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub/wire"
)

// nextUI returns the next UI channel request the device received.
func (d *device) nextUI() uiRequest {
	d.t.Helper()
	select {
	case data := <-d.ui:
		var r uiRequest
		require.NoError(d.t, json.Unmarshal(data, &r))
		return r
	case <-d.done:
		d.t.Fatalf("socket closed: %v", d.closeErr)
	case <-time.After(10 * time.Second):
		d.t.Fatal("no UI request")
	}
	return uiRequest{}
}

func TestUI_RequestsGoToTheDeviceAndAnswersAreMatchedByID(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	token, deviceID := f.pair("user-7")
	d := f.dial(token)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	_, err := f.srv.UI().TaskPreview(ctx, "0123456789abcdef0123456789abcdef", "conv-1")
	var be *browserbackend.Error
	require.ErrorAs(t, err, &be)
	assert.Equal(t, browserbackend.ClassTransport, be.Class)
	assert.Equal(t, browserbackend.CodeNoClient, be.Code, "a device without a socket")

	type got struct {
		p   TaskPreview
		err error
	}
	res := make(chan got, 1)
	go func() { p, err := f.srv.UI().TaskPreview(ctx, deviceID, "conv-1"); res <- got{p, err} }()
	req := d.nextUI()
	assert.Equal(t, wire.UITaskPreview, req.Method)
	assert.JSONEq(t, `{"session_id":"conv-1"}`, string(req.Params))
	require.NotEmpty(t, req.ID)
	// An answer for an id nobody waits for, and one without an id, are
	// refused; the call still waits for its own.
	d.send(map[string]any{"id": "ui-unknown", "result": map[string]any{"image_base64": "AAAA"}})
	fr := d.next()
	assert.Equal(t, "unknown_request", fr.Code)
	assert.Equal(t, "ui-unknown", fr.RequestID)
	d.send(map[string]any{"result": map[string]any{"image_base64": "AAAA"}})
	assert.Equal(t, "missing_type", d.next().Code)
	d.send(map[string]any{"id": req.ID, "result": map[string]any{"image_base64": "/9j/", "format": "jpeg",
		"tab_id": "17", "title": "Example", "captured_at": "2026-03-01T12:00:00.000Z"}})
	r := <-res
	require.NoError(t, r.err)
	assert.Equal(t, "17", r.p.TabID)
	assert.Equal(t, "Example", r.p.Title)
	assert.Equal(t, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), r.p.CapturedAt.UTC())
	img, err := r.p.JPEG()
	require.NoError(t, err)
	assert.Equal(t, []byte{0xff, 0xd8, 0xff}, img)

	// The extension's error answer keeps its code and reason.
	errs := make(chan error, 1)
	go func() { errs <- f.srv.UI().TaskFocus(ctx, deviceID, "conv-1") }()
	req = d.nextUI()
	assert.Equal(t, wire.UITaskFocus, req.Method)
	d.send(map[string]any{"id": req.ID, "error": map[string]any{"code": "timeout", "message": "busy",
		"data": map[string]any{"reason": "preview_busy"}}})
	err = <-errs
	require.ErrorAs(t, err, &be)
	assert.Equal(t, browserbackend.ClassTimeout, be.Class)
	assert.Equal(t, UICodeTimeout, be.Code)
	assert.Equal(t, UIReasonPreviewBusy, be.Detail)
	assert.Equal(t, wire.UITaskFocus, be.Method)

	go func() {
		_, err := f.srv.UI().Call(ctx, deviceID, "ui.other", map[string]string{"session_id": "conv-1"})
		errs <- err
	}()
	req = d.nextUI()
	d.send(map[string]any{"id": req.ID, "error": map[string]any{"code": "unknown_method", "message": "no"}})
	require.ErrorAs(t, <-errs, &be)
	assert.Equal(t, browserbackend.ClassPolicy, be.Class)
	assert.Equal(t, UICodeUnknownMethod, be.Code)
}

func TestUI_ADisconnectFailsTheCallInFlightWithATransportError(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	token, deviceID := f.pair("user-7")
	d := f.dial(token)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errs := make(chan error, 1)
	go func() { _, err := f.srv.UI().TaskPreview(ctx, deviceID, "conv-1"); errs <- err }()
	d.nextUI()
	require.True(t, f.srv.Disconnect(deviceID))
	err := <-errs
	var be *browserbackend.Error
	require.ErrorAs(t, err, &be)
	assert.Equal(t, browserbackend.ClassTransport, be.Class)
	assert.Equal(t, browserbackend.CodeTransportError, be.Code)
	assert.Equal(t, websocket.StatusGoingAway, d.closed(), "a disconnect is not a revocation")
	assert.False(t, f.srv.Disconnect(deviceID), "no socket left")
	devices, err := f.srv.Devices(ctx)
	require.NoError(t, err)
	require.Len(t, devices, 1, "the device keeps its grant")
}

// A UI call ends at its context even when its frame cannot be written yet
// (the socket's writes wait behind a stalled device's): it used to wait
// for the socket's own write timeout (10 s) and then fail as a transport
// error. The socket stays up, and the frame goes out once the socket
// writes again.
func TestUI_ACallWhoseFrameWaitsToBeWrittenEndsAtItsContext(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	token, deviceID := f.pair("user-7")
	d := f.dial(token)
	f.srv.mu.Lock()
	c := f.srv.slots[deviceID]
	f.srv.mu.Unlock()
	c.mu.Lock()
	ws := c.ws
	c.mu.Unlock()
	// An open message writer holds the socket's write lock: every other
	// write waits, as behind a blocked write to a device that stopped
	// reading.
	hold, err := ws.Writer(context.Background(), websocket.MessageText)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := f.srv.UI().Call(ctx, deviceID, wire.UITaskFocus, map[string]string{"session_id": "conv-1"})
		errs <- err
	}()
	cancel()
	err = <-errs
	var be *browserbackend.Error
	require.ErrorAs(t, err, &be)
	assert.Equal(t, browserbackend.ClassAborted, be.Class, "%v", err)
	assert.Equal(t, []string{deviceID}, f.srv.Online(), "the socket stays up")

	_, _ = hold.Write([]byte(`{"type":"noop"}`))
	require.NoError(t, hold.Close())
	assert.Equal(t, wire.UITaskFocus, d.nextUI().Method, "the frame went out once the socket wrote again")
}

// TestSocket_AFrameWithoutATypeGetsAnErrorFrame: a frame without a type
// that is no awaited UI channel answer is answered with an error frame,
// never dropped in silence; an awaited answer gets none (REM-9).
func TestSocket_AFrameWithoutATypeGetsAnErrorFrame(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	token, deviceID := f.pair("u")
	d := f.dial(token)

	for _, tc := range []struct {
		frame  any
		status int
		code   string
	}{
		{map[string]any{"requestId": "r-1", "content": "{}"}, http.StatusBadRequest, "missing_type"},
		{map[string]any{}, http.StatusBadRequest, "missing_type"},
		{map[string]any{"id": 7, "result": map[string]any{}}, http.StatusBadRequest, "malformed_body"},
		{map[string]any{"id": "ui-late", "result": map[string]any{}}, http.StatusNotFound, "unknown_request"},
	} {
		d.send(tc.frame)
		fr := d.next()
		assert.Equal(t, wire.SocketError, fr.Type, "%v", tc.frame)
		assert.Equal(t, tc.status, fr.Status, "%v", tc.frame)
		assert.Equal(t, tc.code, fr.Code, "%v", tc.frame)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errs := make(chan error, 1)
	go func() { errs <- f.srv.UI().TaskFocus(ctx, deviceID, "conv-1") }()
	req := d.nextUI()
	d.send(map[string]any{"id": req.ID, "result": map[string]any{"focused": true}})
	require.NoError(t, <-errs)
	// The next frame answers the next refused frame: the awaited answer got none.
	d.send(map[string]any{})
	assert.Equal(t, "missing_type", d.next().Code)
}
