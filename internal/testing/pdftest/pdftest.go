// Package pdftest builds the PDFs the tests of extraction need and fpdf
// does not write (hostile ones above all), and watches a process's memory
// while one is read, so the extraction, ingestion and end-to-end tests
// build the same files the same way.
package pdftest

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Raw assembles a PDF from object bodies (object i+1 is objs[i]) with a
// correct cross-reference table; object 1 is the catalog.
func Raw(objs ...string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// Content is a one-page PDF whose content stream is head, n times unit,
// then tail, compressed as tightly as zlib can.
func Content(tb testing.TB, head, unit string, n int, tail string) []byte {
	tb.Helper()
	var z bytes.Buffer
	w, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	const batch = 1 << 12
	run := []byte(strings.Repeat(unit, batch))
	_, _ = w.Write([]byte(head))
	for i := 0; i < n; i += batch {
		if _, err := w.Write(run[:len(unit)*min(batch, n-i)]); err != nil {
			tb.Fatal(err)
		}
	}
	_, _ = w.Write([]byte(tail))
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return Raw(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
		fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", z.Len(), z.String()),
	)
}

// OperandBomb is a decompression bomb for a PDF reader: one page whose content stream is
// "BT 1 1 1 … ET", n operands without an operator, compressed about
// 1000:1 (20 million operands are a 39 KB file).
func OperandBomb(tb testing.TB, n int) []byte {
	tb.Helper()
	return Content(tb, "BT ", "1 ", n, "ET")
}

// RSS is this process's resident memory now; a test on a system without
// /proc skips.
func RSS(tb testing.TB) int64 {
	tb.Helper()
	n, err := rss()
	if err != nil {
		tb.Skipf("resident memory: %v", err)
	}
	return n
}

func rss() (int64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, fmt.Errorf("/proc/self/statm reads %q", b)
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize()), err
}

// WatchRSS samples the process's resident memory every few milliseconds
// until the returned function is called, which returns the peak above
// what it was when the watch began, and that starting point.
func WatchRSS(tb testing.TB) func() (above, idle int64) {
	tb.Helper()
	return Watch(RSS(tb), 2*time.Millisecond, func() (int64, bool) {
		n, err := rss()
		return n, err == nil
	})
}

// Watch samples read every interval, from start, until the returned
// function is called, which samples once more and returns the peak above
// start, and start. A sample read cannot take (ok false) is skipped.
func Watch(start int64, every time.Duration, read func() (int64, bool)) func() (above, from int64) {
	peak := start
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if n, ok := read(); ok {
					peak = max(peak, n)
				}
			}
		}
	})
	return func() (int64, int64) {
		close(done)
		wg.Wait()
		if n, ok := read(); ok {
			peak = max(peak, n)
		}
		return peak - start, start
	}
}
