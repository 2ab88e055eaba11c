package eventhub_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/eventhubtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// logSink is a slog.Handler that keeps records for assertions.
type logSink struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (l *logSink) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Clone())
	return nil
}
func (l *logSink) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logSink) WithGroup(string) slog.Handler      { return l }

// find returns the records with message msg, as attribute maps.
func (l *logSink) find(msg string) []map[string]slog.Value {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]slog.Value
	for _, r := range l.records {
		if r.Message != msg {
			continue
		}
		m := map[string]slog.Value{"level": slog.StringValue(r.Level.String())}
		r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value; return true })
		out = append(out, m)
	}
	return out
}

// fixture is a hub on a manual clock served on 127.0.0.1.
type fixture struct {
	hub   *eventhub.InProcess
	clock *eventhubtest.Clock
	srv   *eventhubtest.Server
	logs  *logSink
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newFixture(t *testing.T, opts ...eventhub.Option) *fixture {
	t.Helper()
	f := &fixture{clock: eventhubtest.NewClock(t0), logs: &logSink{}}
	opts = append([]eventhub.Option{eventhub.WithClock(f.clock), eventhub.WithLogger(slog.New(f.logs))}, opts...)
	f.hub = eventhub.New(opts...)
	f.srv = eventhubtest.NewServer(t, f.hub, nil)
	return f
}

// dial opens a registered client stream and waits for the immediate
// heartbeat, so the stream is registered when dial returns.
func (f *fixture) dial(t *testing.T, clientID, iface, actor string) *eventhubtest.Stream {
	t.Helper()
	s, err := f.dialOpts(t, eventhubtest.DialOptions{ClientID: clientID, InterfaceID: iface, Header: eventhubtest.ActorHeader(actor)})
	if err != nil {
		t.Fatalf("dial %s: %v", clientID, err)
	}
	return s
}

func (f *fixture) dialOpts(t *testing.T, o eventhubtest.DialOptions) (*eventhubtest.Stream, error) {
	t.Helper()
	ctx := testCtx(t)
	s, err := eventhubtest.Dial(ctx, f.srv.EventsURL(), o)
	if err != nil {
		return nil, err
	}
	t.Cleanup(s.Close)
	if _, _, err := s.NextHeartbeat(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// testCtx is cancelled at the end of the test or after a generous bound
// that only a hang reaches.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitChanged waits on Changed until cond holds.
func waitChanged(t *testing.T, h eventhub.Hub, cond func() bool) {
	t.Helper()
	ctx := testCtx(t)
	for {
		ch := h.Changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("condition not reached: %v", ctx.Err())
		}
	}
}

func rosterIDs(h eventhub.Hub) []string {
	var ids []string
	for _, c := range h.Roster() {
		ids = append(ids, c.ClientID)
	}
	return ids
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-testCtx(t).Done():
		t.Fatalf("%s: not closed", what)
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

var _ = slices.Contains[[]string]
