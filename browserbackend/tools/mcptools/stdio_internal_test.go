package mcptools

import (
	"bufio"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// readFrame drops a line over its bound whole and reads the next one; a
// CR before the LF and a last line without LF are read as lines.
func TestReadFrameDropsALineOverItsBoundAndGoesOn(t *testing.T) {
	br := bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", 40)+"\nshort\r\nlast"), 16)
	type got struct {
		line    string
		tooLong bool
		err     error
	}
	var lines []got
	for {
		line, tooLong, err := readFrame(br, 10)
		lines = append(lines, got{string(line), tooLong, err})
		if err != nil {
			break
		}
	}
	assert.Equal(t, []got{{"", true, nil}, {"short", false, nil}, {"last", false, io.EOF}}, lines)
	reason, code, _ := check(nil, true)
	assert.Contains(t, reason, "larger than")
	assert.EqualValues(t, -32600, code)
}
