// What web_fetch refuses (private addresses, ports, bad arguments) and how
// it reports its target, progress and timeouts.

package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/safehttp"
)

// TestWebFetchRefusesSSRF makes real web_fetch calls through the real
// safehttp guard. The only destination let through is the redirecting
// test server (by its exact address, safehttp.Options.AllowAddrs); every
// other destination meets the production policy, and is refused before
// any connection is made.
func TestWebFetchRefusesSSRF(t *testing.T) {
	var secretHits atomic.Int32
	secret := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secretHits.Add(1)
		fmt.Fprint(w, "internal secret")
	}))
	defer secret.Close()
	secretPort := secret.Listener.Addr().(*net.TCPAddr).Port

	site := newTestSite(t, map[string]page{
		"/ok":          {contentType: "text/plain", body: "public page"},
		"/to-private":  {redirect: "http://10.0.0.1/"},
		"/to-metadata": {redirect: "http://169.254.169.254/latest/meta-data/"},
		"/to-loopback": {redirect: "http://127.0.0.1/admin"},
		"/to-v6":       {redirect: "http://[::1]/"},
		"/to-name":     {redirect: "http://localhost/"},
		"/to-secret":   {redirect: secret.URL + "/"},
		"/to-port":     {redirect: "http://example.com:8080/"},
		"/to-file":     {redirect: "file:///etc/passwd"},
		"/to-ftp":      {redirect: "ftp://example.com/"},
	})
	tool := NewWebFetch(WebFetchOptions{HTTP: safehttp.Options{
		AllowAddrs: []netip.AddrPort{netip.MustParseAddrPort(site.Listener.Addr().String())},
	}})

	tests := []struct {
		name string
		url  string
		want string
	}{
		{"loopback v4", "http://127.0.0.1/", "127.0.0.1:80 is a loopback address"},
		{"loopback v6", "http://[::1]/", "[::1]:80 is a loopback address"},
		{"cloud metadata", "http://169.254.169.254/latest/meta-data/", "169.254.169.254:80 is a link-local address (cloud metadata endpoint)"},
		{"private", "http://10.0.0.1/", "10.0.0.1:80 is a private address"},
		{"name resolving to loopback", "http://localhost/", "is a loopback address"},
		{"scheme-less name resolving to loopback", "localhost/x", "is a loopback address"},
		{"non-default port", "http://example.com:8080/", "example.com:8080: port 8080 is not allowed (allowed: 80, 443)"},
		{"non-default port on a listening loopback server", secret.URL + "/", fmt.Sprintf("port %d is not allowed", secretPort)},
		{"redirect to private", site.URL + "/to-private", "10.0.0.1:80 is a private address"},
		{"redirect to metadata", site.URL + "/to-metadata", "cloud metadata endpoint"},
		{"redirect to loopback", site.URL + "/to-loopback", "127.0.0.1:80 is a loopback address"},
		{"redirect to loopback v6", site.URL + "/to-v6", "[::1]:80 is a loopback address"},
		{"redirect to a name resolving to loopback", site.URL + "/to-name", "is a loopback address"},
		{"redirect to a listening loopback server", site.URL + "/to-secret", fmt.Sprintf("redirect refused: 127.0.0.1:%d: port %d is not allowed", secretPort, secretPort)},
		{"redirect to non-default port", site.URL + "/to-port", "redirect refused: example.com:8080: port 8080 is not allowed"},
		{"redirect to file", site.URL + "/to-file", `redirect refused: scheme "file" is not allowed`},
		{"redirect to ftp", site.URL + "/to-ftp", `redirect refused: scheme "ftp" is not allowed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tool.Call(context.Background(), Call{Arguments: fetchArgs(tt.url, 0)})
			if !errors.Is(err, safehttp.ErrBlocked) {
				t.Fatalf("Call(%s) error = %v, want safehttp.ErrBlocked", tt.url, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Call(%s) error = %q, want it to contain %q", tt.url, err, tt.want)
			}
			if strings.HasPrefix(tt.url, site.URL) && !strings.Contains(err.Error(), "reached by a redirect from "+tt.url) {
				t.Errorf("Call(%s) error = %q, want it to name the redirect", tt.url, err)
			}
		})
	}
	if n := secretHits.Load(); n != 0 {
		t.Errorf("the internal server was reached %d times", n)
	}

	// The table is not vacuous: the allowed server itself is fetched.
	res, err := tool.Call(context.Background(), Call{Arguments: fetchArgs(site.URL+"/ok", 0)})
	if err != nil || !strings.Contains(res.Content, "public page") {
		t.Errorf("Call(allowed server) = %q, %v; want the page", res.Content, err)
	}

	// The production configuration refuses the test server too.
	_, err = NewWebFetch(WebFetchOptions{}).Call(context.Background(), Call{Arguments: fetchArgs(site.URL+"/ok", 0)})
	if !errors.Is(err, safehttp.ErrBlocked) {
		t.Errorf("Call(test server) with the production configuration error = %v, want safehttp.ErrBlocked", err)
	}
}

func TestWebFetchAllowedPorts(t *testing.T) {
	tool := NewWebFetch(WebFetchOptions{AllowedPorts: []int{8080}})
	tests := []struct {
		url  string
		want string
	}{
		// Port 80 is no longer allowed: refused by the URL check.
		{"http://127.0.0.2/", "127.0.0.2: port 80 is not allowed (allowed: 8080)"},
		{"https://127.0.0.2/", "127.0.0.2: port 443 is not allowed (allowed: 8080)"},
		// Port 8080 passes the URL check; the address is still refused when dialed.
		{"http://127.0.0.2:8080/", "127.0.0.2:8080 is a loopback address"},
	}
	for _, tt := range tests {
		_, err := tool.Call(context.Background(), Call{Arguments: fetchArgs(tt.url, 0)})
		if !errors.Is(err, safehttp.ErrBlocked) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Call(%s) error = %v, want ErrBlocked saying %q", tt.url, err, tt.want)
		}
	}

	for _, ports := range [][]int{{0}, {80, 65536}, {-443}} {
		bad := NewWebFetch(WebFetchOptions{AllowedPorts: ports})
		_, err := bad.Call(context.Background(), Call{Arguments: fetchArgs("https://example.com/", 0)})
		if !errors.Is(err, ErrMisconfigured) || !strings.Contains(err.Error(), "not in 1-65535") {
			t.Errorf("AllowedPorts %v: Call error = %v, want ErrMisconfigured", ports, err)
		}
	}
}

func TestWebFetchBadArguments(t *testing.T) {
	tool := NewWebFetch(WebFetchOptions{})
	tests := []badArgs{
		{`{}`, `argument "url": required`},
		{`{"url":""}`, `argument "url": must be at least 1 characters long`},
		{`{"url":42}`, `argument "url": must be a string`},
		{`{"url":"https://example.com","max_chars":0}`, `argument "max_chars": must be >= 1`},
		{`{"url":"https://example.com","max_chars":1000001}`, `argument "max_chars": must be <= 100000`},
		{`{"url":"https://example.com","max_chars":"10"}`, `argument "max_chars": must be an integer`},
		{`{"url":"https://example.com","headers":{}}`, `argument "headers": unknown argument (allowed: max_chars, url)`},
		{`{"url":"file:///etc/passwd"}`, `scheme "file" is not supported`},
		{`{"url":"gopher://example.com/"}`, `scheme "gopher" is not supported`},
		{`{"url":"javascript:alert(1)"}`, `scheme "javascript" is not supported`},
		{`{"url":"https://"}`, "has no host"},
		{`{"url":"http://[::1"}`, `argument "url"`},
		{`not json`, "not valid JSON"},
	}
	checkBadArguments(t, tool, tests)
}

func TestWebFetchTarget(t *testing.T) {
	tool := NewWebFetch(WebFetchOptions{})
	var _ Targeter = tool
	tests := []struct {
		args string
		want string
	}{
		{`{"url":"https://example.com/a/b?q=1"}`, "example.com"},
		{`{"url":"http://example.com:8080/"}`, "example.com:8080"},
		{`{"url":"example.org/page"}`, "example.org"},
		{`{"url":"localhost:3000/x"}`, "localhost:3000"},
		{`{"url":"file:///etc/passwd"}`, ""},
		{`{"url":5}`, ""},
		{`{}`, ""},
		{`garbage`, ""},
	}
	for _, tt := range tests {
		if got := tool.Target(json.RawMessage(tt.args)); got != tt.want {
			t.Errorf("Target(%s) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

func TestParseFetchURL(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"https://example.com/a#frag", "https://example.com/a"},
		{"  http://example.com  ", "http://example.com"},
		{"example.com", "https://example.com"},
		{"example.com:8443/x", "https://example.com:8443/x"},
		{"HTTPS://Example.com/", "https://Example.com/"},
	}
	for _, tt := range tests {
		u, err := parseFetchURL(tt.in)
		if err != nil {
			t.Errorf("parseFetchURL(%q) error = %v", tt.in, err)
			continue
		}
		if u.String() != tt.want {
			t.Errorf("parseFetchURL(%q) = %q, want %q", tt.in, u, tt.want)
		}
	}
	for _, in := range []string{"", "mailto:a@b.c", "ftp://x/", "data:text/plain,hi", "//example.com"} {
		if _, err := parseFetchURL(in); !errors.Is(err, ErrInvalidArguments) {
			t.Errorf("parseFetchURL(%q) error = %v, want ErrInvalidArguments", in, err)
		}
	}
}

func TestWebFetchProgress(t *testing.T) {
	body := strings.Repeat("x", 300<<10)
	site := newTestSite(t, map[string]page{"/big": {contentType: "text/plain", body: body}})
	var mu sync.Mutex
	var messages []string
	var fractions []float64
	call := Call{
		Arguments: fetchArgs(site.URL+"/big", 10),
		Progress: func(message string, progress float64) {
			mu.Lock()
			defer mu.Unlock()
			messages = append(messages, message)
			fractions = append(fractions, progress)
		},
	}
	if _, err := testFetch(WebFetchOptions{}).Call(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	host := strings.TrimPrefix(site.URL, "http://")
	if len(messages) < 2 || messages[0] != "fetching "+host {
		t.Fatalf("progress messages = %q, want fetching %s first", messages, host)
	}
	if !strings.HasPrefix(messages[1], "reading ") || !strings.HasSuffix(messages[1], " KB") {
		t.Errorf("second message = %q, want reading N KB", messages[1])
	}
	if len(messages) > 10 {
		t.Errorf("%d progress reports for 300 KB, want few", len(messages))
	}
	for i := 1; i < len(fractions); i++ {
		if fractions[i] < fractions[i-1] || fractions[i] > 1 {
			t.Errorf("progress fractions %v are not increasing within [0, 1]", fractions)
			break
		}
	}
}

func TestWebFetchContextAndTimeout(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer slow.Close()
	defer close(release)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := testFetch(WebFetchOptions{}).Call(ctx, Call{Arguments: fetchArgs(slow.URL, 0)})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want context.DeadlineExceeded", err)
	}

	tool := testFetch(WebFetchOptions{HTTP: safehttp.Options{Timeout: 100 * time.Millisecond}})
	_, err = tool.Call(context.Background(), Call{Arguments: fetchArgs(slow.URL, 0)})
	var uerr *url.Error
	if !errors.As(err, &uerr) || !uerr.Timeout() {
		t.Errorf("error = %v, want a client timeout", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %v, want the limits to apply", time.Since(start))
	}
}

func TestWebFetchDefinition(t *testing.T) {
	tool := NewWebFetch(WebFetchOptions{})
	checkDefinition(t, tool, WebFetchName)
	if !strings.Contains(string(tool.Parameters()), "Defaults to 20000") {
		t.Errorf("Parameters() = %s, want the default max_chars documented", tool.Parameters())
	}
}
