package tools

import (
	"context"
	"encoding/base64"
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"strings"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
)

// MaxUploadBytes bounds the files of one upload together (they travel in
// one command, base64-encoded, to browsers on another machine too).
const MaxUploadBytes = 5 << 20

// MaxUploadFiles bounds the files of one upload.
const MaxUploadFiles = 32

// FileUploadInput is the browser_file_upload tool input.
type FileUploadInput struct {
	BrowserMode string `json:"browser_mode,omitempty"`
	TimeoutMs   int    `json:"timeout_ms,omitempty"`
	// Target is the file input (it may be hidden; name it by selector), or
	// an element that takes dropped files.
	Target
	// Paths names the files, relative to Options.UploadDir (an absolute
	// path must lie inside it too).
	Paths []string `json:"paths"`
}

// UploadedFile is one file an upload set.
type UploadedFile struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	Type string `json:"type,omitempty"`
}

// FileUploadResult is what FileUpload reports.
type FileUploadResult struct {
	Ref   string         `json:"ref,omitempty"`
	Files []UploadedFile `json:"files"`
	// Chooser: the target was not a file input; clicking it opened a file
	// chooser, whose input took the files.
	Chooser bool `json:"chooser,omitempty"`
	// Dropped: the target was not a file input and opened no chooser; the
	// files were dropped on it (dragenter, dragover, drop).
	Dropped bool `json:"dropped,omitempty"`
	Call
}

// UploadFile is a file's content for Page.FileUpload.
type UploadFile struct {
	UploadedFile
	Data []byte
}

// uploadFn sets files on a file input, or drops them on another element,
// with a DataTransfer built in the page (so the bytes need no path on the
// browser's machine).
const uploadFn = `function(files, drop) {
	const dt = new DataTransfer();
	for (const f of files) {
		const bin = atob(f.b64);
		const bytes = new Uint8Array(bin.length);
		for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
		dt.items.add(new File([bytes], f.name, {type: f.type}));
	}
	if (this.tagName === 'INPUT' && this.type === 'file') {
		if (this.disabled) throw new Error('the file input is disabled');
		if (!this.multiple && files.length > 1) throw new Error('the file input takes one file, not ' + files.length);
		this.files = dt.files;
		this.dispatchEvent(new Event('input', {bubbles: true}));
		this.dispatchEvent(new Event('change', {bubbles: true}));
		return 'set';
	}
	if (!drop) return 'other';
	for (const type of ['dragenter', 'dragover', 'drop']) {
		this.dispatchEvent(new DragEvent(type, {bubbles: true, cancelable: true, dataTransfer: dt}));
	}
	return 'dropped';
}`

// FileUpload sets files on the target file input (input and change events
// follow). Another element is clicked with file choosers intercepted: when
// the click opens one for a file input (a button or label that opens a
// hidden input), the files are set on that input (Chooser true); when it
// opens none, they are dropped on the element (dragenter, dragover,
// drop). The content travels in the command (Runtime.callFunctionOn), on
// every backend alike. More files than the input takes is CodePageError.
func (p *Page) FileUpload(ctx context.Context, target Target, files []UploadFile) (FileUploadResult, error) {
	const op = "file_upload"
	el, done, err := p.element(ctx, op, target)
	defer done()
	if err != nil {
		return FileUploadResult{}, err
	}
	type arg struct {
		Name string `json:"name"`
		Type string `json:"type"`
		B64  string `json:"b64"`
	}
	args := make([]arg, len(files))
	res := FileUploadResult{Ref: el.ref, Files: make([]UploadedFile, len(files))}
	for i, f := range files {
		args[i] = arg{Name: f.Name, Type: f.Type, B64: base64.StdEncoding.EncodeToString(f.Data)}
		res.Files[i] = f.UploadedFile
	}
	var how string
	if err := el.callOn(ctx, op, el.node, uploadFn, &how, args, false); err != nil {
		return FileUploadResult{}, err
	}
	if how == "other" {
		_, _, eff, err := p.click(ctx, op, el)
		if err != nil {
			return FileUploadResult{}, err
		}
		node, drop := el.node, true
		if fc := eff.FileChooser; fc != nil && fc.node != 0 {
			node, drop, res.Chooser = fc.node, false, true
		}
		if err := el.callOn(ctx, op, node, uploadFn, &how, args, drop); err != nil {
			return FileUploadResult{}, err
		}
	}
	res.Dropped = how == "dropped"
	return res, nil
}

