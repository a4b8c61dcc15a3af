package devserver

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/labstack/echo/v4"
	uiapi "github.com/temporalio/ui-server/v2/server/api"
)

// The embedded Web UI has no login, so when write actions are off it must
// not change anything, whoever asks. Its own switch does not hold:
// ui-server v2.55.0's DisableWriteMiddleware (server/route/api.go:37-64)
// lets through every POST whose decoded path (URL.Path) starts with
// /api/v1/namespaces/ and merely contains "/workflows/" and "/query/",
// while the grpc-gateway behind it (server/api/handler.go:355-380, in
// UnescapingModeAllExceptReserved) routes on the raw path, where an
// encoded slash stays inside one segment. So
//
//	POST /api/v1/namespaces/default/workflows/x%2Fquery%2Fy/signal-with-start/s
//
// reads as a query to the switch and starts a workflow at the gateway, and
// a batch operation whose job id decodes to ".../workflows/.../query/..."
// terminates runs. The UI's CSRF check does not stop a script either: it is
// skipped for any request with an Authorization header
// (server/csrf/skipper.go:29-31, installed by server/csrf/cookie.go:53).
// A POST with X-HTTP-Method-Override may even reach a DELETE route
// (grpc-gateway v2.29.0 runtime/mux.go:422-431).
//
// readOnlyAPI is Longhaul's own allow-list, in front of every handler of
// the UI's Temporal API: it runs inside the gateway (runtime.WithMiddlewares,
// mux.go:383-388), after routing, so it sees the method and path the
// handler would serve. It lets through reads (GET, HEAD) and exactly one
// write-shaped request, a workflow query, and answers everything else 403.
// It needs no port or proxy of its own: the UI's server takes API
// middleware (server_options.WithAPIMiddleware, applied per request by
// server/api/handler.go:355-360).
func readOnlyAPI(echo.Context) runtime.ServeMuxOption {
	return runtime.WithMiddlewares(func(next runtime.HandlerFunc) runtime.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
			if !readOnlyAllows(r.Method, r.URL) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(`{"code":7,"message":"the Web UI is read-only: set LONGHAUL_EMBEDDED_UI_WRITE=true to let it change runs"}`))
				return
			}
			next(w, r, params)
		}
	})
}

var _ uiapi.Middleware = readOnlyAPI

// readOnlyAllows reports whether a read-only UI may serve a request for u
// with method: any read, and a POST only to the query route.
func readOnlyAllows(method string, u *url.URL) bool {
	switch method {
	case http.MethodGet, http.MethodHead:
		return true
	case http.MethodPost:
		return isQueryPath(u)
	}
	return false
}

// queryRoute is the UI's route for QueryWorkflow, the only POST a read-only
// UI serves (go.temporal.io/api v1.63.5, workflowservice/v1/service.pb.gw.go:
// pattern_WorkflowService_QueryWorkflow_1); "" marks a path variable.
var queryRoute = []string{"api", "v1", "namespaces", "", "workflows", "", "query", ""}

// isQueryPath reports whether u is exactly the query route, read the same
// way on its raw (escaped) path and on its decoded one: each variable is
// one plain segment, with no encoded slash or backslash, no escaped '%'
// (a double encoding), and no dot segment. Literals match case and all.
func isQueryPath(u *url.URL) bool {
	raw := u.EscapedPath()
	if u.RawPath != "" && u.RawPath != raw {
		return false // a RawPath that does not encode Path
	}
	segs := strings.Split(raw, "/")
	if len(segs) != len(queryRoute)+1 || segs[0] != "" {
		return false
	}
	decoded := make([]string, 0, len(segs))
	decoded = append(decoded, "")
	for i, lit := range queryRoute {
		seg := segs[i+1]
		if lit != "" {
			if seg != lit {
				return false
			}
			decoded = append(decoded, lit)
			continue
		}
		v, ok := plainSegment(seg)
		if !ok {
			return false
		}
		decoded = append(decoded, v)
	}
	return u.Path == strings.Join(decoded, "/")
}

// plainSegment decodes one raw path segment that names a single thing:
// not empty, not a dot segment, and holding no slash, backslash or '%'
// once decoded.
func plainSegment(seg string) (string, bool) {
	if seg == "" {
		return "", false
	}
	v, err := url.PathUnescape(seg)
	if err != nil || v == "" || v == "." || v == ".." || strings.ContainsAny(v, "/\\%") {
		return "", false
	}
	return v, true
}
