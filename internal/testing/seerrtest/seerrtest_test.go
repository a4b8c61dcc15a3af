package seerrtest

import (
	"net/http"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
)

func send(t *testing.T, s *Server, method, path, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return webtest.RoundTrip(t, req)
}

// TestRefusesMalformed shows that the stand-in refuses what real Seerr's
// request validation refuses, so a test that passes against it cannot
// pass with requests Seerr would not take.
func TestRefusesMalformed(t *testing.T) {
	tests := []struct {
		name, method, path, key, body string
		status                        int
		problem                       string
	}{
		{"no key", "GET", "/api/v1/discover/trending", "", "", 403, "X-Api-Key"},
		{"wrong key", "GET", "/api/v1/discover/trending", "nope", "", 403, "X-Api-Key"},
		{"not under /api/v1", "GET", "/discover/trending", Key, "", 404, "no such route"},
		{"the seeds' mediaType on trending", "GET", "/api/v1/discover/trending?mediaType=movie", Key, "", 400, "Unknown query parameter 'mediaType'"},
		{"page not a number", "GET", "/api/v1/discover/trending?page=one", Key, "", 400, "request/query/page must be number"},
		{"search without query", "GET", "/api/v1/search?page=1", Key, "", 400, "required property 'query'"},
		{"movie id not a number", "GET", "/api/v1/movie/abc", Key, "", 400, "request/params/movieId must be number"},
		{"request filter outside the enum", "GET", "/api/v1/request?filter=mine", Key, "", 400, "request/query/filter must be equal to one of"},
		{"request without mediaType", "POST", "/api/v1/request", Key, `{"mediaId":931285}`, 400, "required property 'mediaType'"},
		{"request with the id as a string", "POST", "/api/v1/request", Key, `{"mediaType":"movie","mediaId":"931285"}`, 400, "request/body/mediaId must be number"},
		{"request of a person", "POST", "/api/v1/request", Key, `{"mediaType":"person","mediaId":976}`, 400, "request/body/mediaType must be equal to one of"},
		{"seasons neither a list nor all", "POST", "/api/v1/request", Key, `{"mediaType":"tv","mediaId":100088,"seasons":"some"}`, 400, "oneOf"},
		{"body not JSON", "POST", "/api/v1/request", Key, `mediaId=1`, 400, "not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(t)
			status, body := send(t, s, tt.method, tt.path, tt.key, tt.body)
			calls := s.Calls()
			if status != tt.status || len(calls) != 1 || !strings.Contains(calls[0].Problem, tt.problem) {
				t.Fatalf("status %d (%s), calls %+v; want %d and a problem with %q", status, body, calls, tt.status, tt.problem)
			}
			if len(s.MediaRequests()) != 0 {
				t.Errorf("a refused call counts as a media request")
			}
		})
	}
}

// TestAccepts sends what the seerr skill sends and checks the answers.
func TestAccepts(t *testing.T) {
	s := New(t)
	for _, tt := range []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"GET", "/api/v1/discover/trending?language=en&page=1", "", 200, `"id":931285`},
		{"GET", "/api/v1/search?query=mortal+kombat", "", 200, `"releaseDate":"1995-08-18"`},
		{"GET", "/api/v1/movie/931285?language=en", "", 200, `"runtime":116`},
		{"GET", "/api/v1/discover/tv?sortBy=popularity.desc", "", 200, `"name":"The Last of Us"`},
		{"POST", "/api/v1/request", `{"mediaType":"movie","mediaId":931285,"seasons":"all"}`, 201, `"tmdbId":931285`},
		{"POST", "/api/v1/request", `{"mediaType":"movie","mediaId":931285}`, 409, "already exists"},
		{"GET", "/api/v1/request?take=20&filter=all&sort=added", "", 200, `"tmdbId":931285`},
		{"POST", "/api/v1/issue", `{"mediaId":101,"issueType":3,"message":"No subtitles"}`, 201, `"id":101`},
		{"POST", "/api/v1/issue", `{"mediaId":55,"issueType":3,"message":"?"}`, 404, "Media does not exist."},
	} {
		status, body := send(t, s, tt.method, tt.path, Key, tt.body)
		if status != tt.status || !strings.Contains(body, tt.want) {
			t.Errorf("%s %s: %d %s, want %d with %s", tt.method, tt.path, status, body, tt.status, tt.want)
		}
	}
	if r := s.Refused(); len(r) != 0 {
		t.Errorf("refused %+v", r)
	}
	if n := len(s.MediaRequests()); n != 2 {
		t.Errorf("%d media requests recorded, want 2 (one created, one duplicate)", n)
	}
}
