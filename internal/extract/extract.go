// Package extract gets the text out of an uploaded file, for ingestion into
// a vector store: PDF (per page, with github.com/ledongthuc/pdf), HTML
// (rendered as Markdown with html-to-markdown), Markdown and plain text.
// It picks the format from the content itself first (a PDF's "%PDF-"
// header, a zip's signature), then from the file's extension and declared
// media type.
//
// A file it cannot read gets an *Error with OpenAI's last_error codes:
// unsupported_file (a format it does not read: DOCX, zip archives, images,
// other binaries) or invalid_file (an empty file, a malformed PDF, a text
// that is not UTF-8, a file without text, text or decompressed content over
// the limits). Everything it reads is bounded: the file's bytes, the bytes
// a PDF's compressed streams inflate to (in all and per page), the
// operands a page's content makes the PDF library stack, and the
// characters extracted, so a zip or PDF bomb fails fast with bounded
// memory. Child (child.go) runs Extract in a child process, the running
// executable re-entered, under a hard memory limit and a time limit, for
// whatever these bounds miss: a file that kills it is invalid_file too.
package extract

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"
)

// Codes of an Error: OpenAI's last_error codes of a vector store file.
const (
	CodeUnsupported = "unsupported_file"
	CodeInvalid     = "invalid_file"
)

// Error is why a file's text cannot be extracted. It is the file's fault,
// so retrying does not help.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func invalid(format string, args ...any) *Error {
	return &Error{Code: CodeInvalid, Message: fmt.Sprintf(format, args...)}
}

func unsupported(format string, args ...any) *Error {
	return &Error{Code: CodeUnsupported, Message: fmt.Sprintf(format, args...)}
}

// AsError returns err's *Error, if it has one.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Defaults of Limits.
const (
	// DefaultMaxChars bounds the characters extracted from one file.
	DefaultMaxChars = 10_000_000
	// DefaultMaxBytes bounds the bytes of one file read.
	DefaultMaxBytes int64 = 100 << 20
	// DefaultMaxInflated bounds the bytes a PDF's streams decompress to,
	// all of them together.
	DefaultMaxInflated int64 = 256 << 20
	// DefaultMaxPages bounds a PDF's pages.
	DefaultMaxPages = 20000
	// DefaultMaxPageContent bounds the bytes one page's content streams
	// inflate to, and those of one font's ToUnicode map.
	DefaultMaxPageContent int64 = 4 << 20
	// DefaultMaxOperands bounds the operands a page's content stacks
	// without an operator (each costs the PDF library about 100 bytes);
	// a ToUnicode map may hold four times as many tokens in all.
	DefaultMaxOperands = 100_000
)

// Limits bound what Extract reads and returns; a zero field is its
// default.
type Limits struct {
	MaxChars       int
	MaxBytes       int64
	MaxInflated    int64
	MaxPages       int
	MaxPageContent int64
	MaxOperands    int
}

func (l Limits) withDefaults() Limits {
	orDefault(&l.MaxChars, DefaultMaxChars)
	orDefault(&l.MaxBytes, DefaultMaxBytes)
	orDefault(&l.MaxInflated, DefaultMaxInflated)
	orDefault(&l.MaxPages, DefaultMaxPages)
	orDefault(&l.MaxPageContent, DefaultMaxPageContent)
	orDefault(&l.MaxOperands, DefaultMaxOperands)
	return l
}

// orDefault sets a limit that is not positive to its default.
func orDefault[T int | int64](limit *T, def T) {
	if *limit <= 0 {
		*limit = def
	}
}

// Formats Extract reads.
const (
	FormatPDF      = "pdf"
	FormatHTML     = "html"
	FormatMarkdown = "markdown"
	FormatText     = "text"
)

// Page is the text of one page of a PDF (Number from 1), or the whole text
// of another format (Number 0).
type Page struct {
	Number int
	Text   string
}

// Document is a file's extracted text.
type Document struct {
	Format string
	Pages  []Page
}

