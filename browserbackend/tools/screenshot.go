package tools

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"time"

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
	// AsFile also stores the image in the file catalogue (GRD-7) and adds
	// File to the result; without Options.Catalog the call fails
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
// travels in the result (seed 004: a screenshot is a file, the agent gets a
// reference).
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
// path, SHA-256, size and pixel dimensions. The file is written to a
// temporary name and renamed, so a reader never sees a partial image. Write
// failures are CodeIO.
func (p *Page) Screenshot(ctx context.Context, in ScreenshotInput) (ScreenshotResult, error) {
	const op = "screenshot"
	if err := in.check(); err != nil {
		return ScreenshotResult{}, err
	}
	params := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng}
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
	var url string
	if err := p.evaluate(ctx, op, `location.href`, false, &url); err != nil {
		return ScreenshotResult{}, err
	}
	shot, err := cdp.Call(ctx, p.s, page.CaptureScreenshot, params)
	if err != nil {
		return ScreenshotResult{}, wrap(op, err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(shot.Data))
	if err != nil {
		return ScreenshotResult{}, &Error{Op: op, Code: CodeBackend, Message: "the browser's screenshot is not a PNG", Err: err}
	}
	sum := sha256.Sum256(shot.Data)
	path, err := writeFile(p.opts.ScreenshotDir, shot.Data)
	if err != nil {
		return ScreenshotResult{}, &Error{Op: op, Code: CodeIO, Message: "cannot write the screenshot file", Err: err}
	}
	return ScreenshotResult{
		Path: path, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(shot.Data)),
		Width: cfg.Width, Height: cfg.Height, MediaType: "image/png", URL: url, Clipped: clipped,
	}, nil
}

// writeFile writes data to a fresh file in dir and returns its absolute path.
func writeFile(dir string, data []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name := fmt.Sprintf("shot-%s-%s.png", time.Now().UTC().Format("20060102T150405.000"), hex.EncodeToString(rnd[:]))
	f, err := os.CreateTemp(dir, ".shot-*.tmp")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return "", err
	}
	final := filepath.Join(dir, name)
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return filepath.Abs(final)
}
