package vellumtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/coder/websocket"
)

// cdpConn is a browser-level CDP connection with flat sessions: one
// WebSocket, calls matched by id, events handed to onEvent in the order
// they arrive. Close fails every pending call.
type cdpConn struct {
	ws      *websocket.Conn
	onEvent func(sessionID, method string, params json.RawMessage)

	mu      sync.Mutex
	next    int64
	pending map[int64]chan cdpReply
	err     error
	done    chan struct{}
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *cdpError       `json:"error"`
}

// cdpError is a CDP error reply, kept as Chrome sent it.
type cdpError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    string `json:"data,omitempty"`
}

func (e *cdpError) Error() string { return fmt.Sprintf("cdp error %d: %s", e.Code, e.Message) }

func dialCDP(ctx context.Context, url string, onEvent func(sessionID, method string, params json.RawMessage)) (*cdpConn, error) {
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, fmt.Errorf("vellumtest: dial %s: %w", url, err)
	}
	ws.SetReadLimit(256 << 20) // screenshots
	c := &cdpConn{ws: ws, onEvent: onEvent, pending: make(map[int64]chan cdpReply), done: make(chan struct{})}
	go c.readLoop()
	return c, nil
}

func (c *cdpConn) readLoop() {
	defer close(c.done)
	for {
		_, data, err := c.ws.Read(context.Background())
		if err != nil {
			c.fail(err)
			return
		}
		var m struct {
			ID        int64           `json:"id"`
			Method    string          `json:"method"`
			Params    json.RawMessage `json:"params"`
			SessionID string          `json:"sessionId"`
			cdpReply
		}
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		if m.ID == 0 {
			c.onEvent(m.SessionID, m.Method, m.Params)
			continue
		}
		c.mu.Lock()
		ch := c.pending[m.ID]
		delete(c.pending, m.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- m.cdpReply
		}
	}
}

func (c *cdpConn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
	for id, ch := range c.pending {
		delete(c.pending, id)
		close(ch)
	}
}

// call sends one command (to sessionID when set) and returns its result or
// a *cdpError.
func (c *cdpConn) call(ctx context.Context, sessionID, method string, params json.RawMessage) (json.RawMessage, error) {
	ch := make(chan cdpReply, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, fmt.Errorf("vellumtest: browser connection closed: %w", err)
	}
	c.next++
	id := c.next
	c.pending[id] = ch
	c.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if len(params) > 0 {
		msg["params"] = params
	}
	if sessionID != "" {
		msg["sessionId"] = sessionID
	}
	raw, _ := json.Marshal(msg)
	if err := c.ws.Write(ctx, websocket.MessageText, raw); err != nil {
		c.forget(id)
		return nil, fmt.Errorf("vellumtest: write %s: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, errors.New("vellumtest: browser connection closed")
		}
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	case <-ctx.Done():
		c.forget(id)
		return nil, ctx.Err()
	}
}

func (c *cdpConn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

func (c *cdpConn) close() {
	_ = c.ws.Close(websocket.StatusNormalClosure, "")
	<-c.done
}
