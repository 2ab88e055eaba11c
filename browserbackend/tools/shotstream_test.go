package tools_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// Noise does not compress: a 1200×900 canvas is a PNG of about 3 MB, an
// answer of about 4 MB, large enough for every streaming path. The noise is
// the same on every load (a seeded xorshift), so the raw capture matches
// the tool's even if the page was loaded again in between.
const noiseW, noiseH = 1200, 900

func noiseSite(t *testing.T) string {
	srv := chromiumtest.LoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>noise</title><body style="margin:0"><canvas id=c width=%d height=%d></canvas><script>
const c=document.getElementById('c').getContext('2d'),d=c.createImageData(%d,%d);let s=2463534242;
for(let i=0;i<d.data.length;i++){s^=s<<13;s>>>=0;s^=s>>>17;s^=s<<5;s>>>=0;d.data[i]=i%%4==3?255:s&255}
c.putImageData(d,0,0)</script>`, noiseW, noiseH, noiseW, noiseH)
	}))
	return srv.URL + "/"
}

// rawShot is the raw CDP answer on the invocation's page (the conversation's
// tab, which the Client's backend resolves), its data decoded as
// json.Unmarshal decodes it.
func rawShot(t *testing.T, tl *tools.Tools, inv browserbackend.Invocation) []byte {
	c := tl.Selector().Client(inv)
	defer c.Close()
	cmd := browserbackend.Command{Method: "Page.captureScreenshot", Params: json.RawMessage(fmt.Sprintf(
		`{"format":"png","captureBeyondViewport":true,"optimizeForSpeed":true,"clip":{"x":0,"y":0,"width":%d,"height":%d,"scale":1}}`, noiseW, noiseH))}
	res, err := c.Send(stepCtx(t), cmd)
	require.NoError(t, err)
	var shot struct{ Data []byte }
	require.NoError(t, json.Unmarshal(res, &shot))
	return shot.Data
}

// screenshotIsTheRawAnswer takes the screenshot tool's file of a noise page
// and the raw answer on the same page: the file is byte for byte the
// answer's data decoded, and its sha256 says so.
func screenshotIsTheRawAnswer(t *testing.T, tl *tools.Tools, inv browserbackend.Invocation, want browserbackend.Kind) {
	_, err := tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: noiseSite(t)})
	require.NoError(t, err)
	shot, err := tl.Read().Screenshot(stepCtx(t), inv, tools.ScreenshotInput{Width: noiseW, Height: noiseH})
	require.NoError(t, err)
	assert.Equal(t, want, shot.Backend)
	file, err := os.ReadFile(shot.Path)
	require.NoError(t, err)
	raw := rawShot(t, tl, inv)
	require.Greater(t, len(raw), 2<<20, "a multi-MB image (noise does not compress)")
	sum := sha256.Sum256(raw)
	assert.Equal(t, hex.EncodeToString(sum[:]), shot.SHA256, "sha256 of the raw answer decoded")
	assert.True(t, string(raw) == string(file), "the file is the raw answer decoded (%d vs %d bytes)", len(file), len(raw))
	assert.Equal(t, int64(len(raw)), shot.Size)
	assert.Equal(t, noiseW, shot.Width)
	assert.Equal(t, noiseH, shot.Height)
}

// screenshotFileIsTheRawAnswer is a case of TestPageToolsOnEveryBackend:
// the screenshot tool's file (decoded while the answer is read) is
// identical to the raw Page.captureScreenshot answer decoded.
func screenshotFileIsTheRawAnswer(t *testing.T, backend string, tl *tools.Tools, inv browserbackend.Invocation) {
	screenshotIsTheRawAnswer(t, tl, inv, browserbackend.Kind(backend))
}
