package mcp

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/longhaul-dev/longhaul/internal/redact"
	"github.com/longhaul-dev/longhaul/internal/tools"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/net/http/httpguts"
)

// inheritedEnv lists the variables a server command inherits from the
// worker, as the reference MCP clients do; everything else must be passed
// through ServerConfig.Env.
func inheritedEnv() []string {
	if runtime.GOOS == "windows" {
		return []string{"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PROCESSOR_ARCHITECTURE",
			"SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE", "PROGRAMFILES"}
	}
	return []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}
}

// expander expands the ${VAR} references of one server's configuration and
// remembers the values it put in, so that they can be scrubbed from error
// messages and logs.
type expander struct {
	lookup func(string) (string, bool)
	values map[string]string // variable name -> expanded value
}

func newExpander(lookup func(string) (string, bool)) *expander {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	return &expander{lookup: lookup, values: map[string]string{}}
}

// expand expands the template s of the named field.
func (e *expander) expand(fieldName, s string) (string, error) {
	out, err := tools.ExpandEnv(s, func(name string) (string, bool) {
		v, ok := e.lookup(name)
		if ok {
			e.values[name] = v
		}
		return v, ok
	})
	if err != nil {
		return "", fmt.Errorf("%s: %w", fieldName, err)
	}
	return out, nil
}

// redactor returns a function that replaces the expanded values in a
// string with the references they came from (redact.Secrets), and hides
// the credentials of URLs written into the configuration as they are
// (redact.URLs).
func (e *expander) redactor() func(string) string {
	secrets := redact.NewSecrets(e.values)
	return func(s string) string { return redact.URLs(secrets.Hide(s)) }
}

