package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

// ShotSize is one screenshot figure: a w×h canvas of noise captured as PNG
// (≈ 3 bytes per pixel, since noise does not compress).
type ShotSize struct {
	Label string
	W, H  int
}

// ShotSizes are the two sizes of the report: ≈ 1.5 MB and ≈ 8 MB of PNG.
var ShotSizes = []ShotSize{{"≈1.5 MB", 800, 640}, {"≈8 MB", 1920, 1400}}

// ShotResult is Page.captureScreenshot on one path at one size.
type ShotResult struct {
	Name string
	// Of, on a row of the screenshot tool, is the path the tool ran over
	// (its baseline); "" on a round-trip row.
	Of    string
	Size  ShotSize
	PNG   int // decoded PNG bytes
	JSON  int // result bytes as the caller received them (base64 in JSON)
	D     Durations
	Peak  Floats // peak heap objects over the pre-call level, bytes
	Alloc Floats // bytes allocated during the call
	// Inside and Handled, on the extension's round-trip row, are what the
	// worker reported (ms): the time inside chrome.debugger.sendCommand, and
	// from the request's arrival in the worker to its result's send.
	Inside, Handled Floats
}

// Heap figures read from runtime/metrics (no stop-the-world, unlike
// runtime.ReadMemStats).
const (
	metricHeap   = "/memory/classes/heap/objects:bytes"
	metricAllocs = "/gc/heap/allocs:bytes"
)

