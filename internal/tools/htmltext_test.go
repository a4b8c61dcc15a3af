package tools

import (
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func render(t *testing.T, page string) (string, string) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse("https://example.com/docs/page.html")
	title := pageTitle(doc)
	text, err := htmlToMarkdown(doc, pageBase(doc, base))
	if err != nil {
		t.Fatal(err)
	}
	return title, text
}

func TestHTMLToText(t *testing.T) {
	tests := []struct {
		name      string
		page      string
		wantTitle string
		want      string
	}{
		{
			name:      "article",
			page:      `<html><head><title> My   Page </title><style>p{}</style></head><body><h1>Hello</h1><p>First   para<br>second line</p><h2>Sub <em>head</em></h2><p>Text</p></body></html>`,
			wantTitle: "My Page",
			want:      "# Hello\n\nFirst para  \nsecond line\n\n## Sub *head*\n\nText",
		},
		{
			name: "lists",
			page: `<ul><li>one</li><li>two<ul><li>inner</li></ul></li></ul><ol><li>first</li></ol>`,
			want: "- one\n- two\n  \n  - inner\n\n1. first",
		},
		{
			name: "links",
			page: `<p>See <a href="/about">about us</a>, <a href="https://other.org/x">other</a>, <a href="#top">top</a>, <a href="javascript:alert(1)">js</a>, <a href="https://same.org/">https://same.org</a> and <a href="mailto:a@b.c">mail</a>.</p>`,
			want: "See [about us](https://example.com/about), [other](https://other.org/x), top, js, [https://same.org](https://same.org/) and [mail](mailto:a@b.c).",
		},
		{
			name: "relative link",
			page: `<a href="next.html">Next</a>`,
			want: "[Next](https://example.com/docs/next.html)",
		},
		{
			name: "base href",
			page: `<html><head><base href="https://cdn.example.net/root/"></head><body><a href="x">X</a></body></html>`,
			want: "[X](https://cdn.example.net/root/x)",
		},
		{
			name: "card link",
			page: `<p>Before</p><a href="/card"><div><h3>Card title</h3></div></a><a href="/img"><div><img src="a.png"></div></a>`,
			want: "Before\n\n[**Card title**](https://example.com/card)",
		},
		{
			name: "dropped elements",
			page: `<body><nav>Menu</nav><script>var x = "secret";</script><noscript>enable js</noscript><p>Kept</p><svg><title>icon</title><text>svg text</text></svg><form><input value="q"><button>Go</button></form><iframe src="x">frame</iframe><footer>Copyright</footer><template>tpl</template><div hidden>hid</div><span aria-hidden="true">aria</span></body>`,
			want: "Kept",
		},
		{
			name: "whitespace",
			page: "<p>  a \n\t b&nbsp;c   </p><p><b>bold</b>text <i>x</i> y</p><div>\n\n</div><p></p>",
			want: "a b c\n\n**bold**text *x* y",
		},
		{
			name: "pre keeps lines",
			page: "<p>Code:</p><pre>func f() {\n    return 1\n}</pre><p>after</p>",
			want: "Code:\n\n```\nfunc f() {\n    return 1\n}\n```\n\nafter",
		},
		{
			name: "table",
			page: `<table><tr><th>Name</th><th>Age</th></tr><tr><td>Ann</td><td>30</td></tr></table>`,
			want: "| Name | Age |\n|------|-----|\n| Ann  | 30  |",
		},
		{
			name:      "no title, empty body",
			page:      `<html><body></body></html>`,
			wantTitle: "",
			want:      "",
		},
		{
			name: "svg title is not the page title",
			page: `<body><svg><title>icon</title></svg><p>x</p></body>`,
			want: "x",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			title, text := render(t, tt.page)
			if title != tt.wantTitle {
				t.Errorf("title = %q, want %q", title, tt.wantTitle)
			}
			if text != tt.want {
				t.Errorf("text =\n%s\nwant\n%s", text, tt.want)
			}
		})
	}
}

func TestHTMLToTextDeepNesting(t *testing.T) {
	// The parser gives up past 512 open elements; the token fallback
	// still returns the text.
	page := "<title>Deep</title><script>var s = 1;</script>" + strings.Repeat("<div>", 5000) + "deep" + strings.Repeat("</div>", 5000) + "<p>shallow <b>text</b></p>"
	base, _ := url.Parse("https://example.com/")
	p := pageText(t, page, base)
	if p.Title != "Deep" || p.Text != "deep\nshallow text" {
		t.Errorf("htmlPageText = %q, %q; want %q, %q", p.Title, p.Text, "Deep", "deep\nshallow text")
	}

	// Nesting the parser accepts but the converter is not given whole
	// still renders what is not too deep, without recursing without end.
	page = strings.Repeat("<span>", 400) + "inner" + strings.Repeat("</span>", 400) + "<p>outer</p>"
	if p := pageText(t, page, base); !strings.Contains(p.Text, "outer") || strings.Contains(p.Text, "inner") {
		t.Errorf("text = %q, want the outer paragraph and not what is nested %d deep", p.Text, 400)
	}
}

func TestHTMLToTextNestingBound(t *testing.T) {
	// Quotes, lists and tables nested deeper than maxMarkdownNesting keep
	// their text but no further Markdown prefix, so the output grows with
	// the page, not with the square of its depth.
	const levels = 3 * maxMarkdownNesting
	tests := []struct{ name, open, close, marker string }{
		{"quotes", "<blockquote>q", "</blockquote>", ">"},
		{"lists", "<ul><li>q", "</li></ul>", "-"},
		{"tables", "<table><tr><td>q", "</td></tr></table>", "|"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, text := render(t, strings.Repeat(tt.open, levels)+strings.Repeat(tt.close, levels))
			if n := strings.Count(text, "q"); n != levels {
				t.Errorf("text =\n%s\nhas %d of the %d nested texts", text, n, levels)
			}
			for line := range strings.SplitSeq(text, "\n") {
				if n := strings.Count(line, tt.marker); n > 2*maxMarkdownNesting {
					t.Errorf("line %q has %d %q markers, want at most %d", line, n, tt.marker, 2*maxMarkdownNesting)
				}
			}
		})
	}
}

func TestDocShape(t *testing.T) {
	doc, err := html.Parse(strings.NewReader("<p>a</p>" + strings.Repeat("<div>", 10) + "x" + strings.Repeat("</div>", 10)))
	if err != nil {
		t.Fatal(err)
	}
	// html, head, body, p, 10 divs; the innermost div is html > body > 10 divs.
	if depth, elements := docShape(doc); depth != 12 || elements != 14 {
		t.Errorf("docShape = %d, %d; want 12, 14", depth, elements)
	}
}

func TestHTMLPageTextSkipsReadabilityWhenTooDeep(t *testing.T) {
	// Too deep for readability: the whole page is rendered, navigation
	// still dropped by htmlToText.
	page := "<title>T</title><nav>menu</nav>" + strings.Repeat("<div>", maxReadabilityDepth) + "<p>deep text</p>" + strings.Repeat("</div>", maxReadabilityDepth)
	base, _ := url.Parse("https://example.com/")
	p := pageText(t, page, base)
	if p.Title != "T" || strings.Contains(p.Text, "menu") || !strings.Contains(p.Text, "deep text") {
		t.Errorf("htmlPageText = %+v, want title T and no navigation", p)
	}
}

func pageText(t *testing.T, page string, base *url.URL) readablePage {
	t.Helper()
	p, err := htmlPageText([]byte(page), base)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
