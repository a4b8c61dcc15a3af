package extract_test

import (
	"bytes"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul/internal/extract"
	"github.com/longhaul-dev/longhaul/internal/testing/pdftest"
)

// fuzzCeiling is the most the heap may grow while one input is
// extracted: garbage not yet collected included, far above what the
// bounds let any input take (a few MiB), far below what the PDF bombs
// took (hundreds of MiB from a few KB).
const fuzzCeiling = 64 << 20

// heapPeak runs f and returns how far the heap's objects grew above
// where they were, sampled every half millisecond: a heap that grows by
// hundreds of MiB takes far longer than that to do it.
func heapPeak(f func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() (int64, bool) {
		metrics.Read(sample)
		return int64(sample[0].Value.Uint64()), true
	}
	runtime.GC()
	base, _ := read()
	stop := pdftest.Watch(base, 500*time.Microsecond, read)
	f()
	grew, _ := stop()
	return uint64(grew)
}

// FuzzExtract extracts whatever a file holds, in process with the default
// limits: it never panics, answers a Document or an *Error, keeps within
// the character limit, and the heap never grows past fuzzCeiling. The
// seeds are real files of each format and the PDFs built to break the
// library (testdata/fuzz/FuzzExtract holds more). `make fuzz` runs it;
// `make test` runs the seeds.
func FuzzExtract(f *testing.F) {
	f.Add(PDF(f, "The keeper logged every ship.", "Second page."), "log.pdf")
	f.Add(pdftest.OperandBomb(f, 200_000), "bomb.pdf")
	f.Add(pdftest.Content(f, "BT /F1 12 Tf (a) Tj ", "[(b) -1 (c)] TJ ", 50, "ET"), "tj.pdf")
	f.Add(pdftest.Content(f, "BT /F1 12 Tf <4142", "", 0, ""), "hex.pdf")
	f.Add(cmapPDF(f, "2 beginbfchar <0001> <0048> <0002> <0069> endbfchar"), "cmap.pdf")
	f.Add(cmapPDF(f, "1 beginbfrange <0000> <00ff> [<0041>] endbfrange"), "range.pdf")
	f.Add(bombPDF(f, 1<<16), "spaces.pdf")
	f.Add([]byte("<html><body><h1>Title</h1><p>Para <b>bold</b></p></body></html>"), "page.html")
	f.Add([]byte("# Notes\n\n- one\n"), "notes.md")
	f.Add([]byte("plain text"), "a.txt")
	f.Add([]byte("PK\x03\x04"), "a.docx")
	f.Fuzz(func(t *testing.T, data []byte, filename string) {
		var doc extract.Document
		var err error
		grew := heapPeak(func() {
			doc, err = extract.Extract(bytes.NewReader(data), filename, "", extract.Limits{})
		})
		if grew > fuzzCeiling {
			t.Fatalf("the heap grew %d MiB extracting %d bytes, over the ceiling of %d MiB", grew>>20, len(data), fuzzCeiling>>20)
		}
		if err != nil {
			e, ok := extract.AsError(err)
			if !ok {
				t.Fatalf("error %v is not an *Error", err)
			}
			if e.Code != extract.CodeInvalid && e.Code != extract.CodeUnsupported || e.Message == "" {
				t.Fatalf("error %+v", e)
			}
			return
		}
		chars := 0
		for _, p := range doc.Pages {
			if !utf8.ValidString(p.Text) {
				t.Fatalf("page %d is not UTF-8", p.Number)
			}
			chars += utf8.RuneCountInString(p.Text)
		}
		if chars > extract.DefaultMaxChars {
			t.Fatalf("%d characters extracted", chars)
		}
	})
}

// TestHeapPeakCatchesTheBomb: the fuzz target's ceiling catches the
// operand bomb: with the operand bound off, a 2.5 KB PDF grows the heap
// past it.
func TestHeapPeakCatchesTheBomb(t *testing.T) {
	data := pdftest.OperandBomb(t, 1<<20)
	grew := heapPeak(func() {
		_, _ = extract.Extract(bytes.NewReader(data), "bomb.pdf", "", extract.Limits{MaxOperands: 1 << 30})
	})
	if grew <= fuzzCeiling {
		t.Fatalf("the heap grew %d MiB, want it over the ceiling of %d MiB", grew>>20, fuzzCeiling>>20)
	}
	t.Logf("a %d-byte PDF without the operand bound grew the heap %d MiB", len(data), grew>>20)
}
