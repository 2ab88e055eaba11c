package tools

import (
	"context"
	"os"

	"github.com/browserchain/browserchain/browserbackend/guard"
)

// FileRef is a screenshot stored in the file catalogue: the id, a
// short-lived signed link to it (empty when none could be minted; the file
// is stored either way), and its sha256 and size. The image itself never
// travels in a result.
type FileRef struct {
	FileID    string `json:"file_id"`
	URL       string `json:"url,omitempty"`
	SHA256    string `json:"sha256"`
	SizeBytes int64  `json:"size_bytes"`
}

// catalogue stores the screenshot file of res in the catalogue and adds
// its FileRef.
func (t *Tools) catalogue(ctx context.Context, res ScreenshotResult) (ScreenshotResult, error) {
	const op = "screenshot"
	data, err := os.ReadFile(res.Path)
	if err != nil {
		return ScreenshotResult{}, &Error{Op: op, Code: CodeIO, Message: "cannot read the screenshot file", Err: err}
	}
	f, err := t.catalog.Put(ctx, res.MediaType, data)
	if err != nil {
		return ScreenshotResult{}, guardErr(op, &guard.Error{Code: guard.CodeProviderError, Param: "catalog",
			Message: "the catalogue did not store the file", Err: err})
	}
	ref := &FileRef{FileID: f.ID, SHA256: f.SHA256, SizeBytes: f.Size}
	if t.links != nil {
		if u, _, err := t.links.URL(f.ID); err == nil {
			ref.URL = u
		} else {
			t.log.Warn("screenshot stored without a link", "fileId", f.ID, "error", err)
		}
	}
	res.File = ref
	return res, nil
}
