package vellumtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// resultSocket is the result socket of the reference extension (not the
// Vellum extension's transport): GET /v1/host-browser-result/ws, an auth
// message, then one message per result, each answered accepted or error.
type resultSocket struct {
	conn *websocket.Conn
	// unacked counts results sent and not yet answered; acked is signalled
	// at every answer and done closed when the reader ends.
	unacked atomic.Int64
	acked   chan struct{}
	done    chan struct{}
}

// drain waits until every result sent on s has been answered, s's reader
// ended, or closeGrace passed.
func (s *resultSocket) drain() {
	guard := time.NewTimer(closeGrace)
	defer guard.Stop()
	for s.unacked.Load() > 0 {
		select {
		case <-s.acked:
		case <-s.done:
			return
		case <-guard.C:
			return
		}
	}
}

// socketMsg is every message of the result socket, both ways.
type socketMsg struct {
	Type      string `json:"type"`
	Token     string `json:"token,omitempty"`
	ClientID  string `json:"clientId,omitempty"`
	RequestID string `json:"requestId,omitempty"`
	Content   string `json:"content,omitempty"`
	IsError   bool   `json:"isError,omitempty"`
	Status    int    `json:"status,omitempty"`
}

// openSocket dials the result socket with the client's Origin, sends the
// auth message and waits for ready.
func (c *Client) openSocket(ctx context.Context) (*resultSocket, error) {
	u := "ws" + strings.TrimPrefix(c.o.ServerURL, "http") + "/v1/host-browser-result/ws"
	hdr := http.Header{}
	hdr.Set("Origin", c.o.Origin)
	conn, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: c.http, HTTPHeader: hdr})
	if err != nil {
		return nil, fmt.Errorf("vellumtest: result socket: %w", err)
	}
	conn.SetReadLimit(1 << 20)
	auth, _ := json.Marshal(socketMsg{Type: "auth", Token: c.currentToken(), ClientID: c.o.ClientID})
	var ready socketMsg
	if err = conn.Write(ctx, websocket.MessageText, auth); err == nil {
		var data []byte
		if _, data, err = conn.Read(ctx); err == nil {
			err = json.Unmarshal(data, &ready)
		}
	}
	if err == nil && ready.Type != "ready" {
		err = fmt.Errorf("answered %s", ready.Type)
	}
	if err != nil {
		conn.CloseNow()
		return nil, fmt.Errorf("vellumtest: result socket auth: %w", err)
	}
	return &resultSocket{conn: conn, acked: make(chan struct{}, 1), done: make(chan struct{})}, nil
}

// readAcks counts the server's answers to the results sent on s until it
// closes.
func (c *Client) readAcks(ctx context.Context, s *resultSocket) {
	defer close(s.done)
	for {
		_, data, err := s.conn.Read(ctx)
		if err != nil {
			return
		}
		var m socketMsg
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		if m.Type == "accepted" || m.Type == "error" {
			s.unacked.Add(-1)
			select {
			case s.acked <- struct{}{}:
			default:
			}
		}
		switch m.Type {
		case "accepted":
			c.count(func(st *Stats) { st.Results++; st.SocketResults++ })
		case "error":
			c.log.Warn("vellumtest: result refused on the socket; not retried", "requestId", m.RequestID, "status", m.Status)
			c.count(func(st *Stats) { st.ResultsRefused[m.Status]++ })
		}
	}
}

// sendOnSocket sends one result on the socket; false when it is not open or
// the write failed (the caller then POSTs, as the reference extension falls
// back to fetch).
func (c *Client) sendOnSocket(ctx context.Context, body resultBody) bool {
	c.mu.Lock()
	s := c.socket
	c.mu.Unlock()
	if s == nil {
		return false
	}
	raw, _ := json.Marshal(socketMsg{Type: "result", RequestID: body.RequestID, Content: body.Content, IsError: body.IsError})
	s.unacked.Add(1)
	if s.conn.Write(ctx, websocket.MessageText, raw) != nil {
		s.unacked.Add(-1)
		return false
	}
	return true
}
