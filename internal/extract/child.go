package extract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Extraction runs in a child process: the bounds of Extract are the first
// line of defence, and the child's hard memory and time limits the last,
// for whatever a file does to the libraries that they miss. The child is
// the running executable itself (the worker binary, or a test binary)
// re-entered through childEnv: this package's init turns any process
// started with it into a child before main (or TestMain) runs, so every
// binary that can start a child can be one, and none needs a hook of its
// own.

// Environment of a child: childEnv marks it, requestEnv carries its
// childRequest.
const (
	childEnv   = "LONGHAUL_EXTRACT_CHILD"
	requestEnv = "LONGHAUL_EXTRACT_REQUEST"
)

// Defaults of Child.
const (
	// DefaultChildMemory is a child's hard memory limit: the address
	// space it may take beyond what it holds once started.
	DefaultChildMemory int64 = 512 << 20
	// DefaultChildTimeout is how long a child may run.
	DefaultChildTimeout = 5 * time.Minute
	// DefaultChildConcurrency is how many children a Child runs at once.
	DefaultChildConcurrency = 2
)

// maxStderr bounds what a child's standard error keeps, for the message
// of its failure.
const maxStderr = 16 << 10

// exitReadFailed is a child's exit status when reading its standard input
// failed: no verdict on the file.
const exitReadFailed = 3

func init() {
	if os.Getenv(childEnv) == "1" {
		os.Exit(runChild(os.Stdin, os.Stdout, os.Stderr))
	}
}

// childRequest is what a child is asked, through requestEnv.
type childRequest struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Limits      Limits `json:"limits"`
	Memory      int64  `json:"memory"`
	Seconds     int    `json:"seconds"`
}

// childResult is what a child answers on its standard output: the
// document, or why the file cannot be read.
type childResult struct {
	Document *Document `json:"document,omitempty"`
	Error    *Error    `json:"error,omitempty"`
}

// Child extracts a file's text in a child process with a hard memory limit
// and a time limit. A child that dies of either, or of anything else, is
// the file's invalid_file *Error, said plainly: the file is refused, not
// retried. Its zero value uses the defaults; it is safe for concurrent
// use.
type Child struct {
	// Memory is the child's hard memory limit in bytes (RLIMIT_AS above
	// what it holds once started).
	Memory int64
	// Timeout is how long the child may run; past it, it is killed.
	Timeout time.Duration
	// Concurrency is how many children run at once; more calls wait.
	Concurrency int
	// Limits are the child's Extract limits.
	Limits Limits
	// Path is the executable to run; empty is the running one.
	Path string

	once  sync.Once
	slots chan struct{}
}

func (c *Child) memory() int64 {
	if c.Memory > 0 {
		return c.Memory
	}
	return DefaultChildMemory
}

func (c *Child) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultChildTimeout
}

