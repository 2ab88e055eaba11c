package mcptools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxFrameBytes bounds one stdio frame (a line), the SDK's own default.
const maxFrameBytes = mcp.DefaultMaxLineLength

// StdioTransport returns the transport that serves MCP over in and out
// (os.Stdin and os.Stdout for a server a client launches): the SDK's
// newline-delimited mcp.IOTransport behind a frame filter, so that a
// malformed line does not end the session (the SDK's own stdio transports
// end it at the first frame they cannot decode). The filter passes on each line
// that is a JSON-RPC 2.0 message (or a batch of them) and answers every other
// line itself, as JSON-RPC says a server answers one: -32700 when the line
// is not one JSON value, -32600 when it is JSON but not a message (wrong or
// missing "jsonrpc", an id that is neither a string nor a number, a
// response with neither result nor error, an empty batch, a line over
// mcp.DefaultMaxLineLength), with the frame's id when it has a usable one
// and null otherwise. A refused frame is logged to log (nil:
// slog.Default()) with its size and reason, never its content. Blank lines
// are skipped; a CR before the LF is allowed. Answers and the SDK's writes
// share one lock (the SDK writes a message in one Write).
//
//	err := srv.NewMCPServer(nil).Run(ctx, mcptools.StdioTransport(os.Stdin, os.Stdout, logger))
//
// Each Connect starts one goroutine that reads in until it ends.
func StdioTransport(in io.ReadCloser, out io.WriteCloser, log *slog.Logger) mcp.Transport {
	if log == nil {
		log = slog.Default()
	}
	return &stdioTransport{in: in, out: out, log: log}
}

type stdioTransport struct {
	in  io.ReadCloser
	out io.WriteCloser
	log *slog.Logger
}

// Connect implements mcp.Transport.
func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	in, out := stdioFrames(t.in, t.out, t.log)
	// The frames are bounded by the filter (maxFrameBytes).
	return (&mcp.IOTransport{Reader: in, Writer: out, MaxLineLength: -1}).Connect(ctx)
}

// stdioFrames returns the reader and writer StdioTransport gives the SDK:
// the writer is shared with the filter's answers, and the reader ends when
// in ends. The goroutine that reads in ends with in.
func stdioFrames(in io.ReadCloser, out io.WriteCloser, log *slog.Logger) (io.ReadCloser, io.WriteCloser) {
	pr, pw := io.Pipe()
	w := &frameWriter{w: out}
	go func() {
		br := bufio.NewReaderSize(in, 64<<10)
		for {
			line, tooLong, err := readFrame(br, maxFrameBytes)
			if reason, code, id := check(line, tooLong); reason != "" {
				log.Warn("mcptools: stdio frame refused", "module", "browser-mcp", "bytes", len(line), "reason", reason)
				if w.answer(id, code, reason) != nil {
					_ = pw.CloseWithError(io.ErrClosedPipe)
					return
				}
			} else if len(line) > 0 {
				if _, werr := pw.Write(append(line, '\n')); werr != nil {
					return // the SDK closed its side
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					_ = pw.Close()
				} else {
					_ = pw.CloseWithError(err)
				}
				return
			}
		}
	}()
	return readCloser{pr, in}, w
}

// readFrame reads one line without its line ending. A line over max is
// read to its end and dropped: tooLong is set and line is empty. err is
// the reader's (io.EOF after a last line without LF).
func readFrame(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, rerr := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+2 { // the CR LF are not the frame's
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(rerr, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), tooLong, rerr
	}
}

// frameWriter serialises the SDK's writes and the filter's answers on one
// stream.
type frameWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (f *frameWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.w.Write(p)
}

func (f *frameWriter) Close() error { return f.w.Close() }

// answer writes a JSON-RPC error response with id (null when nil).
func (f *frameWriter) answer(id json.RawMessage, code int64, message string) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	data, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: message}})
	_, err := f.Write(append(data, '\n'))
	return err
}

// check says why line is not passed on ("" when it is), the JSON-RPC code
// to answer with and the id to answer.
func check(line []byte, tooLong bool) (reason string, code int64, id json.RawMessage) {
	switch {
	case tooLong:
		return "the frame is larger than " + strconv.Itoa(maxFrameBytes) + " bytes", jsonrpc.CodeInvalidRequest, nil
	case len(bytes.TrimSpace(line)) == 0:
		return "", 0, nil
	case !json.Valid(line):
		return "parse error: the frame is not one JSON value", jsonrpc.CodeParseError, nil
	}
	var batch []json.RawMessage
	if json.Unmarshal(line, &batch) == nil {
		if len(batch) == 0 {
			return "invalid request: an empty batch", jsonrpc.CodeInvalidRequest, nil
		}
		for _, m := range batch {
			if reason, code, _ := checkMessage(m); reason != "" {
				return reason + " (in a batch)", code, nil
			}
		}
		return "", 0, nil
	}
	return checkMessage(line)
}

// checkMessage checks one message of a frame.
func checkMessage(raw []byte) (reason string, code int64, id json.RawMessage) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return "invalid request: a message must be a JSON object", jsonrpc.CodeInvalidRequest, nil
	}
	if len(m.ID) > 0 && (m.ID[0] == '"' || m.ID[0] == '-' || (m.ID[0] >= '0' && m.ID[0] <= '9')) {
		id = m.ID
	}
	if _, err := jsonrpc.DecodeMessage(raw); err != nil {
		return "invalid request: " + err.Error(), jsonrpc.CodeInvalidRequest, id
	}
	if m.Method != nil {
		return "", 0, nil
	}
	if m.Result == nil && m.Error == nil {
		return "invalid request: a response needs a result or an error", jsonrpc.CodeInvalidRequest, id
	}
	return "", 0, nil
}

// readCloser reads from the pipe and closes both it and the stdio stream
// it is fed from.
type readCloser struct {
	*io.PipeReader
	in io.Closer
}

func (r readCloser) Close() error {
	return errors.Join(r.PipeReader.Close(), r.in.Close())
}
