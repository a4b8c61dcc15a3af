package tools

import (
	"bytes"
	"net/url"
	"strings"
	"time"

	readability "codeberg.org/readeck/go-readability"
	"golang.org/x/net/html"

	"github.com/longhaul-dev/longhaul/internal/textcut"
)

// readablePage is what web_fetch makes of an HTML page.
type readablePage struct {
	Title     string
	Byline    string
	Published time.Time
	Text      string
}

// maxBylineChars bounds the author line, which pages fill with all sorts.
const maxBylineChars = 200

// Readability's work grows with the nesting depth times the amount of
// text, so documents beyond these bounds (real pages nest a few dozen
// levels deep) skip it and are rendered whole.
const (
	maxReadabilityDepth    = 128
	maxReadabilityElements = 100000
)

// htmlPageText extracts the readable text of an HTML page (data is UTF-8)
// as Markdown. The main content is found with go-readability, a port of
// Mozilla's Readability.js that drops navigation, sidebars, comments and
// the like, and rendered by htmlToMarkdown so that headings, lists and
// links survive. When readability finds nothing (or fails), the whole page
// is rendered, htmlToMarkdown dropping scripts, navigation and footers
// itself; a page the HTML parser refuses goes token by token.
func htmlPageText(data []byte, page *url.URL) (readablePage, error) {
	doc, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		title, text := tokensToText(data)
		return readablePage{Title: title, Text: text}, nil
	}
	base := pageBase(doc, page)
	title := pageTitle(doc)
	if article, ok := readArticle(doc, base); ok {
		text, err := htmlToMarkdown(article.Node, base)
		if err != nil {
			return readablePage{}, err
		}
		if strings.TrimSpace(text) != "" {
			p := readablePage{Title: collapse(article.Title), Text: text}
			if p.Title == "" {
				p.Title = title
			}
			p.Byline = textcut.Ellipsis(collapse(article.Byline), maxBylineChars)
			if article.PublishedTime != nil {
				p.Published = *article.PublishedTime
			}
			return p, nil
		}
	}
	text, err := htmlToMarkdown(doc, base)
	return readablePage{Title: title, Text: text}, err
}

// readArticle runs readability on a copy of doc, which stays as it was.
// Documents too deep or too large for it, and a panic inside the library
// on a hostile page, count as finding nothing.
func readArticle(doc *html.Node, base *url.URL) (article readability.Article, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	if depth, elements := docShape(doc); depth > maxReadabilityDepth || elements > maxReadabilityElements {
		return readability.Article{}, false
	}
	parser := readability.NewParser()
	article, err := parser.ParseDocument(doc, base)
	if err != nil || article.Node == nil {
		return readability.Article{}, false
	}
	return article, true
}

// docShape returns how deep elements nest in doc and how many there are,
// without recursion.
func docShape(doc *html.Node) (depth, elements int) {
	type item struct {
		n     *html.Node
		depth int
	}
	stack := []item{{doc, 0}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.n.Type == html.ElementNode {
			elements++
			depth = max(depth, it.depth)
		}
		for c := it.n.FirstChild; c != nil; c = c.NextSibling {
			stack = append(stack, item{c, it.depth + 1})
		}
	}
	return depth, elements
}
