package extract_test

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/extract"
	"github.com/longhaul-dev/longhaul/internal/testing/pdftest"
)

// allocated is the bytes the heap allocated while f ran: an upper bound
// of the memory f held at its peak.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestExtractOperandBomb: a PDF of a few KB whose content stream
// stacks millions of operands, is refused as invalid_file with memory
// bounded, whether its content is under the per-page budget (the operand
// bound refuses it) or over it (the budget does).
func TestExtractOperandBomb(t *testing.T) {
	for _, tc := range []struct {
		name    string
		data    []byte
		message string
	}{
		{"under the page budget", pdftest.OperandBomb(t, 1<<20), "page 1 stacks over 100000 operands without an operator"},
		{"over the page budget", pdftest.OperandBomb(t, 4<<20), "page 1 stacks over 100000 operands without an operator"},
		// Operators all along: nothing stacks, but the page is over
		// the budget.
		{"drawing over the page budget", pdftest.Content(t, "", "0 0 m ", 1<<20, ""), "page 1 inflates to over the limit of 4194304 bytes of one page's content"},
		// The library loops forever on a hex string the stream ends in.
		{"unterminated hex string", pdftest.Content(t, "BT /F1 12 Tf <414243", "", 0, ""), "unterminated hex string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data
			var err error
			n := allocated(func() {
				_, err = extract.Extract(bytes.NewReader(data), "bomb.pdf", "application/pdf", extract.Limits{})
			})
			t.Logf("%d-byte PDF: %v; %d MiB allocated", len(data), err, n>>20)
			e, ok := extract.AsError(err)
			if !ok || e.Code != extract.CodeInvalid || !strings.Contains(e.Message, tc.message) {
				t.Errorf("error %v, want invalid_file containing %q", err, tc.message)
			}
			if n > 32<<20 {
				t.Errorf("extraction allocated %d MiB, want under 32 MiB", n>>20)
			}
		})
	}
}

// cmapPDF is a one-page PDF whose font maps its two-byte codes to Unicode
// with a ToUnicode CMap of body (between begincmap and endcmap), and
// whose content shows codes 1 and 2.
func cmapPDF(t testing.TB, body string) []byte {
	t.Helper()
	cmap := "/CIDInit /ProcSet findresource begin 12 dict begin begincmap " +
		"/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def /CMapName /Adobe-Identity-UCS def /CMapType 2 def " +
		"1 begincodespacerange <0000> <FFFF> endcodespacerange " + body +
		" endcmap CMapName currentdict /CMap defineresource pop end end"
	var z bytes.Buffer
	w, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	_, _ = w.Write([]byte(cmap))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	content := "BT /F1 12 Tf 72 712 Td <00010002> Tj ET"
	return pdftest.Raw(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content),
		"<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /Identity-H /ToUnicode 6 0 R >>",
		fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", z.Len(), z.String()),
	)
}

// TestExtractCMap: a font's ToUnicode CMap is read when within the bound,
// and one that would stack too much is refused before the library reads
// it.
func TestExtractCMap(t *testing.T) {
	doc, err := extract.Extract(bytes.NewReader(cmapPDF(t, "2 beginbfchar <0001> <0048> <0002> <0069> endbfchar")), "a.pdf", "", extract.Limits{})
	if err != nil || !strings.Contains(doc.Text(), "Hi") {
		t.Fatalf("text %q, %v", doc.Text(), err)
	}
	bomb := cmapPDF(t, "1 beginbfchar"+strings.Repeat(" 1", 1<<20)+" <0001> <0048> endbfchar")
	n := allocated(func() {
		_, err = extract.Extract(bytes.NewReader(bomb), "a.pdf", "", extract.Limits{})
	})
	e, ok := extract.AsError(err)
	if !ok || !strings.Contains(e.Message, "font F1's ToUnicode map holds over 400000 operands") {
		t.Fatalf("error %v, want the CMap refused", err)
	}
	if n > 32<<20 {
		t.Errorf("extraction allocated %d MiB, want under 32 MiB", n>>20)
	}
	t.Logf("%d-byte PDF: %v; %d MiB allocated", len(bomb), err, n>>20)
}
