package tools

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"

	"github.com/browserchain/browserchain/browserbackend"
)

// Download is a download an input action started.
type Download struct {
	URL string `json:"url"`
	// FileName is the name the page suggested.
	FileName string `json:"fileName"`
	// State is "completed", "canceled", or "in_progress" when the call's
	// deadline came first (nothing is saved then).
	State string `json:"state"`
	// Path is the saved file (mode 0600) in the conversation's download
	// directory, with its Size in bytes, SHA256 (hex) and MediaType (sniffed
	// from its first bytes); all empty when NotSaved says why.
	Path      string `json:"path,omitempty"`
	Size      int64  `json:"size,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
	MediaType string `json:"mediaType,omitempty"`
	// NotSaved says why there is no file: the browser is the user's (their
	// browser saves it where it saves downloads), or no download directory
	// is configured (Options.DownloadDir).
	NotSaved string `json:"notSaved,omitempty"`
}

const (
	notSavedUsers = "the browser is the user's own: it saves the download where it saves downloads, out of the agent's reach"
	notSavedNoDir = "no download directory is configured; the browser discarded the download"
)

// downloads is a Tools' download handling, shared by its Pages.
type downloads struct {
	root string // Options.DownloadDir; "" denies saving
	// unsupported remembers the backend kinds whose sessions refused
	// Browser.setDownloadBehavior, so that they are not asked again.
	unsupported sync.Map // browserbackend.Kind → bool
}

// pageDownloads is one call's download settings: dir is the conversation's
// directory under root.
type pageDownloads struct {
	*downloads
	dir string
}

// conversationDir names conversation's directory under root: a hash, so
// that no conversation id can reach outside it.
func (d *downloads) conversationDir(conversation string) string {
	sum := sha256.Sum256([]byte(conversation))
	return filepath.Join(d.root, "conv-"+hex.EncodeToString(sum[:8]))
}

// watchDownloads turns download events on for p's session, for e: the
// downloads are saved in the conversation's directory when the browser is
// the runtime's own (browserbackend.CapDownloads) and a directory is
// configured, else only observed. A backend that refuses the Browser
// domain is not asked again, and its downloads go unreported.
func (p *Page) watchDownloads(ctx context.Context, e *effects) {
	dl := p.opts.downloads
	if dl == nil || dl.downloads == nil {
		return
	}
	kinded, _ := p.s.(interface {
		Kind() browserbackend.Kind
		Caps() browserbackend.Caps
	})
	var kind browserbackend.Kind
	if kinded != nil {
		kind = kinded.Kind()
		if _, no := dl.unsupported.Load(kind); no {
			return
		}
		e.ownBrowser = kinded.Caps().Has(browserbackend.CapDownloads)
	}
	e.downloadDir = dl.dir
	save := e.ownBrowser && dl.dir != ""
	begin, stopB := p.s.Subscribe(browser.DownloadWillBegin.Method)
	progress, stopG := p.s.Subscribe(browser.DownloadProgress.Method)
	t := true
	params := browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorDefault, EventsEnabled: &t}
	switch {
	case save && os.MkdirAll(dl.dir, 0o700) == nil:
		params.Behavior, params.DownloadPath = browser.SetDownloadBehaviorBehaviorAllowAndName, dl.dir
	case e.ownBrowser:
		save = false
		params.Behavior = browser.SetDownloadBehaviorBehaviorDeny // nobody would ever read it
	}
	if _, err := cdp.Call(ctx, p.s, browser.SetDownloadBehavior, params); err != nil {
		stopB()
		stopG()
		if kind != "" && ctx.Err() == nil {
			dl.unsupported.Store(kind, true)
		}
		return
	}
	e.dlBegin, e.dlProgress, e.saveDownloads = begin, progress, save
	e.stop = append(e.stop, stopB, stopG)
}

// finishDownloads waits, bounded by ctx, for the downloads begun to end and
// saves each completed one under its suggested name.
func (e *effects) finishDownloads(ctx context.Context, begun []browser.EventDownloadWillBegin) []Download {
	out := make([]Download, len(begun))
	pending := map[string]int{}
	for i, b := range begun {
		out[i] = Download{URL: b.URL, FileName: b.SuggestedFilename, State: "in_progress"}
		if !e.saveDownloads {
			out[i].NotSaved = notSavedUsers
			if e.ownBrowser {
				out[i].NotSaved, out[i].State = notSavedNoDir, "canceled"
			}
			continue
		}
		pending[b.GUID] = i
	}
	for len(pending) > 0 {
		select {
		case raw, ok := <-e.dlProgress:
			if !ok {
				return out
			}
			var ev browser.EventDownloadProgress
			if decodeValue(raw, &ev) != nil {
				continue
			}
			i, ok := pending[ev.GUID]
			if !ok || ev.State == browser.DownloadProgressStateInProgress {
				continue
			}
			delete(pending, ev.GUID)
			out[i].State = string(ev.State)
			if ev.State == browser.DownloadProgressStateCompleted {
				out[i] = keepDownload(e.downloadDir, ev.GUID, out[i])
			}
		case <-ctx.Done():
			return out
		}
	}
	return out
}

// keepDownload renames the browser's file (named by its guid) to the
// suggested name, made safe and unique, and describes it.
func keepDownload(dir, guid string, d Download) Download {
	src := filepath.Join(dir, guid)
	name := safeFileName(d.FileName)
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	dst := filepath.Join(dir, hex.EncodeToString(rnd[:])+"-"+name)
	if err := os.Rename(src, dst); err != nil {
		d.NotSaved = "the browser's file could not be kept: " + err.Error()
		return d
	}
	_ = os.Chmod(dst, 0o600)
	f, err := os.Open(dst)
	if err != nil {
		d.NotSaved = "the saved file could not be read: " + err.Error()
		return d
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	h := sha256.New()
	h.Write(head[:n])
	size, err := io.Copy(h, f)
	if err != nil {
		d.NotSaved = "the saved file could not be read: " + err.Error()
		return d
	}
	d.Path, d.Size, d.SHA256 = dst, size+int64(n), hex.EncodeToString(h.Sum(nil))
	d.MediaType = http.DetectContentType(head[:n])
	return d
}

// safeFileName keeps the base name's letters, digits, dot, dash and
// underscore; anything else becomes "_" ("download" when nothing is left).
func safeFileName(s string) string {
	s = filepath.Base(strings.ReplaceAll(s, "\\", "/"))
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 120 {
			break
		}
	}
	out := strings.Trim(b.String(), ".")
	if out == "" {
		return "download"
	}
	return out
}
