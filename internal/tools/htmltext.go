package tools

import (
	"bytes"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// maxHTMLDepth bounds how deep the renderer descends, so a hostile page of
// nested elements cannot make it recurse without end.
const maxHTMLDepth = 256

// skipped are elements whose content is not readable page text.
var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Svg: true,
	atom.Head: true, atom.Nav: true, atom.Footer: true, atom.Form: true,
	atom.Iframe: true, atom.Template: true, atom.Object: true, atom.Embed: true,
	atom.Canvas: true, atom.Title: true, atom.Math: true,
}

// blocks are elements that start and end a line.
var blocks = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true,
	atom.Body: true, atom.Center: true, atom.Dd: true, atom.Details: true,
	atom.Dialog: true, atom.Div: true, atom.Dl: true, atom.Dt: true,
	atom.Fieldset: true, atom.Figcaption: true, atom.Figure: true, atom.Header: true,
	atom.Hgroup: true, atom.Hr: true, atom.Html: true, atom.Main: true,
	atom.Ol: true, atom.P: true, atom.Pre: true, atom.Section: true,
	atom.Summary: true, atom.Table: true, atom.Tbody: true, atom.Thead: true,
	atom.Tfoot: true, atom.Tr: true, atom.Ul: true, atom.Caption: true,
}

// spaced are blocks set off by a blank line.
var spaced = map[atom.Atom]bool{
	atom.P: true, atom.Pre: true, atom.Blockquote: true, atom.Table: true,
	atom.Figure: true,
}

var headingLevel = map[atom.Atom]int{
	atom.H1: 1, atom.H2: 2, atom.H3: 3, atom.H4: 4, atom.H5: 5, atom.H6: 6,
}

// tokensToText is the fallback for pages the HTML parser refuses (it gives
// up on elements nested more than 512 deep): it keeps the text, breaks
// lines at block elements and drops scripts, styles and the like, without
// building a tree. Links are not resolved.
func tokensToText(data []byte) (title, text string) {
	z := html.NewTokenizer(bytes.NewReader(data))
	w := &textWriter{}
	skip, inTitle := 0, false
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			w.flush()
			return title, strings.Join(w.lines, "\n")
		case html.TextToken:
			switch {
			case inTitle:
				if title == "" {
					title = collapse(string(z.Text()))
				}
			case skip == 0:
				w.text(string(z.Text()))
			}
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			switch {
			case a == atom.Title:
				inTitle = tt == html.StartTagToken
			case tokenSkipped[a]:
				if tt == html.StartTagToken {
					skip++
				} else if tt == html.EndTagToken && skip > 0 {
					skip--
				}
			case blocks[a] || headingLevel[a] > 0 || a == atom.Li || a == atom.Br:
				w.flush()
			}
		}
	}
}

// tokenSkipped are the elements tokensToText drops: those whose end tag
// reliably follows.
var tokenSkipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Svg: true,
	atom.Template: true, atom.Iframe: true, atom.Math: true,
}

// htmlToText turns a parsed HTML document into readable text: headings
// become lines starting with #, paragraphs and list items become lines
// (list items starting with "- "), links become "text (absolute URL)", and
// scripts, styles, navigation, footers, forms and the like are dropped.
// It returns the page title separately. base is the page URL, against
// which relative links are resolved (a <base href> in the page wins).
func htmlToText(doc *html.Node, base *url.URL) (title, text string) {
	title = collapse(textOf(find(doc, atom.Title)))
	if b := find(doc, atom.Base); b != nil && base != nil {
		if href, ok := attr(b, "href"); ok {
			if u, err := base.Parse(strings.TrimSpace(href)); err == nil {
				base = u
			}
		}
	}
	w := &textWriter{base: base}
	w.render(doc, 0)
	w.flush()
	return title, strings.Join(w.lines, "\n")
}

// textWriter accumulates lines of text.
type textWriter struct {
	base      *url.URL
	lines     []string
	line      strings.Builder
	prefix    string // written before the next non-empty line
	space     bool   // a space is pending before the next word
	blank     bool   // a blank line is pending before the next line
	pre       int    // depth inside <pre>
	listDepth int
	breaks    int // times the current line was ended, to notice breaks inside a link
}

func (w *textWriter) render(n *html.Node, depth int) {
	if depth > maxHTMLDepth {
		return
	}
	switch n.Type {
	case html.TextNode:
		w.text(n.Data)
		return
	case html.DocumentNode:
		w.children(n, depth)
		return
	case html.ElementNode:
	default:
		return
	}
	if skipped[n.DataAtom] || hidden(n) {
		return
	}
	switch a := n.DataAtom; {
	case headingLevel[a] > 0:
		w.flush()
		w.blank = true
		w.prefix = strings.Repeat("#", headingLevel[a]) + " "
		w.children(n, depth)
		w.flush()
		w.prefix = ""
		w.blank = true
	case a == atom.Li:
		w.flush()
		w.prefix = strings.Repeat("  ", max(w.listDepth-1, 0)) + "- "
		w.children(n, depth)
		w.flush()
		w.prefix = ""
	case a == atom.Ul || a == atom.Ol:
		w.flush()
		w.listDepth++
		w.children(n, depth)
		w.listDepth--
		w.flush()
	case a == atom.Br:
		w.flush()
	case a == atom.Td || a == atom.Th:
		if strings.TrimSpace(w.line.String()) != "" {
			w.line.WriteString(" | ")
			w.space = false
		}
		w.children(n, depth)
		w.space = true
	case a == atom.A:
		w.link(n, depth)
	case a == atom.Pre:
		w.flush()
		w.blank = true
		w.pre++
		w.children(n, depth)
		w.pre--
		w.flush()
		w.blank = true
	case blocks[a]:
		w.flush()
		if spaced[a] {
			w.blank = true
		}
		w.children(n, depth)
		w.flush()
		if spaced[a] {
			w.blank = true
		}
	default:
		w.children(n, depth)
	}
}

