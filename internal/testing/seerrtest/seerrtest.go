// Package seerrtest is a stand-in for Seerr (seerr-team/seerr), the media
// request manager behind the built-in media-agent, so tests can run the
// agent's seerr skill against something that checks requests as the real
// server does.
//
// Real Seerr validates every request against its OpenAPI file,
// seerr-api.yml, before any route runs (express-openapi-validator with
// validateRequests: server/index.ts:223-228 at seerr-team/seerr
// f74306ed), answering 400 with {"message", "errors"} (its error handler,
// server/index.ts:250-263) when a request does not fit, including for a
// query parameter the file does not declare. The stand-in does the same
// for the routes and shapes kept in shapes.json (copied from that file,
// each with the lines it comes from), checks X-Api-Key as Seerr's auth
// middleware does (server/middleware/auth.ts:13-23; 403 with
// {"status": 403, "error": …} as isAuthenticated answers, :47-52), and
// answers with realistic data: the Mortal Kombat entries of the seeds,
// tmdb 931285 being Mortal Kombat II (2026).
//
// Every request is recorded with what the stand-in made of it, so a test
// asserts both what the agent sent and that nothing was refused.
package seerrtest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

//go:embed shapes.json
var shapesJSON []byte

// schema is the part of an OpenAPI schema the shapes use.
type schema struct {
	Type       string             `json:"type"`
	Enum       []any              `json:"enum"`
	Items      *schema            `json:"items"`
	OneOf      []*schema          `json:"oneOf"`
	Properties map[string]*schema `json:"properties"`
	Required   []string           `json:"required"`
}

// route is one operation of shapes.json.
type route struct {
	Method   string             `json:"method"`
	Path     string             `json:"path"`
	Spec     string             `json:"spec"`
	Params   map[string]*schema `json:"params"`
	Query    map[string]*schema `json:"query"`
	Required []string           `json:"required"`
	Body     *schema            `json:"body"`
}

var routes = func() []route {
	var f struct {
		Routes []route `json:"routes"`
	}
	if err := json.Unmarshal(shapesJSON, &f); err != nil {
		panic("seerrtest: shapes.json: " + err.Error())
	}
	return f.Routes
}()

// Key is the API key the stand-in accepts unless Options say otherwise.
const Key = "seerr-test-api-key"

// Call is one request the stand-in received.
type Call struct {
	Method, Path string
	Query        url.Values
	Body         []byte
	// Status is what the stand-in answered; Problem says why it refused
	// the request ("" when it did not).
	Status  int
	Problem string
}

// Server is a running stand-in.
type Server struct {
	// URL is SEERR_URL: the server's address, without /api/v1.
	URL string
	key string

	mu       sync.Mutex
	calls    []Call
	requests []map[string]any // accepted POST /request bodies
	srv      *httptest.Server
}

// New starts a stand-in accepting Key; it stops when the test ends.
func New(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{key: Key}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	tb.Cleanup(s.srv.Close)
	return s
}

// Calls returns every request received, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Refused returns the requests the stand-in refused.
func (s *Server) Refused() []Call {
	var out []Call
	for _, c := range s.Calls() {
		if c.Problem != "" {
			out = append(out, c)
		}
	}
	return out
}