func readMetric(s []metrics.Sample) (heap, allocs uint64) {
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// measureMem runs f after a GC and returns its duration, the peak of heap
// objects above the level before the call (sampled every 200 µs on another
// goroutine, plus once at the end) and the bytes allocated during it.
func measureMem(f func() error) (time.Duration, float64, float64, error) {
	s := []metrics.Sample{{Name: metricHeap}, {Name: metricAllocs}}
	runtime.GC()
	base, alloc0 := readMetric(s)
	var peak uint64
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		ss := []metrics.Sample{{Name: metricHeap}, {Name: metricAllocs}}
		t := time.NewTicker(200 * time.Microsecond)
		defer t.Stop()
		for {
			h, _ := readMetric(ss)
			mu.Lock()
			peak = max(peak, h)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	t0 := time.Now()
	err := f()
	d := time.Since(t0)
	h, alloc1 := readMetric(s)
	close(stop)
	<-done
	mu.Lock()
	peak = max(peak, h)
	mu.Unlock()
	return d, float64(peak) - float64(base), float64(alloc1 - alloc0), err
}

// showNoise navigates p's page to a w×h noise canvas and waits until it is
// drawn.
func showNoise(ctx context.Context, w *World, p *Path, sz ShotSize) error {
	params, _ := json.Marshal(map[string]any{"url": w.Fix.URL(fmt.Sprintf("/noise?w=%d&h=%d", sz.W, sz.H))})
	if _, err := p.Send(ctx, "Page.navigate", params); err != nil {
		return err
	}
	_, err := p.Send(ctx, "Runtime.evaluate", json.RawMessage(
		`{"expression":"new Promise(r=>{const f=()=>window.noiseReady?r(true):setTimeout(f,10);f()})","awaitPromise":true,"returnByValue":true}`))
	return err
}

// ShotPaths are the paths the screenshot figure runs on (the Selector
// variants add nothing a multi-MB payload would show).
var ShotPaths = []string{PathRaw, PathInspect, PathChromedp, PathBridge, PathExtension, PathLocal}

// ToolShotPaths are the backends the screenshot tool (tools.Page.Screenshot
// to a file, with its SHA-256) is measured over, each against its own round
// trip.
var ToolShotPaths = []string{PathInspect, PathBridge, PathExtension, PathLocal}

// ToolShotName is the row name of the screenshot tool over path.
func ToolShotName(path string) string { return "screenshot tool over " + path }

// pathClient is a Path as a browserbackend.ScopedClient, for tools.Page.
type pathClient struct{ p *Path }

func (c pathClient) Send(ctx context.Context, cmd bb.Command) (json.RawMessage, error) {
	return c.p.Send(ctx, cmd.Method, cmd.Params)
}

func (pathClient) Close() error { return nil }

// MeasureScreenshots captures n screenshots of each size on each path of
// ShotPaths, and with the screenshot tool over each of ToolShotPaths,
// interleaved in a shuffled order per round.
func MeasureScreenshots(ctx context.Context, w *World, n map[string]int) ([]ShotResult, error) {
	dir, err := os.MkdirTemp("", "bench-shots-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	w.Server.record.Store(true)
	defer w.Server.record.Store(false)
	var out []ShotResult
	for _, sz := range ShotSizes {
		var paths []*Path
		for _, name := range ShotPaths {
			p := w.Path(name)
			Progress("screenshot %s: %s: noise page", sz.Label, name)
			if err := showNoise(ctx, w, p, sz); err != nil {
				return nil, fmt.Errorf("benchreport: %s: noise page: %w", name, err)
			}
			paths = append(paths, p)
		}
		params, _ := json.Marshal(map[string]any{"format": "png", "captureBeyondViewport": true,
			"clip": map[string]any{"x": 0, "y": 0, "width": sz.W, "height": sz.H, "scale": 1}})
		res := make([]ShotResult, len(paths))
		for i, p := range paths {
			res[i] = ShotResult{Name: p.Name, Size: sz}
		}
		// The tool rows: over the same paths (the same tabs).
		type toolRow struct {
			path *Path
			page *tools.Page
		}
		var toolRows []toolRow
		for _, name := range ToolShotPaths {
			p := w.Path(name)
			toolRows = append(toolRows, toolRow{p, tools.NewPage(tools.SessionOf(pathClient{p}, ""), tools.PageOptions{ScreenshotDir: dir})})
			res = append(res, ShotResult{Name: ToolShotName(name), Of: name, Size: sz})
		}
		rounds := n[sz.Label]
		order := newRounds(len(res))
		for r := range rounds + 1 { // round 0 warms up
			for _, i := range order.next() {
				p, name := (*Path)(nil), res[i].Name
				var tr *toolRow
				if i < len(paths) {
					p = paths[i]
				} else {
					tr = &toolRows[i-len(paths)]
					p = tr.path
				}
				// Tabs of one window share it: a background tab renders no
				// frames, and its capture waits for one. Not timed.
				if _, err := p.Send(ctx, "Page.bringToFront", nil); err != nil {
					return nil, fmt.Errorf("benchreport: %s: bringToFront: %w", name, err)
				}
				var raw json.RawMessage
				var shot tools.ScreenshotResult
				Progress("screenshot %s: %s: round %d", sz.Label, name, r)
				d, peak, alloc, err := measureMem(func() error {
					ctx, cancel := context.WithTimeout(ctx, stepTimeout)
					defer cancel()
					var err error
					if tr != nil {
						shot, err = tr.page.Screenshot(ctx, tools.ScreenshotInput{Width: sz.W, Height: sz.H, Compact: true}) // the baseline's command
						return err
					}
					raw, err = p.Send(ctx, "Page.captureScreenshot", params)
					return err
				})
				if err != nil {
					return nil, fmt.Errorf("benchreport: %s: screenshot: %w", name, err)
				}
				if tr != nil {
					_ = os.Remove(shot.Path)
				}
				if r == 0 {
					if tr != nil {
						res[i].PNG = int(shot.Size)
						continue
					}
					var shot struct{ Data string }
					if err := json.Unmarshal(raw, &shot); err != nil {
						return nil, fmt.Errorf("benchreport: %s: screenshot result: %w", name, err)
					}
					res[i].PNG = len(shot.Data) / 4 * 3
					res[i].JSON = len(raw)
					continue
				}
				if tr == nil && p.Inside != nil {
					if in, handled, ok := p.Inside(); ok {
						res[i].Inside = append(res[i].Inside, in)
						res[i].Handled = append(res[i].Handled, handled)
					}
				}
				res[i].D = append(res[i].D, d)
				res[i].Peak = append(res[i].Peak, peak)
				res[i].Alloc = append(res[i].Alloc, alloc)
			}
		}
		out = append(out, res...)
	}
	// Leave the pages light again.
	for _, name := range ShotPaths {
		p := w.Path(name)
		params, _ := json.Marshal(map[string]any{"url": w.Fix.URL("/page")})
		_, _ = p.Send(ctx, "Page.navigate", params)
	}
	return out, nil
}
