package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawStdio is the server process driven frame by frame over its stdio.
type rawStdio struct {
	t     *testing.T
	stdin io.WriteCloser
	lines chan string
}

func startRawStdio(t *testing.T) *rawStdio {
	t.Helper()
	cmd := diesWithTest(exec.Command(binary, append(serverArgs(t.TempDir()), "-local=false")...))
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	r := &rawStdio{t: t, stdin: stdin, lines: make(chan string, 16)}
	go func() {
		defer close(r.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	return r
}

func (r *rawStdio) send(frame string) {
	r.t.Helper()
	_, err := io.WriteString(r.stdin, frame+"\n")
	require.NoError(r.t, err)
}

// next reads the server's next frame; the process ending fails the test.
func (r *rawStdio) next() map[string]any {
	r.t.Helper()
	select {
	case line, ok := <-r.lines:
		require.True(r.t, ok, "the server closed its stdout")
		var m map[string]any
		require.NoError(r.t, json.Unmarshal([]byte(line), &m), line)
		return m
	case <-procCtx(r.t).Done():
		require.FailNow(r.t, "no answer from the server")
		return nil
	}
}

// A malformed stdio frame costs the client that frame, not its session:
// the server answers it with a JSON-RPC error (-32700 for what is not one
// JSON value, -32600 for JSON that is no message, with the frame's id when
// it has a usable one) and goes on serving. The SDK's own transport ended
// the session, and the process, at the first such frame.
func TestStdioAnswersAMalformedFrameAndKeepsTheSession(t *testing.T) {
	s := startRawStdio(t)
	s.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	require.Contains(t, s.next(), "result")
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	for i, tc := range []struct {
		frame string
		code  float64
		id    any // nil: null
	}{
		{`not json`, -32700, nil},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/list"} {"x":1}`, -32700, nil},
		{`{"jsonrpc":"1.0","id":7,"method":"tools/list"}`, -32600, 7.0},
		{`{"id":8}`, -32600, 8.0},
		{`{"jsonrpc":"2.0","id":"r9"}`, -32600, "r9"},
		{`{}`, -32600, nil},
		{`[]`, -32600, nil},
		{`"just a string"`, -32600, nil},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`, -32600, nil},
	} {
		s.send(tc.frame)
		m := s.next()
		assert.Equal(t, tc.id, m["id"], "%q", tc.frame)
		e, _ := m["error"].(map[string]any)
		require.NotNil(t, e, "%q: %v", tc.frame, m)
		assert.Equal(t, tc.code, e["code"], "%q", tc.frame)

		// The session goes on: the next request is answered.
		id := 100 + i
		s.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/list"}`)
		m = s.next()
		assert.Equal(t, float64(id), m["id"])
		assert.Contains(t, m, "result", "%q", tc.frame)
	}
	// Blank lines and CR LF endings are not errors.
	s.send("")
	s.send(`{"jsonrpc":"2.0","id":200,"method":"tools/list"}` + "\r")
	m := s.next()
	assert.Equal(t, 200.0, m["id"])
	assert.Contains(t, m, "result")
}
