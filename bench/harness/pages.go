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
	return map[string]string{PageForm: form, PageArticle: a.String(), PageBig: g.String()}
}
