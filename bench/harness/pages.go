package harness

import (
	"fmt"
	"strings"
)

// Paths of the MCP scenario's pages (served by StartFixtures).
const (
	PageForm    = "/form"
	PageArticle = "/article"
	PageBig     = "/big"
	// PageTools and PageTools2 are the new tools' pages (§8); PageDownload
	// is the file the tools page's download link fetches.
	PageTools    = "/tools"
	PageTools2   = "/tools2"
	PageDownload = "/file.bin"
)

// ArticleWords and BigElements size the two large pages.
const (
	ArticleWords = 3000
	BigElements  = 5000
)

// FormResult is what the form page shows in #out once its button is
// clicked after typing FormText.
const (
	FormText   = "hello bench"
	FormResult = "Saved: hello bench"
)

// mcpPages returns path → HTML of the scenario's pages: a form with one
// labelled text field and a button that writes the field's value into #out
// (no navigation); an article of ArticleWords words in headed paragraphs;
// and a page of BigElements elements (a table of rows with a link and a
// button each, plus filler spans).
func mcpPages() map[string]string {
	form := `<!doctype html><html><head><title>bench form</title></head><body>
<h1>Profile</h1>
<label for="name">Display name</label> <input id="name" type="text">
<button id="apply" type="button" onclick="document.getElementById('out').textContent='Saved: '+document.getElementById('name').value">Apply</button>
<p id="out">nothing yet</p>
</body></html>`

	words := strings.Fields("the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxing matches " +
		"near old harbour walls where merchants trade copper silk and amber under grey northern skies")
	var a strings.Builder
	a.WriteString("<!doctype html><html><head><title>bench article</title></head><body><article><h1>A long article</h1>\n")
	for i, n := 0, 0; n < ArticleWords; i++ {
		if i%5 == 0 {
			fmt.Fprintf(&a, "<h2>Section %d</h2>\n", i/5+1)
		}
		a.WriteString("<p>")
		for j := 0; j < 60 && n < ArticleWords; j++ {
			if j > 0 {
				a.WriteByte(' ')
			}
			a.WriteString(words[(n*7+i)%len(words)])
			n++
		}
		a.WriteString(".</p>\n")
	}
	a.WriteString("</article></body></html>")

	var g strings.Builder
	g.WriteString("<!doctype html><html><head><title>bench big</title></head><body><h1>Many elements</h1><table>\n")
	// Each row: tr, 3 td, a, button, span = 7 elements.
	rows := (BigElements - 10) / 7
	for i := range rows {
		fmt.Fprintf(&g, "<tr><td>row %d</td><td><a href=\"#r%d\">item %d</a></td><td><button type=\"button\">act %d</button><span> ok</span></td></tr>\n", i, i, i, i)
	}
	g.WriteString("</table></body></html>")
	return map[string]string{PageForm: form, PageArticle: a.String(), PageBig: g.String(), PageTools: toolsPage,
		PageTools2: `<!doctype html><html><head><title>bench tools 2</title></head><body><h1>Second page</h1></body></html>`}
}

// toolsPage is the new tools' page: a form (text, select, checkbox), a drag
// source and a drop zone, a button that raises an alert, a file input, a
// download link; it logs to the console as it loads.
const toolsPage = `<!doctype html><html><head><title>bench tools</title></head><body>
<h1>Tools</h1>
<form onsubmit="return false">
<label for="name">Display name</label> <input id="name" type="text">
<label for="color">Colour</label> <select id="color"><option>red</option><option>green</option></select>
<label><input id="agree" type="checkbox"> Agree</label>
</form>
<div id="src" draggable="true" role="button" aria-label="Drag me" style="width:80px;height:40px;background:#9cf">Drag me</div>
<div id="dst" role="region" aria-label="Drop zone" style="width:160px;height:80px;border:1px solid #000">Drop zone</div>
<p id="dropped">not dropped</p>
<button id="alert" type="button" onclick="alert('hello bench')">Alert</button>
<label for="file">Attachment</label> <input id="file" type="file">
<a id="dl" href="` + PageDownload + `" download="bench.bin">Download file</a>
<script>
console.log('bench tools page loaded'); console.warn('bench tools warning');
const src = document.getElementById('src'), dst = document.getElementById('dst');
src.addEventListener('dragstart', e => e.dataTransfer.setData('text/plain', 'x'));
dst.addEventListener('dragover', e => e.preventDefault());
dst.addEventListener('drop', e => { e.preventDefault(); document.getElementById('dropped').textContent = 'dropped'; });
</script>
</body></html>`
