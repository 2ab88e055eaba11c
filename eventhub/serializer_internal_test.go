package eventhub

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSerializerRunsInOrderNeverBlocksAndDropsBeyondBacklog(t *testing.T) {
	logs := &countingHandler{}
	s := newSerializer(4, slog.New(logs))
	release := make(chan struct{})
	started := make(chan struct{})
	var got []int
	s.Schedule(func() { close(started); <-release }) // a hook that blocks
	<-started
	for i := range 6 { // 4 fit, 2 are dropped — Schedule never waits
		ok := s.Schedule(func() { got = append(got, i) })
		assert.Equal(t, i < 4, ok, "call %d", i)
	}
	close(release)
	s.Close()
	assert.Equal(t, []int{0, 1, 2, 3}, got, "in submission order")
	assert.Equal(t, 1, logs.warns, "the drop is reported")
	assert.False(t, s.Schedule(func() {}), "closed")
	s.Close() // idempotent
}

// countingHandler counts warn records; it is only used from the serializer
// goroutine and read after Close.
type countingHandler struct{ warns int }

func (c *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (c *countingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		c.warns++
	}
	return nil
}
func (c *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *countingHandler) WithGroup(string) slog.Handler      { return c }
