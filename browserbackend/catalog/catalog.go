// Package catalog stores screenshots as files and hands out short-lived
// signed links to them. A Catalog keeps bytes under a file id with
// their sha256, size and media type; the default is a directory with an
// index (NewDir). Links mints and serves URLs signed with HMAC-SHA256 that
// expire after 15 minutes; Links is an http.Handler a host application
// mounts on its own mux.
//
//	cat, err := catalog.NewDir(dir)
//	links := catalog.NewLinks(cat, key, catalog.LinkOptions{BaseURL: "http://127.0.0.1:7821/v1/files"})
//	mux.Handle("/v1/files", links)
package catalog

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/browserchain/browserchain/browserbackend/guard"
)

// File describes one stored file.
type File struct {
	ID        string    `json:"file_id"`
	SHA256    string    `json:"sha256"`
	Size      int64     `json:"size_bytes"`
	MediaType string    `json:"media_type"`
	CreatedAt time.Time `json:"created_at"`
}

// Catalog stores files. Implementations must be safe for
// concurrent use. Open of an unknown id returns an error matching
// ErrNotFound.
type Catalog interface {
	Put(ctx context.Context, mediaType string, data []byte) (File, error)
	Open(ctx context.Context, id string) (File, io.ReadCloser, error)
}

// ErrNotFound: no file with that id (validation_failed, param file_id).
var ErrNotFound = &guard.Error{Code: guard.CodeValidationFailed, Param: "file_id", Message: "catalog: no such file"}

// Dir is the default Catalog: one file per id in a directory (0700, files
// 0600) and an append-only index (index.jsonl) of their metadata.
type Dir struct {
	dir string
	mu  sync.Mutex
	idx map[string]File
	now func() time.Time
}

var idPattern = regexp.MustCompile(`^f_[0-9a-f]{24}$`)

// NewDir opens (creating when missing) a directory catalogue and reads its
// index.
func NewDir(dir string) (*Dir, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, ioErr("cannot create the directory", err)
	}
	d := &Dir{dir: dir, idx: map[string]File{}, now: time.Now}
	raw, err := os.ReadFile(filepath.Join(dir, "index.jsonl"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, ioErr("cannot read the index", err)
	}
	for _, line := range bytes.Split(raw, []byte("\n")) {
		var f File
		if len(line) > 0 && json.Unmarshal(line, &f) == nil && idPattern.MatchString(f.ID) {
			d.idx[f.ID] = f
		}
	}
	return d, nil
}

func ioErr(msg string, err error) error {
	return &guard.Error{Code: guard.CodeProviderError, Param: "catalog", Message: "catalog: " + msg, Err: err}
}

// Put stores data and records it in the index.
func (d *Dir) Put(_ context.Context, mediaType string, data []byte) (File, error) {
	var raw [12]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return File{}, ioErr("cannot make an id", err)
	}
	sum := sha256.Sum256(data)
	f := File{ID: "f_" + hex.EncodeToString(raw[:]), SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data)),
		MediaType: mediaType, CreatedAt: d.now().UTC()}
	tmp := filepath.Join(d.dir, f.ID+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return File{}, ioErr("cannot write the file", err)
	}
	if err := os.Rename(tmp, filepath.Join(d.dir, f.ID)); err != nil {
		os.Remove(tmp)
		return File{}, ioErr("cannot write the file", err)
	}
	line, _ := json.Marshal(f)
	d.mu.Lock()
	defer d.mu.Unlock()
	idx, err := os.OpenFile(filepath.Join(d.dir, "index.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return File{}, ioErr("cannot write the index", err)
	}
	_, werr := idx.Write(append(line, '\n'))
	if cerr := idx.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return File{}, ioErr("cannot write the index", werr)
	}
	d.idx[f.ID] = f
	return f, nil
}

// Open returns a file's metadata and bytes.
func (d *Dir) Open(_ context.Context, id string) (File, io.ReadCloser, error) {
	d.mu.Lock()
	f, ok := d.idx[id]
	d.mu.Unlock()
	if !ok {
		return File{}, nil, ErrNotFound
	}
	r, err := os.Open(filepath.Join(d.dir, id))
	if err != nil {
		return File{}, nil, ioErr("cannot open the file", err)
	}
	return f, r, nil
}

// DefaultLinkTTL is how long a signed link is valid.
const DefaultLinkTTL = 15 * time.Minute

// LinkOptions configures Links.
type LinkOptions struct {
	// BaseURL is where the Links handler is mounted, e.g.
	// "http://127.0.0.1:7821/v1/files"; links are BaseURL?id=…&exp=…&sig=….
	BaseURL string
	// TTL is the validity of a link; 0 means DefaultLinkTTL.
	TTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Links mints signed links to catalogue files and serves them. A
// link carries the file id, its expiry (Unix seconds) and an HMAC-SHA256 of
// both under the key; the handler answers 403 for a link that is tampered
// with or expired, 404 for a valid link to a missing file. Safe for
// concurrent use.
type Links struct {
	cat  Catalog
	key  []byte
	opts LinkOptions
}

// NewLinks returns Links over cat, signing with key (at least 32 bytes;
// keep it secret). It panics on a shorter key (a wiring bug).
func NewLinks(cat Catalog, key []byte, opts LinkOptions) *Links {
	if len(key) < 32 {
		panic("catalog: link key shorter than 32 bytes")
	}
	if opts.TTL == 0 {
		opts.TTL = DefaultLinkTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Links{cat: cat, key: bytes.Clone(key), opts: opts}
}

// Catalog returns the catalogue the links serve.
func (l *Links) Catalog() Catalog { return l.cat }

func (l *Links) sign(id string, exp int64) string {
	m := hmac.New(sha256.New, l.key)
	m.Write([]byte(id + "\n" + strconv.FormatInt(exp, 10)))
	return hex.EncodeToString(m.Sum(nil))
}

// URL mints a link to file id valid for the TTL from now.
func (l *Links) URL(id string) (string, time.Time, error) {
	if !idPattern.MatchString(id) {
		return "", time.Time{}, ErrNotFound
	}
	exp := l.opts.Now().Add(l.opts.TTL).Truncate(time.Second)
	q := url.Values{"id": {id}, "exp": {strconv.FormatInt(exp.Unix(), 10)}, "sig": {l.sign(id, exp.Unix())}}
	return l.opts.BaseURL + "?" + q.Encode(), exp, nil
}

// ServeHTTP serves GET and HEAD of a signed link.
func (l *Links) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	id, sig := q.Get("id"), q.Get("sig")
	exp, err := strconv.ParseInt(q.Get("exp"), 10, 64)
	if err != nil || !idPattern.MatchString(id) || !hmac.Equal([]byte(sig), []byte(l.sign(id, exp))) {
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	if l.opts.Now().Unix() >= exp {
		http.Error(w, "forbidden: link expired", http.StatusForbidden)
		return
	}
	f, rc, err := l.cat.Open(r.Context(), id)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			http.NotFound(w, r)
			return
		}
		http.Error(w, "cannot read the file", http.StatusInternalServerError)
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", f.MediaType)
	w.Header().Set("Content-Length", strconv.FormatInt(f.Size, 10))
	w.Header().Set("Cache-Control", "private, no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = io.Copy(w, rc)
}