// Text is the document's text: its pages' texts, a blank line apart.
func (d Document) Text() string {
	var b strings.Builder
	for i, p := range d.Pages {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// PageCount is the number of pages of a PDF, 0 for the other formats.
func (d Document) PageCount() int {
	if d.Format != FormatPDF {
		return 0
	}
	return len(d.Pages)
}

// textExtensions are the extensions of files read as plain text, beyond
// .txt: OpenAI's file_search takes these source and data formats as text.
var textExtensions = map[string]bool{
	".txt": true, ".text": true, ".log": true, ".csv": true, ".tsv": true, ".json": true, ".jsonl": true,
	".xml": true, ".yaml": true, ".yml": true, ".toml": true, ".ini": true, ".rst": true, ".tex": true,
	".c": true, ".h": true, ".cc": true, ".cpp": true, ".hpp": true, ".cs": true, ".css": true, ".go": true,
	".java": true, ".js": true, ".ts": true, ".php": true, ".py": true, ".rb": true, ".rs": true, ".sh": true,
	".sql": true, ".swift": true, ".kt": true, ".scala": true,
}

// zipExtensions name the zip-based formats refused by name.
var zipExtensions = map[string]string{
	".docx": "DOCX", ".pptx": "PPTX", ".xlsx": "XLSX", ".odt": "ODT", ".epub": "EPUB", ".zip": "zip archives",
}

// Extract reads r, a file named filename whose media type was declared as
// contentType (either may be empty), and returns its text. A file it cannot
// read gets an *Error (see AsError); other errors are r's. Limits' zero
// fields are the defaults.
func Extract(r io.Reader, filename, contentType string, l Limits) (Document, error) {
	l = l.withDefaults()
	br := bufio.NewReaderSize(r, 4096)
	head, err := br.Peek(512)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return Document{}, fmt.Errorf("read file: %w", err)
	}
	if len(head) == 0 {
		return Document{}, invalid("the file is empty")
	}
	ext := strings.ToLower(path.Ext(filename))
	media := ""
	if contentType != "" {
		if mt, _, err := mime.ParseMediaType(contentType); err == nil {
			media = mt
		}
	}
	switch {
	case bytes.HasPrefix(head, []byte("%PDF-")):
		return extractPDF(br, l)
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		// Zip containers (DOCX and the other Office formats, archives)
		// are refused without being opened: no Go library reads DOCX
		// well enough (see docs/documents.md), and nothing is inflated.
		what := zipExtensions[ext]
		if what == "" {
			what = "zip-based files"
		}
		return Document{}, unsupported("%s are not supported (supported: PDF, HTML, Markdown, plain text)", what)
	case ext == ".pdf" || media == "application/pdf":
		return Document{}, invalid("the file is named or declared a PDF but has no PDF header")
	}
	if what, ok := zipExtensions[ext]; ok {
		return Document{}, unsupported("%s are not supported (supported: PDF, HTML, Markdown, plain text)", what)
	}
	sniffed, _, _ := mime.ParseMediaType(http.DetectContentType(head))
	format := ""
	switch {
	case ext == ".html" || ext == ".htm" || ext == ".xhtml" || media == "text/html" || media == "application/xhtml+xml":
		format = FormatHTML
	case ext == ".md" || ext == ".markdown" || media == "text/markdown":
		format = FormatMarkdown
	case textExtensions[ext] || strings.HasPrefix(media, "text/"):
		format = FormatText
	case sniffed == "text/html":
		format = FormatHTML
	case sniffed == "text/plain":
		format = FormatText
	default:
		return Document{}, unsupported("files of type %s are not supported (supported: PDF, HTML, Markdown, plain text)", describe(ext, media, sniffed))
	}
	text, err := readText(br, l)
	if err != nil {
		return Document{}, err
	}
	if format == FormatHTML {
		if text, err = htmlText(text); err != nil {
			return Document{}, err
		}
	}
	return finish(Document{Format: format, Pages: []Page{{Text: text}}}, l)
}

// describe names a file's type for an error message.
func describe(ext, media, sniffed string) string {
	switch {
	case media != "" && media != "application/octet-stream":
		return media
	case ext != "":
		return ext
	}
	return sniffed
}

// readText reads a text file whole, checking it is UTF-8 without NUL and
// within the limits.
func readText(r io.Reader, l Limits) (string, error) {
	// A character is at most 4 bytes: more bytes than that are over the
	// character limit whatever they hold.
	limit := min(l.MaxBytes, 4*int64(l.MaxChars))
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return "", fmt.Errorf("read file: %w", err)
	}
	if int64(len(data)) > limit {
		return "", invalid("the file is over the limit of %d bytes of text", limit)
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	if !utf8.Valid(data) {
		return "", invalid("the file is not UTF-8 text")
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return "", invalid("the file is not text (it holds NUL bytes)")
	}
	return string(data), nil
}

// finish checks the document's text: some text, within the character
// limit, with carriage returns made newlines.
func finish(d Document, l Limits) (Document, error) {
	chars := 0
	empty := true
	for i := range d.Pages {
		t := strings.ReplaceAll(d.Pages[i].Text, "\r\n", "\n")
		t = strings.ReplaceAll(t, "\r", "\n")
		d.Pages[i].Text = t
		chars += utf8.RuneCountInString(t)
		if strings.TrimSpace(t) != "" {
			empty = false
		}
	}
	if chars > l.MaxChars {
		return Document{}, invalid("the file's text is over the limit of %d characters", l.MaxChars)
	}
	if empty {
		if d.Format == FormatPDF {
			return Document{}, invalid("no text found in the PDF (a scanned PDF needs OCR, which is not supported)")
		}
		return Document{}, invalid("no text found in the file")
	}
	return d, nil
}
