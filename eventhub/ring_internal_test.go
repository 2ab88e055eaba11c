package eventhub

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestReplayRingHonoursCountBytesAndAgeBounds(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	add := func(r *ring, seq uint64, size int, at time.Time) {
		r.add(&ringEntry{frame: &frame{seq: seq, data: make([]byte, size)}, target: Target{ConversationID: "c"}, at: at})
	}
	all := func(*ringEntry) bool { return true }
	seqs := func(fs []*frame) (out []uint64) {
		for _, f := range fs {
			out = append(out, f.seq)
		}
		return out
	}

	r := &ring{limits: ReplayLimits{Count: 3, Bytes: 1 << 20, Age: time.Hour}}
	for i := uint64(1); i <= 5; i++ {
		add(r, i, 10, t0)
	}
	got, gap := r.since(0, t0, all)
	assert.Equal(t, []uint64{3, 4, 5}, seqs(got), "count bound")
	assert.True(t, gap, "1 and 2 were evicted")
	got, gap = r.since(3, t0, all)
	assert.Equal(t, []uint64{4, 5}, seqs(got))
	assert.False(t, gap)

	r = &ring{limits: ReplayLimits{Count: 100, Bytes: 25, Age: time.Hour}}
	for i := uint64(1); i <= 4; i++ {
		add(r, i, 10, t0)
	}
	got, _ = r.since(0, t0, all)
	assert.Equal(t, []uint64{3, 4}, seqs(got), "byte bound: 20 of 25 bytes")
	assert.Equal(t, 20, r.bytes)

	r = &ring{limits: ReplayLimits{Count: 100, Bytes: 1 << 20, Age: time.Minute}}
	add(r, 1, 1, t0)
	add(r, 2, 1, t0.Add(30*time.Second))
	got, gap = r.since(0, t0.Add(61*time.Second), all)
	assert.Equal(t, []uint64{2}, seqs(got), "age bound applies at replay time too")
	assert.True(t, gap)

	r = &ring{limits: ReplayLimits{Count: -1}}
	add(r, 1, 1, t0)
	got, gap = r.since(0, t0, all)
	assert.Empty(t, got, "a negative count disables replay")
	assert.True(t, gap)

	// Many adds keep the backing array proportional to the live entries.
	r = &ring{limits: ReplayLimits{Count: 8, Bytes: 1 << 20, Age: time.Hour}}
	for i := uint64(1); i <= 10_000; i++ {
		add(r, i, 1, t0)
	}
	assert.Equal(t, 8, r.len())
	assert.Less(t, cap(r.entries), 1024)
}
