package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

const uploadBody = `<input type=file id=f multiple onchange="Promise.all([...this.files].map(f=>f.text().then(t=>f.name+'='+t))).then(v=>out.textContent=v.join(','))">` +
	`<input type=file id=h hidden onchange="this.files[0].text().then(t=>out.textContent='hidden:'+t)">` +
	`<div id=zone style="width:100px;height:50px" ondragover="event.preventDefault()" ` +
	`ondrop="event.preventDefault(); event.dataTransfer.files[0].text().then(t=>out.textContent='dropped:'+t)">drop here</div>` +
	// A button that opens the chooser of an input that is in no document.
	`<button id=pick onclick="const i=document.createElement('input'); i.type='file'; ` +
	`i.onchange=()=>i.files[0].text().then(t=>out.textContent='picked:'+t); i.click()">Choose a file</button>`

func filesAreUploaded(t *testing.T, _ string, tl0 *tools.Tools, inv browserbackend.Invocation) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.txt"), []byte("beta"), 0o600))
	outside := filepath.Join(t.TempDir(), "secret.txt")
	require.NoError(t, os.WriteFile(outside, []byte("secret"), 0o600))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link.txt")))

	tl := tools.New(tools.Options{Selector: tl0.Selector(), UploadDir: dir, Logger: quietLogger()})
	t.Cleanup(tl.Shutdown)
	dialogPage := dialogSite(t)
	ctx := stepCtx(t)
	_, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: dialogPage(uploadBody)})
	require.NoError(t, err)
	wait := func(text string) {
		t.Helper()
		_, err := tl.Read().WaitFor(ctx, inv, tools.WaitForInput{Text: text})
		require.NoError(t, err, "the page read %q", text)
	}

	res, err := tl.Act().FileUpload(ctx, inv, tools.FileUploadInput{Target: tools.Target{Selector: "#f"}, Paths: []string{"a.txt", "b.txt"}})
	require.NoError(t, err)
	assert.False(t, res.Dropped)
	require.Len(t, res.Files, 2)
	assert.Equal(t, tools.UploadedFile{Name: "a.txt", Size: 5, Type: "text/plain; charset=utf-8"}, res.Files[0])
	wait("a.txt=alpha,b.txt=beta")

	_, err = tl.Act().FileUpload(ctx, inv, tools.FileUploadInput{Target: tools.Target{Selector: "#h"}, Paths: []string{"b.txt"}})
	require.NoError(t, err, "a hidden input")
	wait("hidden:beta")

	res, err = tl.Act().FileUpload(ctx, inv, tools.FileUploadInput{Target: tools.Target{Selector: "#zone"}, Paths: []string{"a.txt"}})
	require.NoError(t, err, "a drop zone")
	assert.True(t, res.Dropped)
	wait("dropped:alpha")

	clicked, err := tl.Act().Click(ctx, inv, tools.ElementInput{Target: tools.Target{Selector: "#pick"}})
	require.NoError(t, err)
	require.NotNil(t, clicked.FileChooser, "the click reports the chooser it opened")
	assert.False(t, clicked.FileChooser.Multiple)
	res, err = tl.Act().FileUpload(ctx, inv, tools.FileUploadInput{Target: tools.Target{Selector: "#pick"}, Paths: []string{"a.txt"}})
	require.NoError(t, err, "a button that opens a file chooser")
	assert.True(t, res.Chooser)
	assert.False(t, res.Dropped)
	wait("picked:alpha")

	for _, bad := range []string{"link.txt", "../" + filepath.Base(filepath.Dir(outside)) + "/secret.txt", outside} {
		_, err = tl.Act().FileUpload(ctx, inv, tools.FileUploadInput{Target: tools.Target{Selector: "#f"}, Paths: []string{bad}})
		require.ErrorIs(t, err, tools.ErrForbidden, "%s is outside the upload directory", bad)
	}
	_, err = tl.Act().FileUpload(ctx, inv, tools.FileUploadInput{Target: tools.Target{Selector: "#h"}, Paths: []string{"a.txt", "b.txt"}})
	require.ErrorIs(t, err, &tools.Error{Code: tools.CodePageError}, "one file for a single input")
	ex, err := tl.Read().Extract(ctx, inv, tools.ExtractInput{Target: tools.Target{Selector: "#out"}})
	require.NoError(t, err)
	assert.False(t, strings.Contains(ex.Text, "secret"), "nothing from outside reached the page")
}

func TestFileUploadNeedsAnUploadDir(t *testing.T) {
	sel := browserbackend.NewSelector(browserbackend.Options{Logger: quietLogger()})
	tl := tools.New(tools.Options{Selector: sel, Logger: quietLogger()})
	_, err := tl.Act().FileUpload(stepCtx(t), browserbackend.Invocation{ConversationID: "c", InterfaceID: "cli"},
		tools.FileUploadInput{Target: tools.Target{Selector: "#f"}, Paths: []string{"a.txt"}})
	require.ErrorIs(t, err, tools.ErrFeatureNotConfigured)
}
