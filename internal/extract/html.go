package extract

import (
	"strings"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
)

// maxHTMLDepth bounds how deep elements are rendered: deeper ones lose
// their content, so a hostile file cannot make the converter, which
// recurses, work without end.
const maxHTMLDepth = 256

// droppedTags hold no readable text of a document, beyond those the
// converter drops itself (scripts, styles, iframes, inputs).
var droppedTags = []string{"nav", "form", "svg", "math", "template", "object", "embed", "canvas", "img"}

// markdown renders HTML as Markdown, which keeps headings, lists and
// tables. It is safe for concurrent use.
var markdown = MarkdownConverter(droppedTags...)

// MarkdownConverter returns a converter of HTML to Markdown, which keeps
// the headings, lists, links and tables a model reads well, leaves out a
// link without text, and drops the elements of the tags dropped, content
// and all, beyond those it drops itself (scripts, styles, iframes,
// inputs). It is safe for concurrent use.
func MarkdownConverter(dropped ...string) *converter.Converter {
	conv := converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(
			commonmark.WithListEndComment(false),
			commonmark.WithLinkEmptyContentBehavior(commonmark.LinkBehaviorSkip),
		),
		table.NewTablePlugin(),
	))
	for _, tag := range dropped {
		conv.Register.TagType(tag, converter.TagTypeRemove, converter.PriorityStandard)
	}
	return conv
}

// htmlText renders an HTML document's text as Markdown.
func htmlText(src string) (string, error) {
	doc, err := html.Parse(strings.NewReader(src))
	if err != nil {
		return "", invalid("cannot parse the HTML: %v", err)
	}
	prune(doc)
	md, err := markdown.ConvertNode(doc)
	if err != nil {
		return "", invalid("cannot render the HTML: %v", err)
	}
	return strings.ReplaceAll(string(md), "\u00a0", " "), nil
}

// prune removes the children of elements nested deeper than maxHTMLDepth,
// without recursion.
func prune(root *html.Node) {
	type item struct {
		n     *html.Node
		depth int
	}
	stack := []item{{root, 0}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.depth >= maxHTMLDepth {
			for c := it.n.FirstChild; c != nil; {
				next := c.NextSibling
				it.n.RemoveChild(c)
				c = next
			}
			continue
		}
		for c := it.n.FirstChild; c != nil; c = c.NextSibling {
			stack = append(stack, item{c, it.depth + 1})
		}
	}
}
