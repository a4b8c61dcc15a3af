package extract

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ledongthuc/pdf"
)

// extractPDF reads a PDF page by page. The file is spooled to a temporary
// file (the reader needs random access; memory holds none of it), the
// streams text extraction interprets are inflated and scanned once against
// the limits before any text is read (see checker), and the library's
// panics on malformed input become invalid_file.
func extractPDF(r io.Reader, l Limits) (Document, error) {
	f, err := os.CreateTemp("", "longhaul-extract-*.pdf")
	if err != nil {
		return Document{}, fmt.Errorf("spool pdf: %w", err)
	}
	defer func() { _ = f.Close(); _ = os.Remove(f.Name()) }()
	n, err := io.Copy(f, io.LimitReader(r, l.MaxBytes+1))
	if err != nil {
		return Document{}, fmt.Errorf("spool pdf: %w", err)
	}
	if n > l.MaxBytes {
		return Document{}, invalid("the PDF is over the limit of %d bytes", l.MaxBytes)
	}
	pages, err := readPDF(f, n, l)
	if err != nil {
		return Document{}, err
	}
	return finish(Document{Format: FormatPDF, Pages: pages}, l)
}

// readPDF extracts the pages' texts, turning a panic of the library into
// invalid_file.
func readPDF(f io.ReaderAt, size int64, l Limits) (pages []Page, err error) {
	defer func() {
		if p := recover(); p != nil {
			pages, err = nil, invalid("malformed PDF: %v", p)
		}
	}()
	rd, err := pdf.NewReader(f, size)
	if err != nil {
		if strings.Contains(err.Error(), "encrypt") || strings.Contains(err.Error(), "password") {
			return nil, unsupported("encrypted PDFs are not supported")
		}
		return nil, invalid("malformed PDF: %v", err)
	}
	count := rd.NumPage()
	switch {
	case count <= 0:
		return nil, invalid("malformed PDF: no pages")
	case count > l.MaxPages:
		return nil, invalid("the PDF has %d pages, over the limit of %d", count, l.MaxPages)
	}
	all := make([]pdf.Page, 0, count)
	fonts := map[string]*pdf.Font{}
	ck := checker{budget: l.MaxInflated, limits: l}
	for i := 1; i <= count; i++ {
		p := rd.Page(i)
		if p.V.IsNull() {
			return nil, invalid("malformed PDF: page %d of %d is missing", i, count)
		}
		if err := ck.page(p, i, fonts); err != nil {
			return nil, err
		}
		all = append(all, p)
	}
	chars := 0
	for i, p := range all {
		text, err := p.GetPlainText(fonts)
		if err != nil {
			return nil, invalid("malformed PDF: page %d: %v", i+1, err)
		}
		if chars += len(text); chars > 4*l.MaxChars {
			return nil, invalid("the file's text is over the limit of %d characters", l.MaxChars)
		}
		pages = append(pages, Page{Number: i + 1, Text: strings.ToValidUTF8(text, "\uFFFD")})
	}
	return pages, nil
}

// checker scans, before any text is read, the streams text extraction
// interprets: each page's content and each font's ToUnicode map, the
// first time the font's name is met (extraction uses the first font of a
// name for every page). It takes their inflated size from budget, the
// whole file's, and refuses a page whose content is over the per-page
// limit or would make the library stack too many operands (see scan).
type checker struct {
	budget int64
	limits Limits
}

// page checks page number i's content and its fonts new to fonts, which
// it adds them to.
func (c *checker) page(p pdf.Page, i int, fonts map[string]*pdf.Font) error {
	var readers []io.Reader
	var closers []io.Closer
	defer func() {
		for _, rc := range closers {
			_ = rc.Close()
		}
	}()
	contents := p.V.Key("Contents")
	streams := []pdf.Value{contents}
	if contents.Kind() == pdf.Array {
		streams = streams[:0]
		for j := range contents.Len() {
			streams = append(streams, contents.Index(j))
		}
	}
	for _, s := range streams {
		if s.Kind() == pdf.Stream {
			rc := s.Reader()
			readers, closers = append(readers, rc), append(closers, rc)
		}
	}
	// The library reads an array of content streams as one stream, so
	// they are scanned as one.
	if err := c.scan(io.MultiReader(readers...), scanContent, c.limits.MaxOperands); err != nil {
		return c.refuse(err, fmt.Sprintf("page %d", i), "of one page's content",
			fmt.Sprintf("stacks over %d operands without an operator", c.limits.MaxOperands))
	}
	for _, name := range p.Fonts() {
		if _, ok := fonts[name]; ok {
			continue
		}
		f := p.Font(name)
		fonts[name] = &f
		tu := f.V.Key("ToUnicode")
		if tu.Kind() != pdf.Stream {
			continue
		}
		rc := tu.Reader()
		err := c.scan(rc, scanCMap, 4*c.limits.MaxOperands)
		_ = rc.Close()
		if err != nil {
			return c.refuse(err, fmt.Sprintf("page %d: font %s's ToUnicode map", i, name), "of one font's ToUnicode map",
				fmt.Sprintf("holds over %d operands", 4*c.limits.MaxOperands))
		}
	}
	return nil
}

// scan scans one stream, within the per-page limit and what is left of
// the budget.
func (c *checker) scan(r io.Reader, mode scanMode, maxStack int) error {
	n, err := scan(r, mode, min(c.limits.MaxPageContent, max(c.budget, 0)), maxStack)
	c.budget -= n
	return err
}

// refuse is the *Error of a stream scan refused; what names the stream,
// per says what the per-page limit bounds, operands what the bound of
// the operands stacked is.
func (c *checker) refuse(err error, what, per, operands string) error {
	l := c.limits
	switch {
	case errors.Is(err, errStreamSize) && c.budget < 0:
		return invalid("the PDF's compressed content inflates to over %d bytes (a decompression bomb?)", l.MaxInflated)
	case errors.Is(err, errStreamSize):
		return invalid("%s inflates to over the limit of %d bytes %s", what, l.MaxPageContent, per)
	case errors.Is(err, errOperands):
		return invalid("%s %s (a PDF built to exhaust memory?)", what, operands)
	}
	return invalid("malformed PDF: %s: %v", what, err)
}
