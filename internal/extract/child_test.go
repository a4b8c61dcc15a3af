package extract_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/extract"
	"github.com/longhaul-dev/longhaul/internal/testing/pdftest"
)

// TestChildExtract: a child process extracts what Extract does, and
// refuses what it refuses, with the same *Error.
func TestChildExtract(t *testing.T) {
	var c extract.Child
	doc, err := c.Extract(t.Context(), bytes.NewReader(PDF(t, "The harbour at dawn.", "Page two.")), "a.pdf", "")
	if err != nil {
		t.Fatal(err)
	}
	if doc.Format != extract.FormatPDF || len(doc.Pages) != 2 || !strings.Contains(doc.Pages[0].Text, "harbour at dawn") || doc.Pages[1].Number != 2 {
		t.Fatalf("document %+v", doc)
	}
	_, err = c.Extract(t.Context(), bytes.NewReader(pdftest.OperandBomb(t, 1<<20)), "bomb.pdf", "")
	if e, ok := extract.AsError(err); !ok || e.Code != extract.CodeInvalid || !strings.Contains(e.Message, "operands without an operator") {
		t.Fatalf("error %v, want invalid_file about operands", err)
	}
}

// TestChildOutOfMemory: with the parser's bounds off, the PDF bomb takes
// the child past its hard memory limit; the child dies and the file is
// invalid_file, said so.
func TestChildOutOfMemory(t *testing.T) {
	c := extract.Child{Memory: 64 << 20, Limits: extract.Limits{MaxOperands: 1 << 30, MaxPageContent: 1 << 30}}
	start := time.Now()
	_, err := c.Extract(t.Context(), bytes.NewReader(pdftest.OperandBomb(t, 4<<20)), "bomb.pdf", "")
	e, ok := extract.AsError(err)
	if !ok || e.Code != extract.CodeInvalid || !strings.Contains(e.Message, "more than 64 MiB of memory") {
		t.Fatalf("error %v, want invalid_file about memory", err)
	}
	t.Logf("%v in %v", err, time.Since(start))
}

// TestChildEnds: how a child ends, other than with an answer, becomes an
// error: the file's (invalid_file) when the child died of it, not when
// the file could not be read or the caller gave up. The child here is a
// shell reading the file as its script.
func TestChildEnds(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		timeout      time.Duration
		message      string // of an invalid_file *Error; empty: another error
	}{
		{name: "time limit", script: "exec /bin/sleep 30\n", timeout: 500 * time.Millisecond, message: "took longer than 500ms"},
		{name: "killed", script: "kill -KILL $$\n", message: "killed (SIGKILL)"},
		{name: "panic", script: "echo 'panic: boom' >&2; echo 'goroutine 1' >&2; exit 2\n", message: "failed: panic: boom"},
		{name: "out of memory", script: "echo 'fatal error: runtime: out of memory' >&2; exit 2\n", message: "more than 512 MiB of memory"},
		{name: "garbage", script: "echo hello\n", message: "not its answer"},
		{name: "nothing", script: "echo '{}'\n", message: "answered nothing"},
		{name: "read failure", script: "echo 'read file: reset' >&2; exit 3\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := extract.Child{Path: "/bin/sh", Timeout: tc.timeout}
			start := time.Now()
			_, err := c.Extract(t.Context(), strings.NewReader(tc.script), "script.txt", "")
			if time.Since(start) > 10*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
			e, ok := extract.AsError(err)
			switch {
			case tc.message == "" && (ok || err == nil):
				t.Fatalf("error %v, want one that is not the file's", err)
			case tc.message != "" && (!ok || e.Code != extract.CodeInvalid || !strings.Contains(e.Message, tc.message)):
				t.Fatalf("error %v, want invalid_file containing %q", err, tc.message)
			}
		})
	}
}

// failingReader fails after its data.
type failingReader struct{ data io.Reader }

var errReset = errors.New("connection reset")

func (f failingReader) Read(p []byte) (int, error) {
	n, err := f.data.Read(p)
	if errors.Is(err, io.EOF) {
		return n, errReset
	}
	return n, err
}

// TestChildReadFails: a file that cannot be read whole is not refused:
// the error is the reader's, to be retried.
func TestChildReadFails(t *testing.T) {
	var c extract.Child
	data := PDF(t, "Cut short.")
	_, err := c.Extract(t.Context(), failingReader{bytes.NewReader(data[:len(data)/2])}, "a.pdf", "")
	if !errors.Is(err, errReset) {
		t.Fatalf("error %v, want %v", err, errReset)
	}
}

// TestChildCancelled: a caller that gives up gets its context's error,
// and the child is stopped.
func TestChildCancelled(t *testing.T) {
	c := extract.Child{Path: "/bin/sh"}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := c.Extract(ctx, strings.NewReader("exec /bin/sleep 30\n"), "script.txt", "")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the context's", err)
	}
}

// TestPDFChildReadsParentEnviron is the attack of a file that takes over
// the extraction child and reads its parent's environment (the worker's
// keys and database URLs) through /proc/<ppid>/environ. The child here is
// a shell reading the file as its script: it can read its own /proc
// files, and not its parent's.
func TestPDFChildReadsParentEnviron(t *testing.T) {
	c := extract.Child{Path: "/bin/sh"}
	script := `cat /proc/self/stat >/dev/null || { echo 'panic: no /proc' >&2; exit 2; }
if cat /proc/$PPID/environ >/dev/null 2>&1; then echo 'panic: read the parent environ' >&2; else echo 'panic: refused' >&2; fi
exit 2
`
	_, err := c.Extract(t.Context(), strings.NewReader(script), "x.pdf", "")
	if e, ok := extract.AsError(err); !ok || !strings.Contains(e.Message, "panic: refused") {
		t.Fatalf("the child's probe of /proc/<ppid>/environ: %v", err)
	}
}
