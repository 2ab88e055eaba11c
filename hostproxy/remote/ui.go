package remote

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub/wire"
)

// UIDeadline is the budget the extension gives one UI channel request:
// past it, it answers timeout/ui_deadline.
const UIDeadline = 3 * time.Second

// uiGrace is how long past UIDeadline a call without a context deadline
// waits for the extension's own ui_deadline answer.
const uiGrace = 2 * time.Second

// The error codes and reasons of UI channel answers (the seed's
// table). An answer's code is the *browserbackend.Error's Code, its reason
// the Detail.
const (
	UICodeNotFound      = "not_found"      // reasons task_unavailable, target_unavailable
	UICodeTimeout       = "timeout"        // reasons ui_deadline, preview_busy
	UICodeCancelled     = "cancelled"      // reasons task_stopping, stale_frame
	UICodeCDPFailed     = "cdp_failed"     // reason ui_lookup_failed, or none
	UICodeInvalidParams = "invalid_params" // session_id missing or not a string
	UICodeUnknownMethod = "unknown_method" // the extension has no such ui.* method

	UIReasonTaskUnavailable   = "task_unavailable"
	UIReasonTargetUnavailable = "target_unavailable"
	UIReasonDeadline          = "ui_deadline"
	UIReasonPreviewBusy       = "preview_busy"
	UIReasonTaskStopping      = "task_stopping"
	UIReasonStaleFrame        = "stale_frame"
	UIReasonLookupFailed      = "ui_lookup_failed"
)

// TaskPreview is the answer to ui.task_preview.
type TaskPreview struct {
	// ImageBase64 is a JPEG at most 640 px wide, base64 (standard).
	ImageBase64 string `json:"image_base64"`
	// Format is "jpeg".
	Format string `json:"format"`
	// TabID is the extension's id of the captured tab, decimal digits.
	TabID string `json:"tab_id"`
	// Title is the tab's title when it was captured.
	Title string `json:"title"`
	// CapturedAt is when the frame was taken (the browser's clock).
	CapturedAt time.Time `json:"captured_at"`
}

// JPEG decodes ImageBase64.
func (p TaskPreview) JPEG() ([]byte, error) {
	return base64.StdEncoding.DecodeString(p.ImageBase64)
}

// UI is the server's UI channel to paired devices' extensions, answered
// outside the tasks' command queues. Safe for concurrent use.
type UI struct{ s *Server }

// UI returns the server's UI channel.
func (s *Server) UI() UI { return UI{s} }

// TaskPreview asks the device's extension for a preview of the task whose
// session id (the runtime's conversation id) is sessionID: a JPEG at most
// 640 px wide of the tab the task created or borrowed. It is
// answered outside the task's command queue and never creates a tab.
//
// Errors are *browserbackend.Error: ClassTransport/no_client when the
// device has no open socket, ClassTransport/transport_error when the socket
// closes first; ClassAborted or ClassTimeout from ctx; otherwise the
// extension's answer, whose Code is one of the UICode* values and whose
// Detail is its reason — a capture of the same tab still running gives
// timeout/preview_busy, a request over UIDeadline timeout/ui_deadline. A
// ctx without a deadline waits at most UIDeadline plus 2 s. Safe for
// concurrent use.
func (ui UI) TaskPreview(ctx context.Context, deviceID, sessionID string) (TaskPreview, error) {
	var p TaskPreview
	raw, err := ui.Call(ctx, deviceID, wire.UITaskPreview, map[string]string{"session_id": sessionID})
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal(raw, &p); err != nil || p.ImageBase64 == "" {
		return TaskPreview{}, uiErr(wire.UITaskPreview, browserbackend.ClassTransport, browserbackend.CodeInvalidResponse, "", "the preview answer is malformed")
	}
	return p, nil
}

// TaskFocus asks the device's extension to activate the task's tab and
// raise its window (ui.task_focus). Errors as TaskPreview's.
func (ui UI) TaskFocus(ctx context.Context, deviceID, sessionID string) error {
	raw, err := ui.Call(ctx, deviceID, wire.UITaskFocus, map[string]string{"session_id": sessionID})
	if err != nil {
		return err
	}
	var ans struct {
		Focused bool `json:"focused"`
	}
	if json.Unmarshal(raw, &ans) != nil || !ans.Focused {
		return uiErr(wire.UITaskFocus, browserbackend.ClassTransport, browserbackend.CodeInvalidResponse, "", "the focus answer is malformed")
	}
	return nil
}

