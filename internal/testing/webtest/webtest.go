// Package webtest serves an API's handler package (api/documents,
// api/account, api/runsapi) the way the server does, without the server:
// a fiber app with the server's body streaming, its error envelope and a
// key check standing in for its authentication. So a handler package's tests need
// its stores alone, and answer in milliseconds.
package webtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"github.com/longhaul-dev/longhaul/skills"
)

// The two principals App knows, by their keys' headers.
var (
	Alice = map[string]string{"Authorization": "Bearer sk-alice"}
	Bob   = map[string]string{"Authorization": "Bearer sk-bob"}
)

// Keys resolves Alice's and Bob's keys, as the server's identity does.
var Keys = identity.Resolver{Keys: []identity.Key{{Name: "alice", Secret: "sk-alice"}, {Name: "bob", Secret: "sk-bob"}}}

// Principal is who headers (Alice, Bob) name.
func Principal(t testing.TB, headers map[string]string) identity.Principal {
	t.Helper()
	p, err := Keys.Resolve(headers["Authorization"], func(name string) string { return headers[name] })
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Catalog is the built-in agents and skills, for the handler packages
// that start runs.
func Catalog(t testing.TB) *skills.Catalog {
	t.Helper()
	catalog, err := skills.Load(skills.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	return catalog
}

// RunsOver is what the handlers of an API that runs agents reach the runs
// of svc (a runsfake.Service) through: the runs read for their owner, and
// a gate that logs nothing and resolves the built-in agents, with limits
// when given, else none.
func RunsOver(svc runs.Service, limits ...runs.Limits) (*runweb.Runs, *runs.Gate) {
	catalog, err := skills.Load(skills.Builtin())
	if err != nil {
		panic("the built-in agents do not load: " + err.Error())
	}
	cfg := runs.GateConfig{Log: slog.New(slog.DiscardHandler), Agents: &runweb.Agents{Catalog: catalog}}
	if len(limits) > 0 {
		cfg.Limits = limits[0]
	}
	return &runweb.Runs{Service: svc}, runs.NewGate(svc, cfg)
}

// App is a fiber app whose routes mount registers: root takes requests
// as they come (the OAuth pages), v1 (under /v1) those of Alice or Bob
// only.
func App(t testing.TB, mount func(root, v1 fiber.Router)) *fiber.App {
	t.Helper()
	a := fiber.New(fiber.Config{ErrorHandler: writeError, StreamRequestBody: true, DisablePreParseMultipartForm: true})
	v1 := a.Group("/v1", func(c *fiber.Ctx) error {
		p, err := Keys.Resolve(c.Get(fiber.HeaderAuthorization), func(name string) string { return c.Get(name) })
		if err != nil {
			return web.Unauthorized(err.Error())
		}
		web.SetPrincipal(c, p)
		return c.Next()
	})
	mount(a, v1)
	return a
}

// writeError writes err as the server's error handler does: a runs
// service's error a handler passed on is said as the server says it.
func writeError(c *fiber.Ctx, err error) error {
	var e *web.Error
	if !errors.As(err, &e) && !errors.As(runweb.Error(err), &e) {
		e = &web.Error{Status: http.StatusInternalServerError, Type: "server_error", Message: err.Error()}
	}
	if e.RetryAfter > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(e.RetryAfter))
	}
	return c.Status(e.Status).JSON(wire.ErrorBody{Error: wire.ErrorDetail{Message: e.Message, Type: e.Type, Code: e.Code}})
}

// Do sends a request to a (a JSON body unless body is a string) and
// returns the answer.
func Do(t testing.TB, a *fiber.App, method, path string, body any, headers map[string]string) *http.Response {
	t.Helper()
	return Send(t, a, NewRequest(method, path, body, headers))
}

// NewRequest is a request to url with a JSON body (unless body is a
// string, sent as it is) and the headers.
func NewRequest(method, url string, body any, headers map[string]string) *http.Request {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return req
}

// RoundTrip sends req over the network with the default client and
// returns the answer's status and body; a request that fails fails t.
func RoundTrip(t testing.TB, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Send sends req to a, with no time limit, and closes the answer's body
// when the test ends.
func Send(t testing.TB, a *fiber.App, req *http.Request) *http.Response {
	t.Helper()
	resp, err := a.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// Decode reads resp's JSON body as a T.
func Decode[T any](t testing.TB, resp *http.Response) T {
	t.Helper()
	var v T
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return v
}

// WantError checks that resp is an OpenAI error envelope of status whose
// message holds msg.
func WantError(t testing.TB, resp *http.Response, status int, msg string) {
	t.Helper()
	WantCode(t, resp, status, "", msg)
}

// WantCode is WantError that also wants the envelope's code (any when
// empty).
func WantCode(t testing.TB, resp *http.Response, status int, code, msg string) {
	t.Helper()
	WantType(t, resp, status, "", code, msg)
}

// WantQuota checks resp is a 403 quota_exceeded saying msg: what a
// principal gets past a storage quota.
func WantQuota(t testing.TB, resp *http.Response, msg string) {
	t.Helper()
	WantCode(t, resp, http.StatusForbidden, "quota_exceeded", msg)
}

// WantType is WantCode that also wants the envelope's type (any when
// empty).
func WantType(t testing.TB, resp *http.Response, status int, typ, code, msg string) {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	var e wire.ErrorBody
	if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != status || !strings.Contains(e.Error.Message, msg) || e.Error.Type == "" ||
		(typ != "" && e.Error.Type != typ) || (code != "" && e.Error.Code != code) {
		t.Errorf("%s %s = %d %s, want %d %s %s with %q", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, b, status, typ, code, msg)
	}
}

// Client is an http.Client whose requests a answers, with no time limit,
// for code that sends its own requests (owuitest's Open WebUI).
func Client(a *fiber.App) *http.Client { return &http.Client{Transport: appTransport{a}} }

type appTransport struct{ a *fiber.App }

func (t appTransport) RoundTrip(req *http.Request) (*http.Response, error) { return t.a.Test(req, -1) }

// Listen serves a on a port of its own until the test ends and returns
// its URL: for a client that must see an answer's headers before its end
// (a stream held open), which Send, waiting for the whole answer, cannot.
func Listen(t testing.TB, a *fiber.App) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = a.Listener(ln) }()
	t.Cleanup(func() { _ = a.Shutdown() })
	return "http://" + ln.Addr().String()
}

// WantTooMany checks that resp is a limit's refusal: a 429 rate limit
// error that says when to retry.
func WantTooMany(t testing.TB, resp *http.Response) {
	t.Helper()
	if resp.Header.Get(fiber.HeaderRetryAfter) == "" {
		t.Errorf("%s %s: a 429 without Retry-After", resp.Request.Method, resp.Request.URL.Path)
	}
	WantType(t, resp, http.StatusTooManyRequests, "rate_limit_error", "", "")
}

// DoAdmitted is Do, sent again while a limit refuses it (for ten seconds
// at most): a place a run or stream frees comes free a moment after the
// client sees it end.
func DoAdmitted(t testing.TB, a *fiber.App, method, path string, body any, headers map[string]string) *http.Response {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	resp := Do(t, a, method, path, body, headers)
	for resp.StatusCode == http.StatusTooManyRequests && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		resp = Do(t, a, method, path, body, headers)
	}
	return resp
}
