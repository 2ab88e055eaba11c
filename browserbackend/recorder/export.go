package recorder

import (
	"bufio"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// WriteJSONL writes conversation conv's record to w as JSON lines, one
// Entry per line, oldest first. A conversation without a record writes
// nothing.
func (r *Recorder) WriteJSONL(w io.Writer, conv string) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, e := range r.Entries(conv) {
		if err := enc.Encode(e); err != nil {
			return fmt.Errorf("recorder: writing json lines: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("recorder: writing json lines: %w", err)
	}
	return nil
}

//go:embed viewer.html.tmpl
var viewerSrc string

var viewer = template.Must(template.New("viewer").Funcs(template.FuncMap{
	"ms":      func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) },
	"clock":   func(t time.Time) string { return t.UTC().Format("15:04:05.000") },
	"dataURL": shotURL,
}).Parse(viewerSrc))

// shotURL is the data: URL of a recorded image.
func shotURL(s *Shot) template.URL {
	mt := s.MediaType
	if mt != "image/png" && mt != "image/jpeg" && mt != "image/webp" {
		mt = "image/png"
	}
	// The media type is one of three constants and the rest is base64: safe
	// in a src attribute.
	return template.URL("data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(s.Data))
}

// convView is one conversation of the HTML page.
type convView struct {
	ID    string
	Stats Stats
	Calls []*callView
}

// callView is one tool call of the HTML page: its summary (nil Summary when
// the ring dropped it, or the call had not ended) and its other entries.
type callView struct {
	Num      uint64
	Op       string
	Summary  *Entry
	Failover bool
	Items    []Entry
}

// WriteHTML writes one self-contained HTML page (no script, no network
// resource: screenshots inline as data: URLs) with a timeline per
// conversation of convs: its calls in order, each with its selection
// attempts (failover marked), guard decisions, page events, CDP commands
// and screenshots.
func (r *Recorder) WriteHTML(w io.Writer, convs ...string) error {
	views := make([]convView, 0, len(convs))
	for _, id := range convs {
		st, _ := r.Stats(id)
		views = append(views, convView{ID: id, Stats: st, Calls: group(r.Entries(id))})
	}
	if err := viewer.Execute(w, struct {
		Title string
		Convs []convView
	}{Title: "browserchain trace: " + strings.Join(convs, ", "), Convs: views}); err != nil {
		return fmt.Errorf("recorder: writing html: %w", err)
	}
	return nil
}

// group sorts entries into their calls, in call order.
func group(entries []Entry) []*callView {
	var calls []*callView
	byNum := map[uint64]*callView{}
	for _, e := range entries {
		cv := byNum[e.Call]
		if cv == nil {
			cv = &callView{Num: e.Call, Op: e.Op}
			byNum[e.Call] = cv
			calls = append(calls, cv)
		}
		if e.Type == TypeCall {
			cv.Summary = &e
			continue
		}
		if e.Failover {
			cv.Failover = true
		}
		cv.Items = append(cv.Items, e)
	}
	for _, cv := range calls {
		// Attempts are recorded once the call is served; the selection
		// ran inside its first command: they go first, in their order.
		sort.SliceStable(cv.Items, func(i, j int) bool {
			a, b := cv.Items[i], cv.Items[j]
			if (a.Type == TypeAttempt) != (b.Type == TypeAttempt) {
				return a.Type == TypeAttempt
			}
			return a.Type != TypeAttempt && a.Time.Before(b.Time)
		})
	}
	return calls
}

// maxFileStem bounds the file name WriteFiles derives from a conversation
// id, below the usual 255-byte limit of a file name.
const maxFileStem = 200

// FileStem is the file name WriteFiles gives conversation conv's trace,
// without its extension: the path-escaped id, or, when that is longer than
// 200 bytes, its first 100 bytes and the id's SHA-256.
func FileStem(conv string) string {
	stem := url.PathEscape(conv)
	if stem == "" || stem == "." || stem == ".." {
		stem = "_" + stem
	}
	if len(stem) > maxFileStem {
		sum := sha256.Sum256([]byte(conv))
		stem = stem[:100] + "-" + hex.EncodeToString(sum[:]) // escaped: ASCII only
	}
	return stem
}

// WriteFiles writes conversation conv's record into dir (created 0700) as
// FileStem(conv)+".jsonl" and +".html", mode 0600, replacing earlier
// ones. A conversation without a record writes nothing.
func (r *Recorder) WriteFiles(dir, conv string) error {
	if _, ok := r.Stats(conv); !ok {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("recorder: %w", err)
	}
	stem := filepath.Join(dir, FileStem(conv))
	for ext, write := range map[string]func(io.Writer) error{
		".jsonl": func(w io.Writer) error { return r.WriteJSONL(w, conv) },
		".html":  func(w io.Writer) error { return r.WriteHTML(w, conv) },
	} {
		if err := writeFile(stem+ext, write); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("recorder: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("recorder: %w", err)
	}
	return nil
}