// Call sends one UI channel request {"id","method","params"} on the
// device's socket and returns the answer's result. The id is the
// server's own; method is normally a wire.UI* name (another one gets the
// extension's unknown_method answer). params is marshalled as JSON.
// Errors as TaskPreview's. Safe for concurrent use.
func (ui UI) Call(ctx context.Context, deviceID, method string, params any) (json.RawMessage, error) {
	s := ui.s
	p, err := json.Marshal(params)
	if err != nil {
		return nil, uiErr(method, browserbackend.ClassPolicy, browserbackend.CodeInvalidParams, "", "the params do not marshal: "+err.Error())
	}
	s.mu.Lock()
	c := s.slots[deviceID]
	s.mu.Unlock()
	if c == nil || !c.up() {
		return nil, uiErr(method, browserbackend.ClassTransport, browserbackend.CodeNoClient, "", "the device has no open socket")
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, UIDeadline+uiGrace)
		defer cancel()
	}
	id, ch := c.ui.add()
	defer c.ui.drop(id)
	frame, _ := json.Marshal(uiRequest{ID: id, Method: method, Params: p})
	// The write waits behind the socket's other writes (a stalled device's
	// socket takes up to writeTimeout to fail one); the call must still end
	// at ctx. The write goes on in the background: a write cut off midway
	// would drop the socket (see writeRaw), and it ends within
	// writeTimeout, or when the socket closes.
	written := make(chan bool, 1)
	go func() { written <- c.writeRaw(frame) }()
	select {
	case ok := <-written:
		if !ok {
			return nil, uiErr(method, browserbackend.ClassTransport, browserbackend.CodeTransportError, "", "the socket closed")
		}
	case <-ctx.Done():
		e := browserbackend.ContextError(ctx, method, true) // the frame may be on its way
		e.Backend = browserbackend.KindExtension
		return nil, e
	}
	select {
	case ans := <-ch:
		if ans.Error != nil {
			e := uiErr(method, uiClass(ans.Error.Code), ans.Error.Code, ans.Error.Data.Reason, ans.Error.Message)
			e.Dispatched = true
			return nil, e
		}
		return ans.Result, nil
	case <-c.ctx.Done():
		e := uiErr(method, browserbackend.ClassTransport, browserbackend.CodeTransportError, "", "the socket closed")
		e.Dispatched = true
		return nil, e
	case <-ctx.Done():
		e := browserbackend.ContextError(ctx, method, true)
		e.Backend = browserbackend.KindExtension
		return nil, e
	}
}

func uiErr(method string, class browserbackend.Class, code, reason, msg string) *browserbackend.Error {
	return &browserbackend.Error{Class: class, Code: code, Detail: reason, Method: method,
		Backend: browserbackend.KindExtension, Message: msg}
}

// uiClass maps an answer's code to the library's class.
func uiClass(code string) browserbackend.Class {
	switch code {
	case UICodeTimeout:
		return browserbackend.ClassTimeout
	case UICodeCancelled:
		return browserbackend.ClassAborted
	case UICodeInvalidParams, UICodeUnknownMethod:
		return browserbackend.ClassPolicy
	}
	return browserbackend.ClassProtocol
}

// up reports whether c is registered and not ending.
func (c *conn) up() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sub != nil && c.why == ""
}

// uiRequest is a server → client UI channel frame.
type uiRequest struct {
	ID     string          `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// uiAnswer is a client → server UI channel frame.
type uiAnswer struct {
	ID     string          `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Reason string `json:"reason"`
		} `json:"data"`
	} `json:"error"`
}

// uiCalls are one socket's UI requests waiting for their answer.
type uiCalls struct {
	mu      sync.Mutex
	seq     uint64
	waiting map[string]chan uiAnswer
}

func (u *uiCalls) add() (string, chan uiAnswer) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.seq++
	id := "ui-" + strconv.FormatUint(u.seq, 10)
	if u.waiting == nil {
		u.waiting = make(map[string]chan uiAnswer)
	}
	ch := make(chan uiAnswer, 1)
	u.waiting[id] = ch
	return id, ch
}

func (u *uiCalls) drop(id string) {
	u.mu.Lock()
	delete(u.waiting, id)
	u.mu.Unlock()
}

// answer delivers a to its waiting call and reports whether one waited.
func (u *uiCalls) answer(a uiAnswer) bool {
	u.mu.Lock()
	ch := u.waiting[a.ID]
	delete(u.waiting, a.ID)
	u.mu.Unlock()
	if ch == nil {
		return false
	}
	ch <- a // buffered, one answer per id
	return true
}
