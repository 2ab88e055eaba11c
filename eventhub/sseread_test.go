package eventhub_test

import (
	"errors"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/eventhub"
)

func readAll(t *testing.T, in string, max int) ([]eventhub.Frame, error) {
	t.Helper()
	var out []eventhub.Frame
	// One byte per Read exercises a CR at the end of every buffer.
	for f, err := range eventhub.ReadFrames(iotest.OneByteReader(strings.NewReader(in)), max) {
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
	return out, nil
}

func TestReadFramesFollowsEventStreamRules(t *testing.T) {
	in := "\xef\xbb\xbf: heartbeat t1\n" +
		"id: a-1\r\nevent: assistant_event\r\ndata: one\r\ndata:two\r\n\r\n" +
		"data: keeps-last-id\r\r" +
		"event: no-data\n\n" +
		"id: bad\x00id\ndata: nul-id-ignored\n\n" +
		"retry: 5\nunknown: x\ndata\n\n" +
		"data: dropped-at-eof"
	got, err := readAll(t, in, 0)
	require.NoError(t, err)
	require.Len(t, got, 5)
	tok, ok := got[0].HeartbeatToken()
	assert.True(t, ok)
	assert.Equal(t, "t1", tok)
	assert.Equal(t, eventhub.Frame{Event: "assistant_event", ID: "a-1", LastEventID: "a-1", Data: "one\ntwo"}, got[1])
	assert.Equal(t, eventhub.Frame{LastEventID: "a-1", Data: "keeps-last-id"}, got[2])
	assert.Equal(t, eventhub.Frame{LastEventID: "a-1", Data: "nul-id-ignored"}, got[3], "an event without data is not dispatched; a NUL id is ignored")
	assert.Equal(t, eventhub.Frame{LastEventID: "a-1", Data: ""}, got[4])
	_, ok = got[1].HeartbeatToken()
	assert.False(t, ok)
}

func TestReadFramesBoundsLineAndEventSize(t *testing.T) {
	_, err := readAll(t, "data: "+strings.Repeat("x", 100)+"\n\n", 64)
	require.ErrorIs(t, err, eventhub.ErrFrameTooLarge)
	_, err = readAll(t, strings.Repeat("data: 0123456789\n", 10)+"\n", 64)
	require.ErrorIs(t, err, eventhub.ErrFrameTooLarge, "many short data lines add up")
	got, err := readAll(t, "data: "+strings.Repeat("x", 50)+"\n\n", 64)
	require.NoError(t, err)
	require.Len(t, got, 1)

	boom := errors.New("boom")
	var last error
	for _, e := range eventhub.ReadFrames(iotest.ErrReader(boom), 0) {
		last = e
	}
	require.ErrorIs(t, last, boom, "read errors end the sequence")
}
