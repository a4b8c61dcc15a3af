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
// file (the reader needs random access; memory holds none of it), its
// compressed streams are inflated once against the limit before any text
// is read, and the library's panics on malformed input become invalid_file.
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
	budget := l.MaxInflated
	for i := 1; i <= count; i++ {
		p := rd.Page(i)
		if p.V.IsNull() {
			return nil, invalid("malformed PDF: page %d of %d is missing", i, count)
		}
		if err := checkInflated(p, &budget, l.MaxInflated); err != nil {
			return nil, err
		}
		all = append(all, p)
	}
	fonts := map[string]*pdf.Font{}
	chars := 0
	for i, p := range all {
		for _, name := range p.Fonts() {
			if _, ok := fonts[name]; !ok {
				f := p.Font(name)
				fonts[name] = &f
			}
		}
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

// errInflated is a stream that inflates past the budget.
var errInflated = errors.New("inflated past the limit")

// checkInflated inflates the page's content streams and its fonts'
// ToUnicode maps, the streams text extraction reads, taking their size
// from budget; past it the PDF is refused before anything is extracted.
func checkInflated(p pdf.Page, budget *int64, limit int64) error {
	streams := []pdf.Value{}
	c := p.V.Key("Contents")
	if c.Kind() == pdf.Array {
		for i := range c.Len() {
			streams = append(streams, c.Index(i))
		}
	} else if c.Kind() == pdf.Stream {
		streams = append(streams, c)
	}
	for _, name := range p.Fonts() {
		if tu := p.Font(name).V.Key("ToUnicode"); tu.Kind() == pdf.Stream {
			streams = append(streams, tu)
		}
	}
	for _, s := range streams {
		if s.Kind() != pdf.Stream {
			continue
		}
		rc := s.Reader()
		n, err := io.Copy(io.Discard, io.LimitReader(rc, *budget+1))
		_ = rc.Close()
		*budget -= n
		if *budget < 0 {
			return invalid("the PDF's compressed content inflates to over %d bytes (a decompression bomb?)", limit)
		}
		if err != nil {
			return invalid("malformed PDF: %v", err)
		}
	}
	return nil
}
