package devserver

import (
	"net/http"
	"net/url"
	"testing"
)

// TestReadOnlyAllows: a read-only UI serves reads and the query route, read
// the same way raw and decoded, and nothing else.
func TestReadOnlyAllows(t *testing.T) {
	const q = "/api/v1/namespaces/default/workflows/run-1/query/__stack_trace"
	cases := []struct {
		name   string
		method string
		target string // as the client sent it, escaped
		want   bool
	}{
		{"read", http.MethodGet, "/api/v1/namespaces/default/workflows?query=x", true},
		{"read of a crafted path", http.MethodGet, "/api/v1/namespaces/default/workflows/a%2Fb", true},
		{"head", http.MethodHead, "/api/v1/settings", true},
		{"query", http.MethodPost, q, true},
		{"query with a run id", http.MethodPost, q + "?execution.runId=abc", true},
		{"query of an escaped id", http.MethodPost, "/api/v1/namespaces/default/workflows/chat%20one/query/state", true},
		{"terminate", http.MethodPost, "/api/v1/namespaces/default/workflows/run-1/terminate", false},
		{"signal-with-start, id with an encoded /query/", http.MethodPost, "/api/v1/namespaces/default/workflows/x%2Fquery%2Fy/signal-with-start/go", false},
		{"lower-case encoding", http.MethodPost, "/api/v1/namespaces/default/workflows/x%2fquery%2fy/signal-with-start/go", false},
		{"signal name with an encoded /query/", http.MethodPost, "/api/v1/namespaces/default/workflows/x/signal-with-start/a%2Fquery%2Fb", false},
		{"batch operation", http.MethodPost, "/api/v1/namespaces/default/batch-operations/j%2Fworkflows%2Fw%2Fquery%2Fq", false},
		{"encoded slash in the query type", http.MethodPost, "/api/v1/namespaces/default/workflows/w/query/a%2Fb", false},
		{"encoded slash in the id", http.MethodPost, "/api/v1/namespaces/default/workflows/a%2Fb/query/state", false},
		{"encoded backslash", http.MethodPost, "/api/v1/namespaces/default/workflows/a%5Cb/query/state", false},
		{"double encoding", http.MethodPost, "/api/v1/namespaces/default/workflows/x%252Fquery%252Fy/query/state", false},
		{"mixed case", http.MethodPost, "/api/v1/namespaces/default/workflows/w/Query/state", false},
		{"mixed case prefix", http.MethodPost, "/API/v1/namespaces/default/workflows/w/query/state", false},
		{"dot segments", http.MethodPost, "/api/v1/namespaces/default/workflows/w/query/../../x/signal-with-start/go", false},
		{"dot segment as the id", http.MethodPost, "/api/v1/namespaces/default/workflows/../query/state", false},
		{"encoded dot segment", http.MethodPost, "/api/v1/namespaces/default/workflows/%2E%2E/query/state", false},
		{"empty id", http.MethodPost, "/api/v1/namespaces/default/workflows//query/state", false},
		{"trailing slash", http.MethodPost, q + "/", false},
		{"double slash", http.MethodPost, "/api/v1/namespaces/default//workflows/w/query/state", false},
		{"bad escape", http.MethodPost, "/api/v1/namespaces/default/workflows/w%zz/query/state", false},
		{"put", http.MethodPut, q, false},
		{"delete", http.MethodDelete, q, false},
		{"patch", http.MethodPatch, q, false},
		{"options", http.MethodOptions, q, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, err := url.ParseRequestURI(tc.target)
			if err != nil {
				if tc.want {
					t.Fatalf("parse %q: %v", tc.target, err)
				}
				return // a target the HTTP server refuses itself
			}
			if got := readOnlyAllows(tc.method, u); got != tc.want {
				t.Errorf("readOnlyAllows(%s %s) = %v, want %v", tc.method, tc.target, got, tc.want)
			}
		})
	}
}