// readUploads reads the files paths name inside root: no path outside it,
// none through a symlink that leaves it, regular files only, at most
// MaxUploadFiles and MaxUploadBytes together.
func readUploads(op, root string, paths []string) ([]UploadFile, error) {
	if root == "" {
		return nil, guardErr(op, &guard.Error{Code: guard.CodeFeatureNotConfigured, Param: "paths",
			Message: "no upload directory is configured"})
	}
	if len(paths) == 0 || len(paths) > MaxUploadFiles {
		return nil, invalidInput(op, fmt.Sprintf("paths must name 1–%d files", MaxUploadFiles))
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, &Error{Op: op, Code: CodeIO, Message: "the upload directory cannot be read", Err: err}
	}
	var total int64
	out := make([]UploadFile, 0, len(paths))
	for _, name := range paths {
		f, err := readUpload(op, realRoot, name)
		if err != nil {
			return nil, err
		}
		if total += f.Size; total > MaxUploadBytes {
			return nil, invalidInput(op, fmt.Sprintf("the files come to more than %d bytes", MaxUploadBytes))
		}
		out = append(out, f)
	}
	return out, nil
}

func readUpload(op, root, name string) (UploadFile, error) {
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		if os.IsNotExist(err) {
			return UploadFile{}, &Error{Op: op, Code: CodeNotFound, Message: "no file " + name + " in the upload directory"}
		}
		return UploadFile{}, &Error{Op: op, Code: CodeIO, Message: "cannot read " + name, Err: err}
	}
	if rel, err := filepath.Rel(root, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return UploadFile{}, guardErr(op, &guard.Error{Code: guard.CodeForbidden, Param: "paths",
			Message: name + " is outside the upload directory"})
	}
	st, err := os.Stat(real)
	if err != nil || !st.Mode().IsRegular() {
		return UploadFile{}, invalidInput(op, name+" is not a regular file")
	}
	if st.Size() > MaxUploadBytes {
		return UploadFile{}, invalidInput(op, fmt.Sprintf("%s is larger than %d bytes", name, MaxUploadBytes))
	}
	data, err := os.ReadFile(real)
	if err != nil {
		return UploadFile{}, &Error{Op: op, Code: CodeIO, Message: "cannot read " + name, Err: err}
	}
	base := filepath.Base(real)
	return UploadFile{UploadedFile: UploadedFile{Name: base, Size: int64(len(data)),
		Type: mime.TypeByExtension(filepath.Ext(base))}, Data: data}, nil
}

// FileUpload is the browser_file_upload tool: it reads the files from
// Options.UploadDir and sets them on the target; see Page.FileUpload.
// Without UploadDir it fails feature_not_configured before anything is sent.
func (a ActTools) FileUpload(ctx context.Context, inv browserbackend.Invocation, in FileUploadInput) (FileUploadResult, error) {
	const op = "file_upload"
	var files []UploadFile
	return run(a.t, ctx, inv, spec{op: op, mode: in.BrowserMode, timeoutMs: in.TimeoutMs, def: DefaultActionTimeout, input: true, secret: true,
		check: func() error {
			if err := checkTarget(op, in.Target); err != nil {
				return err
			}
			var err error
			files, err = readUploads(op, a.t.uploadDir, in.Paths)
			return err
		}, act: actionCheck(op, in.Target, false, false)},
		func(ctx context.Context, p *Page) (FileUploadResult, error) {
			return p.FileUpload(ctx, in.Target, files)
		})
}
