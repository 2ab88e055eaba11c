package remote

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/eventhub/wire"
)

// recordingWriter is a middleware's writer that hides the connection: no
// Hijack, no Unwrap.
type recordingWriter struct {
	w      http.ResponseWriter
	status int
}

func (r *recordingWriter) Header() http.Header         { return r.w.Header() }
func (r *recordingWriter) Write(b []byte) (int, error) { return r.w.Write(b) }
func (r *recordingWriter) WriteHeader(code int)        { r.status = code; r.w.WriteHeader(code) }

// unwrappingWriter is the same writer with http.ResponseController's Unwrap.
type unwrappingWriter struct{ recordingWriter }

func (u *unwrappingWriter) Unwrap() http.ResponseWriter { return u.w }

func TestSocketHandler_WrappedWriterThatCannotHijackIsRefusedWithALoggedCause(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	token, _ := f.pair("user-1")
	h := f.srv.SocketHandler()
	wrapped := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/unwrap") {
			h.ServeHTTP(&unwrappingWriter{recordingWriter{w: w}}, r)
			return
		}
		h.ServeHTTP(&recordingWriter{w: w}, r)
	}))
	defer wrapped.Close()
	dial := func(path string) (*websocket.Conn, *http.Response, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // against a hang only
		defer cancel()
		return websocket.Dial(ctx, "ws"+strings.TrimPrefix(wrapped.URL, "http")+path,
			&websocket.DialOptions{Subprotocols: []string{wire.SubprotocolAuthPrefix + token}})
	}

	_, resp, err := dial("/extension")
	require.Error(t, err)
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	var body struct {
		Error struct{ Code string } `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	resp.Body.Close()
	assert.Equal(t, "not_hijackable", body.Error.Code)
	assert.Contains(t, f.logs.String(), "cannot be hijacked", "the cause is in the server log")
	assert.Contains(t, f.logs.String(), "remote.recordingWriter", "the log names the writer's type")
	assert.Empty(t, f.srv.Online(), "no slot was taken")

	// A wrapper that unwraps to the server's writer upgrades.
	ws, _, err := dial("/unwrap")
	require.NoError(t, err)
	defer ws.CloseNow()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, data, err := ws.Read(ctx)
	require.NoError(t, err)
	var ready serverFrame
	require.NoError(t, json.Unmarshal(data, &ready))
	assert.Equal(t, wire.SocketReady, ready.Type)
	ws.Close(websocket.StatusNormalClosure, "")
}