// redactedError is an error whose message has had secrets scrubbed; it
// still unwraps to the original for errors.Is and errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactErr scrubs err's message with redact.
func redactErr(redact func(string) string, err error) error {
	if err == nil {
		return nil
	}
	msg := redact(err.Error())
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// conn is what a connection needs besides its MCP session: the resources
// to release when it ends.
type conn struct {
	transport mcpsdk.Transport
	cmd       *exec.Cmd       // the server process (stdio), else nil
	http      *http.Transport // the HTTP connections (http, sse), else nil
	cancel    context.CancelFunc
	redact    func(string) string
}

// newConn expands the configuration of a server and builds its transport.
// The transport is not connected yet. lookup resolves ${VAR} references.
func newConn(sc ServerConfig, lookup func(string) (string, bool), log *slog.Logger, terminate time.Duration) (*conn, error) {
	e := newExpander(lookup)
	var problems []string
	expand := func(fieldName, s string) string {
		out, err := e.expand(fieldName, s)
		if err != nil {
			problems = append(problems, err.Error())
		}
		return out
	}
	c := &conn{}
	switch sc.transport() {
	case TransportStdio:
		command := expand("command", sc.Command)
		args := make([]string, len(sc.Args))
		for i, a := range sc.Args {
			args[i] = expand(fmt.Sprintf("args[%d]", i), a)
		}
		env := make([]string, 0, len(sc.Env)+6)
		for _, k := range inheritedEnv() {
			if v, ok := os.LookupEnv(k); ok && !strings.HasPrefix(v, "()") {
				env = append(env, k+"="+v)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(sc.Env)) {
			env = append(env, k+"="+expand(fmt.Sprintf("env[%q]", k), sc.Env[k]))
		}
		dir := expand("cwd", sc.Cwd)
		if len(problems) > 0 {
			return nil, fmt.Errorf("%s", strings.Join(problems, "; "))
		}
		c.redact = e.redactor()
		cmd := exec.Command(command, args...)
		cmd.Env = env
		cmd.Dir = dir
		cmd.Stderr = &lineLogger{log: log, redact: c.redact}
		// Do not wait forever for a grandchild that keeps stderr open.
		cmd.WaitDelay = 2 * time.Second
		setProcessGroup(cmd)
		c.cmd = cmd
		c.transport = &mcpsdk.CommandTransport{Command: cmd, TerminateDuration: terminate}
	case TransportHTTP, TransportSSE:
		endpoint := expand("url", sc.URL)
		headers := make(http.Header, len(sc.Headers))
		for _, k := range slices.Sorted(maps.Keys(sc.Headers)) {
			v := expand(fmt.Sprintf("headers[%q]", k), sc.Headers[k])
			if !httpguts.ValidHeaderFieldValue(v) {
				problems = append(problems, fmt.Sprintf("headers[%q]: the expanded value holds characters a header cannot", k))
			}
			headers.Set(k, v)
		}
		if len(problems) > 0 {
			return nil, fmt.Errorf("%s", strings.Join(problems, "; "))
		}
		c.redact = e.redactor()
		if err := checkURL(endpoint); err != nil {
			return nil, fmt.Errorf("url: %s", c.redact(err.Error()))
		}
		// A transport of its own, so that closing the session can close its
		// idle connections.
		c.http = http.DefaultTransport.(*http.Transport).Clone()
		u, _ := url.Parse(endpoint) // checkURL parsed it
		client := &http.Client{Transport: &headerTransport{base: c.http, headers: headers, origin: originOf(u)}}
		if sc.transport() == TransportHTTP {
			c.transport = &mcpsdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: client}
		} else {
			// The SSE transport ties its event stream to the context given to
			// Connect; give it one that lasts as long as the session.
			ctx, cancel := context.WithCancel(context.Background())
			c.cancel = cancel
			c.transport = &detachedTransport{
				inner: &mcpsdk.SSEClientTransport{Endpoint: endpoint, HTTPClient: client},
				ctx:   ctx, cancel: cancel,
			}
		}
	default:
		return nil, fmt.Errorf("transport %q is unknown", sc.Transport)
	}
	return c, nil
}

// release frees what the connection holds once its session is closed.
func (c *conn) release() {
	if c.cmd != nil && c.cmd.Process != nil {
		killProcessGroup(c.cmd.Process.Pid)
	}
	if c.http != nil {
		c.http.CloseIdleConnections()
	}
	if c.cancel != nil {
		c.cancel()
	}
}

// headerTransport adds the configured headers to every request to the
// configured server's origin (scheme, host and port), and to no other: a
// server that redirects elsewhere, or an SSE server that names a message
// endpoint elsewhere, does not hand the operator's credentials to a third
// party. (net/http drops Authorization on such a redirect only when the
// caller set it; a RoundTripper adding it would add it again.)
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
	origin  string
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 && originOf(req.URL) == t.origin {
		req = req.Clone(req.Context())
		for k, vs := range t.headers {
			req.Header[k] = slices.Clone(vs)
		}
	}
	return t.base.RoundTrip(req)
}

// originOf returns u's origin: its scheme and host, with the scheme's
// default port made explicit so that http://h and http://h:80 are one.
func originOf(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// detachedTransport connects inner with a context that outlives Connect's,
// cancelling it only if Connect's ends while connecting.
type detachedTransport struct {
	inner  mcpsdk.Transport
	ctx    context.Context
	cancel context.CancelFunc
}

func (t *detachedTransport) Connect(ctx context.Context) (mcpsdk.Connection, error) {
	stop := context.AfterFunc(ctx, t.cancel)
	c, err := t.inner.Connect(t.ctx)
	if !stop() {
		// ctx ended while connecting, and t.ctx with it.
		if err == nil {
			_ = c.Close()
		}
		return nil, ctx.Err()
	}
	return c, err
}

// lineLogger logs what a server process writes to its standard error, one
// line at a time, at debug level.
type lineLogger struct {
	log    *slog.Logger
	redact func(string) string
	mu     sync.Mutex
	buf    []byte
}

// maxLine is the longest stderr line kept whole; longer ones are split.
const maxLine = 16 << 10

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		next := i + 1
		if i < 0 {
			if len(l.buf) < maxLine {
				return len(p), nil
			}
			i, next = maxLine, maxLine
		}
		line := strings.TrimRight(string(l.buf[:i]), "\r")
		l.buf = l.buf[next:]
		if line != "" {
			l.log.Debug("mcp server stderr", "line", l.redact(line))
		}
	}
}
