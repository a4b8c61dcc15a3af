package tools

import (
	"bytes"
	"net/url"
	"strings"

	"github.com/JohannesKaufmann/dom"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/longhaul-dev/longhaul/internal/extract"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// maxHTMLDepth bounds how deep a page is rendered: elements nested deeper
// lose their content, so a hostile page cannot make the converter, which
// recurses, work without end.
const maxHTMLDepth = 256

// maxMarkdownNesting bounds how deep quotes, lists and tables nest in the
// Markdown. Each level repeats a prefix on every line inside it, so deeper
// nesting makes the output, and the converter's work, grow with the square
// of the depth; real pages rarely nest these more than a few levels.
const maxMarkdownNesting = 8

// nesting are the elements whose Markdown nests: quotes, lists and tables
// and their parts.
var nesting = map[string]bool{
	"blockquote": true, "ul": true, "ol": true, "li": true, "dl": true, "dd": true, "dt": true,
	"table": true, "caption": true, "thead": true, "tbody": true, "tfoot": true, "tr": true, "td": true, "th": true,
}

// dropped are elements whose content is not readable page text, beyond
// those the converter drops itself (scripts, styles, iframes, inputs).
var dropped = []string{
	"nav", "footer", "form", "svg", "math", "template", "object", "embed",
	"canvas", "title", "img",
}

// markdown renders HTML as Markdown, which keeps the headings, lists, links
// and tables a model reads well. A link without text (an image, once
// images are dropped) is left out. It is safe for concurrent use.
var markdown = extract.MarkdownConverter(dropped...)

// htmlToMarkdown renders n (a document or an element) as Markdown, with
// relative links made absolute against base. It changes n, through prune.
func htmlToMarkdown(n *html.Node, base *url.URL) (string, error) {
	prune(n, base)
	var opts []converter.ConvertOptionFunc
	if base != nil {
		opts = append(opts, converter.WithDomain(base.String()))
	}
	md, err := markdown.ConvertNode(n, opts...)
	if err != nil {
		return "", err
	}
	// No-break spaces keep words apart on a screen, not for a model.
	return strings.ReplaceAll(string(md), "\u00a0", " "), nil
}

// prune readies n for the converter, without recursion: it removes
// elements the page hides and the content of elements nested deeper than
// maxHTMLDepth, turns links that lead nowhere a reader can follow (a
// fragment of this page, a script) into plain text, and flattens quotes,
// lists and tables nested more than maxMarkdownNesting deep into plain
// blocks.
func prune(n *html.Node, base *url.URL) {
	type item struct {
		n             *html.Node
		depth, nested int
	}
	stack := []item{{n, 0, 0}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		e := it.n
		if e.Type == html.ElementNode && e.Parent != nil && hidden(e) {
			e.Parent.RemoveChild(e)
			continue
		}
		if it.depth >= maxHTMLDepth {
			for c := e.FirstChild; c != nil; c = e.FirstChild {
				e.RemoveChild(c)
			}
			continue
		}
		nested := it.nested
		switch {
		case e.Type != html.ElementNode:
		case e.Data == "a" && !followable(e, base):
			e.Data, e.DataAtom, e.Attr = "span", atom.Span, nil
		case nesting[e.Data] && nested >= maxMarkdownNesting:
			e.Data, e.DataAtom = "div", atom.Div
		case nesting[e.Data]:
			nested++
		}
		for c := e.FirstChild; c != nil; c = c.NextSibling {
			stack = append(stack, item{c, it.depth + 1, nested})
		}
	}
}

// hidden reports whether the page marks n as not shown.
func hidden(n *html.Node) bool {
	if _, ok := dom.GetAttribute(n, "hidden"); ok {
		return true
	}
	v, _ := dom.GetAttribute(n, "aria-hidden")
	return strings.EqualFold(v, "true")
}

// followable reports whether link a leads to a web page or a mail address
// other than a place on this page.
func followable(a *html.Node, base *url.URL) bool {
	href, _ := dom.GetAttribute(a, "href")
	href = strings.TrimSpace(href)
	u, err := url.Parse(href)
	if href == "" || strings.HasPrefix(href, "#") || err != nil {
		return false
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "mailto":
		return true
	}
	return false
}

// pageBase returns the URL the links of doc are relative to: its
// <base href>, resolved against the page URL, or else the page URL.
func pageBase(doc *html.Node, page *url.URL) *url.URL {
	b := dom.FindFirstNode(doc, isElement(atom.Base))
	if b == nil || page == nil {
		return page
	}
	href, ok := dom.GetAttribute(b, "href")
	if !ok {
		return page
	}
	if u, err := page.Parse(strings.TrimSpace(href)); err == nil {
		return u
	}
	return page
}

// pageTitle returns the text of the page's <title>, not that of an <svg>
// inside it.
func pageTitle(doc *html.Node) string {
	t := dom.FindFirstNode(doc, isElement(atom.Title))
	if t == nil {
		return ""
	}
	return collapse(dom.CollectText(t))
}

// isElement matches HTML (not SVG or MathML) elements of type a.
func isElement(a atom.Atom) func(*html.Node) bool {
	return func(n *html.Node) bool {
		return n.Type == html.ElementNode && n.DataAtom == a && n.Namespace == ""
	}
}

// tokensToText is the fallback for pages the HTML parser refuses (it gives
// up on elements nested more than 512 deep): it keeps the text, breaks
// lines at block elements and drops scripts, styles and the like, without
// building a tree. Links are not kept.
func tokensToText(data []byte) (title, text string) {
	z := html.NewTokenizer(bytes.NewReader(data))
	var b strings.Builder
	skip, inTitle := 0, false
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			var lines []string
			for line := range strings.SplitSeq(b.String(), "\n") {
				if line = collapse(line); line != "" {
					lines = append(lines, line)
				}
			}
			return title, strings.Join(lines, "\n")
		case html.TextToken:
			switch {
			case inTitle:
				if title == "" {
					title = collapse(string(z.Text()))
				}
			case skip == 0:
				b.Write(z.Text())
			}
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			raw, _ := z.TagName()
			switch name := string(raw); {
			case name == "title":
				inTitle = tt == html.StartTagToken
			case tokenSkipped[name]:
				if tt == html.StartTagToken {
					skip++
				} else if tt == html.EndTagToken && skip > 0 {
					skip--
				}
			case dom.NameIsBlockNode(name) || name == "br" || name == "tr":
				b.WriteByte('\n')
			}
		}
	}
}

// tokenSkipped are the elements tokensToText drops: those whose end tag
// reliably follows.
var tokenSkipped = map[string]bool{
	"script": true, "style": true, "noscript": true, "svg": true,
	"template": true, "iframe": true, "math": true,
}

// collapse joins the words of s with single spaces.
func collapse(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
