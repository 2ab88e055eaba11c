package eventhub

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/browserchain/browserchain/eventhub/wire"
)

// DefaultMaxFrameSize bounds one line and one event's data in ReadFrames.
const DefaultMaxFrameSize = 1 << 20

// Frame is one item read from an SSE stream by ReadFrames: either a comment
// (IsComment, Comment holds its text without the leading colon and one
// space) or a dispatched event.
type Frame struct {
	IsComment bool
	Comment   string
	// Event is the "event" field ("" when absent; the hub always sends
	// assistant_event).
	Event string
	// ID is this event's own "id" field, "" when it had none.
	ID string
	// LastEventID is the last id seen on the stream so far, as EventSource
	// keeps it: the value to send as Last-Event-ID on reconnect.
	LastEventID string
	// Data is the event's data lines joined with "\n".
	Data string
}

// HeartbeatToken returns the token of a hub heartbeat comment.
func (f Frame) HeartbeatToken() (string, bool) {
	if !f.IsComment || !strings.HasPrefix(f.Comment, wire.HeartbeatPrefix) {
		return "", false
	}
	tok := strings.TrimPrefix(f.Comment, wire.HeartbeatPrefix)
	return tok, tok != ""
}

// Envelope decodes the event's data as a hub Envelope.
func (f Frame) Envelope() (Envelope, error) {
	var env Envelope
	if f.IsComment {
		return env, errors.New("eventhub: frame is a comment")
	}
	if err := json.Unmarshal([]byte(f.Data), &env); err != nil {
		return env, fmt.Errorf("eventhub: decode envelope: %w", err)
	}
	return env, nil
}

// ReadFrames parses an SSE stream (WHATWG "event stream interpretation"):
// lines end in LF, CR or CRLF; a leading BOM is skipped; a blank line
// dispatches the pending event when it has data; "id" values containing NUL
// are ignored; "retry" and unknown fields are ignored; an unfinished event at
// EOF is dropped. Comments are yielded too, because hub heartbeats are
// comments (go-sse's own reader drops them, which is why this parser
// exists). A line or an event's data longer than maxSize bytes (≤ 0 means
// DefaultMaxFrameSize) ends the sequence with ErrFrameTooLarge; a read error
// ends it with that error; EOF ends it without error.
//
// The sequence is single-use and not safe for concurrent use.
func ReadFrames(r io.Reader, maxSize int) iter.Seq2[Frame, error] {
	if maxSize <= 0 {
		maxSize = DefaultMaxFrameSize
	}
	return func(yield func(Frame, error) bool) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, min(maxSize+2, 4096)), maxSize+2)
		sc.Split(splitSSELines)
		var (
			data      strings.Builder
			hasData   bool
			event, id string
			lastID    string
			first     = true
		)
		for sc.Scan() {
			line := sc.Bytes()
			if first {
				line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
				first = false
			}
			if len(line) > maxSize {
				yield(Frame{}, fmt.Errorf("%w: line of %d bytes", ErrFrameTooLarge, len(line)))
				return
			}
			if len(line) == 0 {
				if hasData {
					d := data.String()
					f := Frame{Event: event, ID: id, LastEventID: lastID, Data: d[:len(d)-1]}
					if !yield(f, nil) {
						return
					}
				}
				data.Reset()
				hasData, event, id = false, "", ""
				continue
			}
			if line[0] == ':' {
				c := line[1:]
				if len(c) > 0 && c[0] == ' ' {
					c = c[1:]
				}
				if !yield(Frame{IsComment: true, Comment: string(c)}, nil) {
					return
				}
				continue
			}
			name, value := line, []byte(nil)
			if i := bytes.IndexByte(line, ':'); i >= 0 {
				name, value = line[:i], line[i+1:]
				if len(value) > 0 && value[0] == ' ' {
					value = value[1:]
				}
			}
			switch string(name) {
			case "data":
				if data.Len()+len(value)+1 > maxSize {
					yield(Frame{}, fmt.Errorf("%w: event data over %d bytes", ErrFrameTooLarge, maxSize))
					return
				}
				data.Write(value)
				data.WriteByte('\n')
				hasData = true
			case "event":
				event = string(value)
			case "id":
				if bytes.IndexByte(value, 0) < 0 {
					id = string(value)
					lastID = id
				}
			}
		}
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				err = fmt.Errorf("%w: line over %d bytes", ErrFrameTooLarge, maxSize)
			}
			yield(Frame{}, err)
		}
	}
}

// lineEnd returns the index of the first CR or LF in data, or -1.
func lineEnd(data []byte) int {
	lf := bytes.IndexByte(data, '\n')
	search := data
	if lf >= 0 {
		search = data[:lf]
	}
	if cr := bytes.IndexByte(search, '\r'); cr >= 0 {
		return cr
	}
	return lf
}

// splitSSELines is a bufio.SplitFunc for LF, CR and CRLF line ends. A CR at
// the end of the buffer waits for one more byte to tell CR from CRLF.
func splitSSELines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := lineEnd(data); i >= 0 {
		if data[i] == '\n' {
			return i + 1, data[:i], nil
		}
		if i+1 < len(data) {
			if data[i+1] == '\n' {
				return i + 2, data[:i], nil
			}
			return i + 1, data[:i], nil
		}
		if atEOF {
			return i + 1, data[:i], nil
		}
		return 0, nil, nil
	}
	if atEOF {
		// An unterminated last line is not a complete line: drop it.
		return len(data), nil, nil
	}
	return 0, nil, nil
}
