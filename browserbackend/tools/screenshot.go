package tools

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
)

// MaxFullPageHeight bounds a FullPage capture, in CSS pixels: a taller page
// is cut (Clipped) rather than asking the browser for an image it encodes
// for many seconds.
const MaxFullPageHeight = 8192

// MaxScreenshotSide bounds ScreenshotInput.Width and Height in CSS pixels.
const MaxScreenshotSide = 16384

// DefaultScreenshotDir returns <os.TempDir()>/browserchain-screenshots.
func DefaultScreenshotDir() string {
	return filepath.Join(os.TempDir(), "browserchain-screenshots")
}

// ScreenshotInput is the browser_screenshot tool input.
type ScreenshotInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// Width and Height, when both set, capture that many CSS pixels from the
	// top-left of the page (beyond the viewport if needed). Otherwise the
	// visible viewport is captured.
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
	// FullPage captures the whole scrollable page (ignored with Width/Height).
	FullPage bool `json:"full_page,omitempty"`
	// Compact asks Chromium for its smallest PNG. By default it encodes for
	// speed (Page.captureScreenshot optimizeForSpeed, as Chrome DevTools MCP
	// asks too): the same pixels in a file about twice as large, encoded
	// in a fraction of the time (BENCHMARKS.md §8).
	Compact bool `json:"compact,omitempty"`
	// AsFile also stores the image in the file catalogue (Options.Catalog)
	// and adds File to the result; without Options.Catalog the call fails
	// feature_not_configured before any backend is contacted.
	AsFile bool `json:"as_file,omitempty"`
}

func (in ScreenshotInput) check() error {
	if (in.Width == 0) != (in.Height == 0) || in.Width < 0 || in.Height < 0 ||
		in.Width > MaxScreenshotSide || in.Height > MaxScreenshotSide {
		return invalidInput("screenshot", fmt.Sprintf("width and height must be both 0 or both 1–%d", MaxScreenshotSide))
	}
	return nil
}

// ScreenshotResult describes the PNG file written. The image itself never
// travels in the result: a screenshot is a file, the agent gets a
// reference.
type ScreenshotResult struct {
	// Path is the absolute path of the PNG file (mode 0600).
	Path string `json:"path"`
	// SHA256 is the hex SHA-256 of the file's bytes.
	SHA256 string `json:"sha256"`
	// Size is the file size in bytes.
	Size int64 `json:"size"`
	// Width and Height are the image's dimensions in pixels.
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	MediaType string `json:"mediaType"`
	URL       string `json:"url"`
	// Clipped is true when FullPage was cut at MaxFullPageHeight.
	Clipped bool `json:"clipped,omitempty"`
	// File is the catalogue entry of an AsFile screenshot.
	File *FileRef `json:"file,omitempty"`
	Call
}

// Screenshot captures a PNG (Page.captureScreenshot), writes it to a new file
// in the page's screenshot directory (created 0700), and returns the file's
// path, SHA-256, size and pixel dimensions. The answer's base64 data is
// decoded as it is read, straight into the file and the hash: the decoded
// image is never held in memory. The file is written to a
// temporary name and renamed, so a reader never sees a partial image. An
// answer that is not a complete base64 PNG (malformed or cut short) is
// CodeBackend and leaves no file; write failures are CodeIO.
func (p *Page) Screenshot(ctx context.Context, in ScreenshotInput) (ScreenshotResult, error) {
	const op = "screenshot"
	if err := in.check(); err != nil {
		return ScreenshotResult{}, err
	}
	fast := !in.Compact
	params := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng, OptimizeForSpeed: &fast}
	clipped := false
	t := true
	switch {
	case in.Width > 0:
		params.Clip = &page.Viewport{Width: float64(in.Width), Height: float64(in.Height), Scale: 1}
		params.CaptureBeyondViewport = &t
	case in.FullPage:
		m, err := cdp.Call(ctx, p.s, page.GetLayoutMetrics, cdp.Empty{})
		if err != nil {
			return ScreenshotResult{}, wrap(op, err)
		}
		if m.CSSContentSize != nil {
			w, h := m.CSSContentSize.Width, m.CSSContentSize.Height
			if h > MaxFullPageHeight {
				h, clipped = MaxFullPageHeight, true
			}
			params.Clip = &page.Viewport{Width: w, Height: h, Scale: 1}
			params.CaptureBeyondViewport = &t
		}
	}
	// The page's URL: before the capture on a session whose first command
	// still selects its backend (see Snapshot), else read while it runs.
	var url string
	var urlErr error
	readURL := func() { urlErr = p.evaluate(ctx, op, `location.href`, false, &url) }
	var urlRead sync.WaitGroup
	if p.bound() {
		urlRead.Go(readURL)
	} else {
		readURL()
		if urlErr != nil {
			return ScreenshotResult{}, urlErr
		}
	}
	f, err := newShotFile(p.opts.ScreenshotDir)
	if err != nil {
		return ScreenshotResult{}, &Error{Op: op, Code: CodeIO, Message: "cannot write the screenshot file", Err: err}
	}
	defer f.discard() // unless kept below
	sink := newShotSink(f.f)
	err = p.s.Call(ctx, page.CaptureScreenshot.Method, params, sink)
	urlRead.Wait()
	if err == nil && urlErr != nil {
		return ScreenshotResult{}, urlErr
	}
	if err != nil {
		if sink.bad != nil {
			return ScreenshotResult{}, &Error{Op: op, Code: CodeBackend, Message: "the browser's screenshot is not a PNG", Err: err}
		}
		if sink.werr != nil {
			return ScreenshotResult{}, &Error{Op: op, Code: CodeIO, Message: "cannot write the screenshot file", Err: sink.werr}
		}
		return ScreenshotResult{}, wrap(op, err)
	}
	cfg, err := sink.check()
	if err != nil {
		return ScreenshotResult{}, &Error{Op: op, Code: CodeBackend, Message: "the browser's screenshot is not a PNG", Err: err}
	}
	path, err := f.keep()
	if err != nil {
		return ScreenshotResult{}, &Error{Op: op, Code: CodeIO, Message: "cannot write the screenshot file", Err: err}
	}
	return ScreenshotResult{
		Path: path, SHA256: hex.EncodeToString(sink.sum.Sum(nil)), Size: sink.n,
		Width: cfg.Width, Height: cfg.Height, MediaType: "image/png", URL: url, Clipped: clipped,
	}, nil
}