// acquire takes one of the slots for a child, waiting for one as long as
// ctx lasts.
func (c *Child) acquire(ctx context.Context) (release func(), err error) {
	c.once.Do(func() {
		n := c.Concurrency
		if n <= 0 {
			n = DefaultChildConcurrency
		}
		c.slots = make(chan struct{}, n)
	})
	select {
	case c.slots <- struct{}{}:
		return func() { <-c.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Extract is Extract (the package function) run in a child process. A
// file the child refuses, or that kills it, gets an *Error; other errors
// (r's, a child that cannot start, ctx ending) are not the file's.
func (c *Child) Extract(ctx context.Context, r io.Reader, filename, contentType string) (Document, error) {
	release, err := c.acquire(ctx)
	if err != nil {
		return Document{}, err
	}
	defer release()
	l := c.Limits.withDefaults()
	self := c.Path
	if self == "" {
		if self, err = selfPath(); err != nil {
			return Document{}, fmt.Errorf("find the executable to extract in: %w", err)
		}
	}
	// The child's temporary files (a PDF is spooled to one) go in a
	// directory of the parent's, removed however the child ends.
	dir, err := os.MkdirTemp("", "longhaul-extract-*")
	if err != nil {
		return Document{}, fmt.Errorf("extract: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	timeout := c.timeout()
	req, err := json.Marshal(childRequest{Filename: filename, ContentType: contentType, Limits: l,
		Memory: c.memory(), Seconds: int(timeout/time.Second) + 1})
	if err != nil {
		return Document{}, err
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, self)
	// The child sees nothing of the parent's environment (its keys and
	// database URLs): it reads untrusted files.
	cmd.Env = []string{childEnv + "=1", requestEnv + "=" + string(req), "TMPDIR=" + dir}
	if v, ok := os.LookupEnv("GORACE"); ok {
		cmd.Env = append(cmd.Env, "GORACE="+v)
	}
	cmd.Dir = dir
	if err := isolate(cmd, dir); err != nil {
		return Document{}, fmt.Errorf("extract: %w", err)
	}
	cmd.WaitDelay = 5 * time.Second
	in := &readErr{r: io.LimitReader(r, l.MaxBytes+1)}
	out := &capped{max: 8*int64(l.MaxChars) + 1<<20}
	stderr := &capped{max: maxStderr}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, out, stderr
	if err := cmd.Start(); err != nil {
		return Document{}, fmt.Errorf("start the extraction process: %w", err)
	}
	werr := cmd.Wait()
	switch {
	case in.err != nil:
		return Document{}, fmt.Errorf("read file: %w", in.err)
	case ctx.Err() != nil:
		return Document{}, ctx.Err()
	case tctx.Err() != nil:
		return Document{}, invalid("extracting the file's text took longer than %s, the limit; the process was stopped", timeout)
	case werr != nil:
		return Document{}, c.died(cmd, werr, stderr.String())
	case out.over:
		return Document{}, invalid("the file's extracted text is over the limit of %d characters", l.MaxChars)
	}
	var res childResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return Document{}, invalid("extracting the file's text failed: the extraction process answered %d bytes that are not its answer", len(out.Bytes()))
	}
	switch {
	case res.Error != nil:
		return Document{}, res.Error
	case res.Document == nil:
		return Document{}, invalid("extracting the file's text failed: the extraction process answered nothing")
	}
	return *res.Document, nil
}

// died is the error of a child that ended badly: out of memory, killed,
// or failed otherwise.
func (c *Child) died(cmd *exec.Cmd, werr error, stderr string) error {
	state := cmd.ProcessState
	if state != nil && state.ExitCode() == exitReadFailed {
		return fmt.Errorf("extraction process: %s", firstLine(stderr))
	}
	mib := c.memory() >> 20
	// A race-enabled binary (the tests') that cannot map more memory
	// says "too many address space collisions", or its ThreadSanitizer
	// "failed to allocate".
	if strings.Contains(stderr, "out of memory") || strings.Contains(stderr, "cannot allocate memory") ||
		strings.Contains(stderr, "address space collisions") || strings.Contains(stderr, "failed to allocate") {
		return invalid("extracting the file's text needed more than %d MiB of memory, the limit; the process was stopped", mib)
	}
	if err := c.signaled(state); err != nil {
		return err
	}
	line := firstLine(stderr)
	if line == "" {
		line = werr.Error()
	}
	return invalid("extracting the file's text failed: %s", line)
}

// firstLine is the first line of a child's standard error that says
// something (a Go panic's "panic: …" or "fatal error: …"), cut short.
func firstLine(s string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			if len(line) > 200 {
				line = line[:200] + "…"
			}
			return line
		}
	}
	return ""
}

// readErr remembers the error of reading the file, which is not the
// file's fault: the child, seeing its input end, would blame the file.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		r.err = err
	}
	return n, err
}

// capped keeps the first max bytes written to it and notes whether more
// came.
type capped struct {
	bytes.Buffer
	max  int64
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - int64(c.Len()); int64(len(p)) > room {
		c.over = true
		c.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return c.Buffer.Write(p)
}

// runChild is a child's life: it takes its limits, extracts the file on
// stdin and answers a childResult on stdout. It returns the exit status.
func runChild(stdin io.Reader, stdout, stderr io.Writer) int {
	_ = os.Unsetenv(childEnv)
	var req childRequest
	if err := json.Unmarshal([]byte(os.Getenv(requestEnv)), &req); err != nil {
		fmt.Fprintf(stderr, "bad request: %v\n", err)
		return 2
	}
	if err := limitSelf(req.Memory, req.Seconds); err != nil {
		fmt.Fprintf(stderr, "set limits: %v\n", err)
		return 2
	}
	doc, err := Extract(stdin, req.Filename, req.ContentType, req.Limits)
	var res childResult
	if e, ok := AsError(err); ok {
		res.Error = e
	} else if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return exitReadFailed
	} else {
		res.Document = &doc
	}
	if err := json.NewEncoder(stdout).Encode(res); err != nil {
		fmt.Fprintf(stderr, "answer: %v\n", err)
		return 2
	}
	return 0
}
