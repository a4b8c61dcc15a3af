package extract_test

import (
	"archive/zip"
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-pdf/fpdf"
	"github.com/longhaul-dev/longhaul/internal/extract"
	"github.com/longhaul-dev/longhaul/internal/testing/pdftest"
)

// PDF returns a real PDF of the pages, written by fpdf (compressed
// streams, a core font).
func PDF(t testing.TB, pages ...string) []byte {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	f.SetFont("Helvetica", "", 11)
	for _, p := range pages {
		f.AddPage()
		f.MultiCell(0, 5, p, "", "L", false)
	}
	var buf bytes.Buffer
	if err := f.Output(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// bombPDF is a one-page PDF whose content stream inflates to n bytes of
// spaces.
func bombPDF(t testing.TB, n int) []byte {
	t.Helper()
	return pdftest.Content(t, "", " ", n, "")
}

// zipBomb is a zip archive of one entry that inflates to n zero bytes.
func zipBomb(t testing.TB, name string, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(w, zeros{}, int64(n)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestExtract(t *testing.T) {
	prose := "The lighthouse keeper logged every ship that passed the northern cape."
	for _, tc := range []struct {
		name, filename, contentType string
		data                        []byte
		limits                      extract.Limits
		format                      string
		pages                       []string // the pages' texts hold these, in order
		code                        string   // the error's code, when it fails
		message                     string   // a part of its message
	}{
		{name: "pdf pages", filename: "log.pdf", data: PDF(t, prose, "Page two speaks of the harbour.", "Third page: the storm of 1893."),
			format: extract.FormatPDF, pages: []string{"lighthouse keeper", "harbour", "storm of 1893"}},
		{name: "pdf named otherwise", filename: "upload.bin", contentType: "application/octet-stream", data: PDF(t, prose),
			format: extract.FormatPDF, pages: []string{"northern cape"}},
		{name: "html", filename: "page.html", data: []byte("<html><head><title>x</title><script>var secret=1</script></head><body><h1>Harbour</h1><p>Ships <b>dock</b> here.</p></body></html>"),
			format: extract.FormatHTML, pages: []string{"# Harbour\n\nShips **dock** here."}},
		{name: "html sniffed", filename: "page", data: []byte("<!DOCTYPE html><p>Sniffed paragraph</p>"),
			format: extract.FormatHTML, pages: []string{"Sniffed paragraph"}},
		{name: "markdown", filename: "notes.md", data: []byte("# Notes\r\n\r\n- one\r\n- two\n"),
			format: extract.FormatMarkdown, pages: []string{"# Notes\n\n- one\n- two\n"}},
		{name: "text with BOM", filename: "a.txt", data: []byte("\uFEFFplain words, ünïcödé"),
			format: extract.FormatText, pages: []string{"plain words, ünïcödé"}},
		{name: "text by media type", filename: "", contentType: "text/plain; charset=utf-8", data: []byte("hello"),
			format: extract.FormatText, pages: []string{"hello"}},
		{name: "source file", filename: "main.go", data: []byte("package main\n"), format: extract.FormatText, pages: []string{"package main"}},

		{name: "empty", filename: "a.txt", data: nil, code: extract.CodeInvalid, message: "empty"},
		{name: "blank text", filename: "a.txt", data: []byte(" \n\t\n"), code: extract.CodeInvalid, message: "no text"},
		{name: "not utf-8", filename: "a.txt", data: []byte("caf\xe9 au lait"), code: extract.CodeInvalid, message: "not UTF-8"},
		{name: "nul bytes", filename: "a.txt", data: []byte("a\x00b"), code: extract.CodeInvalid, message: "NUL"},
		{name: "text over the limit", filename: "a.txt", data: []byte(strings.Repeat("é", 101)), limits: extract.Limits{MaxChars: 100},
			code: extract.CodeInvalid, message: "over the limit of 100 characters"},
		{name: "bytes over the limit", filename: "a.txt", data: []byte(strings.Repeat("a", 1000)), limits: extract.Limits{MaxChars: 100},
			code: extract.CodeInvalid, message: "over the limit of 400 bytes"},
		{name: "malformed pdf", filename: "bad.pdf", data: []byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer garbage"),
			code: extract.CodeInvalid, message: "malformed PDF"},
		{name: "truncated pdf", filename: "cut.pdf", data: PDF(t, prose)[:600], code: extract.CodeInvalid, message: "malformed PDF"},
		{name: "pdf without text", filename: "blank.pdf", data: PDF(t, ""), code: extract.CodeInvalid, message: "no text found in the PDF"},
		{name: "pdf name without header", filename: "fake.pdf", data: []byte("just text"), code: extract.CodeInvalid, message: "no PDF header"},
		{name: "docx", filename: "report.docx", data: zipBomb(t, "word/document.xml", 1000), code: extract.CodeUnsupported, message: "DOCX are not supported"},
		{name: "zip", filename: "a.zip", data: zipBomb(t, "a.txt", 10), code: extract.CodeUnsupported, message: "zip archives"},
		{name: "image", filename: "cat.png", data: []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), code: extract.CodeUnsupported, message: "not supported"},
		{name: "binary", filename: "blob", data: []byte{0, 1, 2, 3, 0xff, 0xfe}, code: extract.CodeUnsupported, message: "not supported"},
		{name: "docx by name, not zip", filename: "x.docx", data: []byte("hello"), code: extract.CodeUnsupported, message: "DOCX"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := extract.Extract(bytes.NewReader(tc.data), tc.filename, tc.contentType, tc.limits)
			if tc.code != "" {
				e, ok := extract.AsError(err)
				if !ok || e.Code != tc.code || !strings.Contains(e.Message, tc.message) {
					t.Fatalf("error %v, want %s containing %q", err, tc.code, tc.message)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if doc.Format != tc.format {
				t.Errorf("format %q, want %q", doc.Format, tc.format)
			}
			if len(doc.Pages) != len(tc.pages) {
				t.Fatalf("%d pages, want %d: %+v", len(doc.Pages), len(tc.pages), doc.Pages)
			}
			for i, want := range tc.pages {
				if !strings.Contains(doc.Pages[i].Text, want) {
					t.Errorf("page %d = %q, want it to hold %q", i+1, doc.Pages[i].Text, want)
				}
			}
			if tc.format == extract.FormatPDF {
				for i, p := range doc.Pages {
					if p.Number != i+1 {
						t.Errorf("page %d numbered %d", i+1, p.Number)
					}
				}
				if doc.PageCount() != len(tc.pages) {
					t.Errorf("PageCount %d", doc.PageCount())
				}
			}
			if strings.Contains(doc.Text(), "secret") {
				t.Errorf("text %q holds a script's content", doc.Text())
			}
		})
	}
}

// TestExtractPDFBomb: a PDF whose content stream inflates past the limit
// is refused quickly, before text extraction reads it.
func TestExtractPDFBomb(t *testing.T) {
	data := bombPDF(t, 32<<20)
	start := time.Now()
	_, err := extract.Extract(bytes.NewReader(data), "bomb.pdf", "application/pdf", extract.Limits{MaxInflated: 4 << 20})
	e, ok := extract.AsError(err)
	if !ok || e.Code != extract.CodeInvalid || !strings.Contains(e.Message, "inflates to over 4194304 bytes") {
		t.Fatalf("error %v, want invalid_file about inflating", err)
	}
	t.Logf("%d-byte bomb refused in %v", len(data), time.Since(start))
	// Under the limit the same kind of file is read: spaces only, so no
	// text.
	_, err = extract.Extract(bytes.NewReader(bombPDF(t, 1<<20)), "small.pdf", "", extract.Limits{MaxInflated: 8 << 20})
	if e, ok := extract.AsError(err); !ok || !strings.Contains(e.Message, "no text") {
		t.Fatalf("error %v, want no text", err)
	}
}

// TestExtractPDFOverPages: a PDF with more pages than the limit is refused.
func TestExtractPDFOverPages(t *testing.T) {
	_, err := extract.Extract(bytes.NewReader(PDF(t, "a", "b", "c")), "x.pdf", "", extract.Limits{MaxPages: 2})
	if e, ok := extract.AsError(err); !ok || !strings.Contains(e.Message, "3 pages, over the limit of 2") {
		t.Fatalf("error %v", err)
	}
}
