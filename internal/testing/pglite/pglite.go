// Package pglite runs PGlite (PostgreSQL compiled to WebAssembly) with its
// pgvector extension behind PGlite's socket server, as a child process, so
// that tests and benchmarks of the pgvector memory backend have a real
// pgvector on a machine whose PostgreSQL has none. The server and its
// extension are the npm packages pinned in test/pglite (make test-deps
// installs them).
package pglite

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrUnavailable is returned by Start when node or the installed packages
// are missing.
var ErrUnavailable = errors.New("pglite is not installed (run make test-deps)")

// Server is a running PGlite socket server.
type Server struct {
	// URL is a postgres:// URL of its database. PGlite is one session:
	// the server accepts a few connections (so a closing one does not
	// refuse the next) but runs their statements in one session, so
	// transactions of two open connections would mix. Use one at a time.
	// The URL asks pgx for unnamed statements (default_query_exec_mode
	// exec): named ones would outlive a connection in that one session and
	// collide with the next connection's.
	URL string

	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
	out  *tail
}

// Dir returns test/pglite of the module that holds the working directory.
func Dir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "test", "pglite"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory: %w", ErrUnavailable)
		}
		dir = parent
	}
}

// Start starts an in-memory PGlite with pgvector on a free loopback port
// and waits until it listens (the WebAssembly start takes seconds).
func Start(ctx context.Context) (*Server, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	script := filepath.Join(dir, "node_modules", "@electric-sql", "pglite-socket", "dist", "scripts", "server.js")
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("%s: %w", script, ErrUnavailable)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node: %w", ErrUnavailable)
	}
	cmd := exec.Command(node, script, "--port=0", "--host=127.0.0.1", "--max-connections=4", "--extensions=@electric-sql/pglite-pgvector:vector")
	cmd.Dir = dir
	cmd.SysProcAttr = sysProcAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	out := &tail{}
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start pglite: %w", err)
	}
	s := &Server{cmd: cmd, done: make(chan struct{}), out: out}
	port := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			out.Write([]byte(line + "\n"))
			// "PGLiteSocketServer listening on {"port":46635,"host":"127.0.0.1"}"
			if rest, ok := strings.CutPrefix(line, "PGLiteSocketServer listening on "); ok && !sent {
				var addr struct {
					Port int `json:"port"`
				}
				if json.Unmarshal([]byte(rest), &addr) == nil && addr.Port > 0 {
					port <- addr.Port
					sent = true
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	select {
	case p := <-port:
		s.URL = fmt.Sprintf("postgres://postgres:postgres@127.0.0.1:%d/postgres?sslmode=disable&default_query_exec_mode=exec", p)
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("pglite exited before it listened: %s", out.String())
	case <-ctx.Done():
		s.Close()
		return nil, fmt.Errorf("pglite did not listen in time: %w (output: %s)", ctx.Err(), out.String())
	}
}

// Close stops the server (SIGTERM, then SIGKILL after 5 s) and waits for it.
func (s *Server) Close() error {
	s.once.Do(func() {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.done
		}
	})
	return nil
}

// Output is the end of what the server printed, for failure messages.
func (s *Server) Output() string { return s.out.String() }

// tail keeps the last 8 KiB written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if n := len(t.buf); n > 8<<10 {
		t.buf = t.buf[n-8<<10:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
