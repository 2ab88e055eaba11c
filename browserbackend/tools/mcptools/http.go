package mcptools

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultSSERetry is the reconnection delay StreamableHTTPHandler asks
// clients to wait before they resume a dropped event stream.
const DefaultSSERetry = time.Second

// StreamableHTTPHandler returns the SDK's streamable HTTP handler serving
// ms, with event streams a client can resume: opts.EventStore, when nil, is
// a new mcp.MemoryEventStore (10 MiB for all sessions, the oldest events
// dropped first), so every event carries an id, a POST's stream opens with
// a priming event (protocol 2025-11-25 and later), and a GET with
// Last-Event-ID replays what the client missed and goes on with the live
// events. The first event of every stream also carries retry, the delay
// (DefaultSSERetry) the client waits before it reconnects. opts nil means
// the SDK's defaults; opts is not modified.
func StreamableHTTPHandler(ms *mcp.Server, opts *mcp.StreamableHTTPOptions) http.Handler {
	var o mcp.StreamableHTTPOptions
	if opts != nil {
		o = *opts
	}
	if o.EventStore == nil {
		o.EventStore = mcp.NewMemoryEventStore(nil)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, &o)
	retry := []byte("retry: " + strconv.FormatInt(DefaultSSERetry.Milliseconds(), 10) + "\n")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&retryWriter{ResponseWriter: w, retry: retry}, r)
	})
}

// retryWriter puts the retry field in front of the first event of an
// event-stream response; an SSE field may come in any order within its
// event, so the first event keeps its id and data.
type retryWriter struct {
	http.ResponseWriter
	retry []byte // nil once written or not an event stream
}

func (w *retryWriter) Write(p []byte) (int, error) {
	if w.retry != nil {
		retry := w.retry
		w.retry = nil
		if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			if _, err := w.ResponseWriter.Write(retry); err != nil {
				return 0, err
			}
		}
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's Flush and
// deadlines.
func (w *retryWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