func (w *textWriter) children(n *html.Node, depth int) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.render(c, depth+1)
	}
}

// link writes the link text followed by its absolute target in
// parentheses, unless the target is a script, a fragment of this page or
// the same as the text.
func (w *textWriter) link(n *html.Node, depth int) {
	start, breaks, lines := w.line.Len(), w.breaks, len(w.lines)
	w.children(n, depth)
	href, ok := attr(n, "href")
	if !ok {
		return
	}
	target := w.resolve(href)
	if target == "" {
		return
	}
	if w.breaks != breaks && strings.TrimSpace(w.line.String()) == "" {
		// The link wrapped whole blocks (a card, a heading): name the
		// target after the last line it produced, if any.
		if last := len(w.lines) - 1; len(w.lines) > lines && w.lines[last] != "" {
			w.lines[last] += " (" + target + ")"
		}
		return
	}
	text := strings.TrimSpace(w.line.String())
	if w.breaks == breaks {
		text = strings.TrimSpace(w.line.String()[start:])
	}
	if text == "" || text == target || strings.TrimSuffix(target, "/") == text {
		return
	}
	w.space = true
	w.word("(" + target + ")")
}

// resolve returns the absolute http(s) or mailto URL of href, or "" when
// the link is not worth showing.
func (w *textWriter) resolve(href string) string {
	href = strings.TrimSpace(href)
	if href == "" || strings.HasPrefix(href, "#") {
		return ""
	}
	u, err := url.Parse(href)
	if err != nil {
		return ""
	}
	if w.base != nil {
		u = w.base.ResolveReference(u)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "mailto":
		return u.String()
	}
	return ""
}

// text writes a text node, collapsing whitespace outside <pre>.
func (w *textWriter) text(s string) {
	if w.pre > 0 {
		for i, part := range strings.Split(s, "\n") {
			if i > 0 {
				w.emit(strings.TrimRight(w.line.String(), " \t\r"), true)
			}
			w.line.WriteString(strings.ReplaceAll(part, "\r", ""))
		}
		return
	}
	words := strings.Fields(s)
	if len(words) == 0 {
		if s != "" {
			w.space = true
		}
		return
	}
	if startsWithSpace(s) {
		w.space = true
	}
	for _, word := range words {
		w.word(word)
		w.space = true
	}
	w.space = endsWithSpace(s)
}

// word appends one word, preceded by a space when one is pending.
func (w *textWriter) word(word string) {
	if w.space && w.line.Len() > 0 {
		w.line.WriteByte(' ')
	}
	w.line.WriteString(word)
	w.space = false
}

// flush ends the current line.
func (w *textWriter) flush() {
	if w.pre > 0 {
		if w.line.Len() > 0 {
			w.emit(strings.TrimRight(w.line.String(), " \t\r"), true)
		}
		return
	}
	w.emit(strings.TrimSpace(w.line.String()), false)
}

// emit appends a line. Empty lines are dropped unless keepEmpty (inside
// <pre>); pending blank lines are written only between lines.
func (w *textWriter) emit(s string, keepEmpty bool) {
	w.breaks++
	w.line.Reset()
	w.space = false
	if s == "" && !keepEmpty {
		return
	}
	if w.blank && len(w.lines) > 0 && w.lines[len(w.lines)-1] != "" {
		w.lines = append(w.lines, "")
	}
	w.blank = false
	if s == "" && len(w.lines) > 0 && w.lines[len(w.lines)-1] == "" {
		return // never two blank lines in a row
	}
	w.lines = append(w.lines, w.prefix+s)
	w.prefix = ""
}

func startsWithSpace(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsSpace(r)
}

func endsWithSpace(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return unicode.IsSpace(r)
}

// hidden reports whether the page marks n as not shown.
func hidden(n *html.Node) bool {
	if _, ok := attr(n, "hidden"); ok {
		return true
	}
	v, _ := attr(n, "aria-hidden")
	return strings.EqualFold(v, "true")
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// find returns the first element with atom a in document order, skipping
// <svg> and <math>, whose <title> is not the page's.
func find(n *html.Node, a atom.Atom) *html.Node {
	return findDepth(n, a, 0)
}

func findDepth(n *html.Node, a atom.Atom, depth int) *html.Node {
	if depth > maxHTMLDepth {
		return nil
	}
	if n.Type == html.ElementNode && n.DataAtom == a {
		return n
	}
	if n.Type == html.ElementNode && (n.DataAtom == atom.Svg || n.DataAtom == atom.Math) {
		return nil
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := findDepth(c, a, depth+1); f != nil {
			return f
		}
	}
	return nil
}

// textOf returns the concatenated text below n.
func textOf(n *html.Node) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// collapse joins the words of s with single spaces.
func collapse(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
