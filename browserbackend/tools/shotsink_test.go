package tools_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

// answering is a session (a unit-test fake) whose Page.captureScreenshot
// answer is shot, verbatim.
func answering(shot string) *tools.Page {
	sc := browserbackend.SendFunc(func(_ context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
		if cmd.Method == "Page.captureScreenshot" {
			return json.RawMessage(shot), nil
		}
		return json.RawMessage(`{"result":{"type":"string","value":"http://127.0.0.1/"}}`), nil
	})
	return tools.NewPage(tools.SessionOf(sc, ""), tools.PageOptions{})
}

func testPNG(t *testing.T, w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(i*7 + i/5)
	}
	img.Set(0, 0, color.White)
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

func shotDirPage(t *testing.T, shot string) (*tools.Page, string) {
	dir := t.TempDir()
	p := answering(shot)
	return tools.NewPage(p.Session(), tools.PageOptions{ScreenshotDir: dir}), dir
}

// TestAScreenshotAnswerIsDecodedIntoItsFile: the file is the answer's data
// decoded, whatever the answer's other members and however its base64 is
// escaped in JSON ("\/" is legal), and sha256 and size describe it.
func TestAScreenshotAnswerIsDecodedIntoItsFile(t *testing.T) {
	img := testPNG(t, 300, 200)
	b64 := base64.StdEncoding.EncodeToString(img)
	for name, answer := range map[string]string{
		"data only":     `{"data":"` + b64 + `"}`,
		"other members": `{"before":{"x":[1,2]},"data":"` + b64 + `","after":"y"}`,
		"escaped slash": `{"data":"` + strings.ReplaceAll(b64, "/", `\/`) + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			p, _ := shotDirPage(t, answer)
			shot, err := p.Screenshot(t.Context(), tools.ScreenshotInput{Width: 300, Height: 200})
			require.NoError(t, err)
			data, err := os.ReadFile(shot.Path)
			require.NoError(t, err)
			assert.Equal(t, img, data, "the file is the decoded data")
			sum := sha256.Sum256(img)
			assert.Equal(t, hex.EncodeToString(sum[:]), shot.SHA256)
			assert.Equal(t, int64(len(img)), shot.Size)
			assert.Equal(t, 300, shot.Width)
			assert.Equal(t, 200, shot.Height)
		})
	}
}

// TestAMalformedScreenshotAnswerIsABackendErrorAndLeavesNoFile: an answer
// that is not a complete base64 PNG (not base64, cut inside a quantum, cut
// at a quantum, not a PNG, no data, data of another type) fails
// CodeBackend with the backend's invalid_response inside, and the
// screenshot directory stays empty.
func TestAMalformedScreenshotAnswerIsABackendErrorAndLeavesNoFile(t *testing.T) {
	img := testPNG(t, 300, 200)
	b64 := base64.StdEncoding.EncodeToString(img)
	cut := len(b64) / 2 / 4 * 4
	for name, answer := range map[string]string{
		"not base64":           `{"data":"` + b64[:100] + `!!!!` + b64[104:] + `"}`,
		"cut inside quantum":   `{"data":"` + b64[:cut+3] + `"}`,
		"cut at a quantum":     `{"data":"` + b64[:cut] + `"}`,
		"not a PNG":            `{"data":"` + base64.StdEncoding.EncodeToString([]byte("GIF89a, not a PNG at all")) + `"}`,
		"no data":              `{"other":"x"}`,
		"data is not a string": `{"data":12}`,
	} {
		t.Run(name, func(t *testing.T) {
			p, dir := shotDirPage(t, answer)
			_, err := p.Screenshot(t.Context(), tools.ScreenshotInput{Width: 300, Height: 200})
			require.Error(t, err)
			var te *tools.Error
			require.True(t, errors.As(err, &te), "a *tools.Error: %v", err)
			assert.Equal(t, tools.CodeBackend, te.Code, "%v", err)
			assert.ErrorIs(t, err, tools.ErrBackend)
			entries, rerr := os.ReadDir(dir)
			require.NoError(t, rerr)
			assert.Empty(t, entries, "no partial or temporary file is left")
		})
	}
}

// TestAScreenshotAnswerWithLineBreaksIsDecodedIntoItsFile: base64 wrapped
// in lines (escaped \r\n in JSON), and data longer than one decoding chunk,
// decode to the same file.
func TestAScreenshotAnswerWithLineBreaksIsDecodedIntoItsFile(t *testing.T) {
	img := testPNG(t, 900, 700) // about 2.5 MB of base64: several chunks
	b64 := base64.StdEncoding.EncodeToString(img)
	var wrapped strings.Builder
	for i := 0; i < len(b64); i += 76 {
		wrapped.WriteString(b64[i:min(i+76, len(b64))])
		wrapped.WriteString(`\r\n`)
	}
	for name, answer := range map[string]string{
		"one line":    `{"data":"` + b64 + `"}`,
		"line breaks": `{"data":"` + wrapped.String() + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			p, _ := shotDirPage(t, answer)
			shot, err := p.Screenshot(t.Context(), tools.ScreenshotInput{Width: 900, Height: 700})
			require.NoError(t, err)
			data, err := os.ReadFile(shot.Path)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(img, data), "the file is the decoded data")
		})
	}
}