// MediaRequests returns the POST /api/v1/request calls that passed the
// spec's validation, whatever the route then answered (201, or 409 for a
// duplicate).
func (s *Server) MediaRequests() []Call {
	var out []Call
	for _, c := range s.Calls() {
		if c.Method == http.MethodPost && c.Path == "/api/v1/request" && c.Problem == "" {
			out = append(out, c)
		}
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	call := Call{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Body: body}
	status, resp := s.answer(r, body, &call)
	call.Status = status
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(resp)
}

// answer checks a request and builds the answer.
func (s *Server) answer(r *http.Request, body []byte, call *Call) (int, any) {
	refuse := func(status int, problem string, resp any) (int, any) {
		call.Problem = problem
		return status, resp
	}
	rt, params := match(r.Method, r.URL.Path)
	if rt == nil {
		return refuse(http.StatusNotFound, "no such route", map[string]any{"message": "not found", "errors": []string{}})
	}
	if r.Header.Get("X-Api-Key") != s.key {
		return refuse(http.StatusForbidden, "wrong or missing X-Api-Key",
			map[string]any{"status": 403, "error": "You do not have permission to access this endpoint"})
	}
	if errs := rt.check(params, r.URL.Query(), r.Header.Get("Content-Type"), body); len(errs) > 0 {
		return refuse(http.StatusBadRequest, strings.Join(errs, "; "), map[string]any{"message": strings.Join(errs, ", "), "errors": errs})
	}
	return s.respond(rt, params, r.URL.Query(), body)
}

// match finds the route of method and path, with its path parameters.
func match(method, path string) (*route, map[string]string) {
	for i := range routes {
		rt := &routes[i]
		if rt.Method != method {
			continue
		}
		want, got := strings.Split(rt.Path, "/"), strings.Split(path, "/")
		if len(want) != len(got) {
			continue
		}
		params := map[string]string{}
		ok := true
		for j := range want {
			if strings.HasPrefix(want[j], "{") {
				params[strings.Trim(want[j], "{}")] = got[j]
			} else if want[j] != got[j] {
				ok = false
				break
			}
		}
		if ok {
			return rt, params
		}
	}
	return nil, nil
}

// check returns what is wrong with a request, as express-openapi-validator
// words it roughly ("request/query/page must be number").
func (rt *route) check(params map[string]string, q url.Values, contentType string, body []byte) []string {
	var errs []string
	for name, v := range params {
		if err := checkString(rt.Params[name], v); err != "" {
			errs = append(errs, "request/params/"+name+" "+err)
		}
	}
	for _, name := range sortedKeys(q) {
		sc, ok := rt.Query[name]
		if !ok {
			errs = append(errs, fmt.Sprintf("Unknown query parameter '%s'", name))
			continue
		}
		for _, v := range q[name] {
			if err := checkString(sc, v); err != "" {
				errs = append(errs, "request/query/"+name+" "+err)
			}
		}
	}
	for _, name := range rt.Required {
		if !q.Has(name) {
			errs = append(errs, "request/query must have required property '"+name+"'")
		}
	}
	if rt.Body == nil {
		return errs
	}
	if !strings.HasPrefix(contentType, "application/json") {
		return append(errs, "unsupported media type "+contentType)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return append(errs, "request/body is not JSON: "+err.Error())
	}
	return append(errs, checkValue(rt.Body, v, "request/body")...)
}

// checkString checks a path or query value, a string on the wire.
func checkString(sc *schema, v string) string {
	if sc == nil {
		return ""
	}
	if sc.Type == "number" {
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return "must be number"
		}
		return ""
	}
	if len(sc.Enum) > 0 && !slices.Contains(sc.Enum, any(v)) {
		return fmt.Sprintf("must be equal to one of the allowed values: %v", sc.Enum)
	}
	return ""
}

// checkValue checks a decoded JSON value against a schema.
func checkValue(sc *schema, v any, at string) []string {
	if len(sc.OneOf) > 0 {
		n := 0
		for _, alt := range sc.OneOf {
			if len(checkValue(alt, v, at)) == 0 {
				n++
			}
		}
		if n != 1 {
			return []string{at + " must match exactly one schema in oneOf"}
		}
		return nil
	}
	var errs []string
	switch sc.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return []string{at + " must be object"}
		}
		for _, name := range sc.Required {
			if _, ok := m[name]; !ok {
				errs = append(errs, at+" must have required property '"+name+"'")
			}
		}
		for _, name := range sortedKeys(m) {
			if p, ok := sc.Properties[name]; ok {
				errs = append(errs, checkValue(p, m[name], at+"/"+name)...)
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return []string{at + " must be array"}
		}
		for i, e := range a {
			errs = append(errs, checkValue(sc.Items, e, fmt.Sprintf("%s/%d", at, i))...)
		}
	case "number":
		if _, ok := v.(json.Number); !ok {
			return []string{at + " must be number"}
		}
	case "string":
		s, ok := v.(string)
		if !ok {
			return []string{at + " must be string"}
		}
		if len(sc.Enum) > 0 && !slices.Contains(sc.Enum, any(s)) {
			errs = append(errs, fmt.Sprintf("%s must be equal to one of the allowed values: %v", at, sc.Enum))
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return []string{at + " must be boolean"}
		}
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
