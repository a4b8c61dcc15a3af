package extract

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestScan: the scanner counts what the PDF library's interpreter would
// stack, erring on the side of counting, and stops at the first bound.
func TestScan(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    scanMode
		content string
		max     int
		err     error
	}{
		{name: "text", content: "BT /F1 12 Tf 72 712 Td (Hello, (nested) \\) world) Tj [(A) -120 (B)] TJ ET", max: 5},
		{name: "run at the bound", content: "1 2 3 4 5 m", max: 5},
		{name: "run over the bound", content: "1 2 3 4 5 6 m", max: 5, err: errOperands},
		{name: "runs between operators", content: strings.Repeat("1 2 3 m ", 100), max: 3},
		{name: "array elements count", content: "[1 2 3 4 5 6] TJ", max: 5, err: errOperands},
		{name: "dictionary entries count", content: "/P << /A 1 /B 2 /C 3 >> BDC", max: 5, err: errOperands},
		{name: "operator inside an array keeps the run", content: "1 2 3 [4 Tj] 5 6 m", max: 5, err: errOperands},
		{name: "pop and def do not end a run", content: "1 2 3 pop 4 5 def 6 m", max: 5, err: errOperands},
		{name: "a defined name pushes", content: "/x 1 << >> begin def x x x x m", max: 5, err: errOperands},
		{name: "comments and strings skipped", content: "% 1 2 3 4 5 6 7\n(1 2 3 4 5 6 7) <0102030405> Tj", max: 2},
		{name: "braces end a run", content: "1 2 3 { 4 5 6 } m", max: 3},
		{name: "unterminated hex string", content: "BT <4142", max: 5, err: errHexString},
		{name: "unterminated literal string", content: "BT (abc", max: 5},
		{name: "lone delimiters count", content: ") ) ) ) ) ) m", max: 5, err: errOperands},
		{name: "stream over the size limit", content: strings.Repeat("0 0 m ", 200), max: 5, err: errStreamSize},
		{name: "cmap counts across operators", mode: scanCMap, content: "1 begincodespacerange <00> <ff> endcodespacerange 2 beginbfchar <01> <0041> <02> <0042> endbfchar", max: 7, err: errOperands},
		{name: "cmap within the bound", mode: scanCMap, content: "1 begincodespacerange <00> <ff> endcodespacerange", max: 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := scan(strings.NewReader(tc.content), tc.mode, 1000, tc.max)
			if !errors.Is(err, tc.err) {
				t.Fatalf("scan = %v, want %v", err, tc.err)
			}
			if err == nil && n != int64(len(tc.content)) {
				t.Errorf("read %d bytes of %d", n, len(tc.content))
			}
		})
	}
}

func TestScanNames(t *testing.T) {
	var b strings.Builder
	for i := range maxNames + 1 {
		fmt.Fprintf(&b, "/N%d gs ", i)
	}
	if _, err := scan(strings.NewReader(b.String()), scanContent, 1<<30, 10); !errors.Is(err, errNames) {
		t.Fatalf("scan = %v, want %v", err, errNames)
	}
}
