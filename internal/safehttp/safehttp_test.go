package safehttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"
)

// dialLog records every address that reached the dial check. Its options
// let through only the addresses it was told about (Options.AllowAddrs), so
// a test can talk to its own loopback server while every other destination
// meets the real policy before any connect happens.
type dialLog struct {
	mu      sync.Mutex
	dialed  []netip.AddrPort
	allowed []netip.AddrPort
}

func newDialLog(allowed ...string) *dialLog {
	l := &dialLog{}
	for _, a := range allowed {
		l.allowed = append(l.allowed, netip.MustParseAddrPort(a))
	}
	return l
}

// client returns a client configured by opts plus the log's allowed
// addresses, recording every dial.
func (l *dialLog) client(opts Options) *http.Client {
	opts.AllowAddrs = append(opts.AllowAddrs, l.allowed...)
	return newClient(opts, l.record)
}

func (l *dialLog) record(ap netip.AddrPort) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dialed = append(l.dialed, ap)
}

func (l *dialLog) addrs() []netip.AddrPort {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]netip.AddrPort(nil), l.dialed...)
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err == nil {
		t.Cleanup(func() { resp.Body.Close() })
	}
	return resp, err
}

func TestClientRefusesNonPublicDestinations(t *testing.T) {
	tests := []struct {
		name string
		url  string
		want string // part of the error message
		dial bool   // whether the request gets as far as the dial check
	}{
		{"loopback v4", "http://127.0.0.1/", "127.0.0.1:80 is a loopback address", true},
		{"loopback v4 other", "http://127.1.2.3/", "is a loopback address", true},
		{"loopback v6", "http://[::1]/", "is a loopback address", true},
		{"metadata", "http://169.254.169.254/latest/meta-data", "169.254.169.254:80 is a link-local address (cloud metadata endpoint)", true},
		{"private 10", "http://10.0.0.1/", "safehttp: 10.0.0.1:80 is a private address", true},
		{"private 172", "https://172.16.5.4/", "172.16.5.4:443 is a private address", true},
		{"private 192", "http://192.168.1.1/", "192.168.1.1:80 is a private address", true},
		{"mapped loopback", "http://[::ffff:127.0.0.1]/", "loopback address", true},
		{"mapped private", "http://[::ffff:10.0.0.1]/", "private address", true},
		{"unspecified v4", "http://0.0.0.0/", "0.0.0.0:80 is an unspecified address", true},
		{"unspecified v6", "http://[::]/", "is an unspecified address", true},
		{"localhost name", "http://localhost/", "is a loopback address", true},
		{"cgnat", "http://100.64.0.1/", "100.64.0.1:80 is a shared (CGNAT) address", true},
		{"nat64 private", "http://[64:ff9b::a00:1]/", "NAT64 address embedding 10.0.0.1, a private address", true},
		{"6to4 loopback", "http://[2002:7f00:1::1]/", "6to4 address embedding 127.0.0.1, a loopback address", true},
		{"unique local", "http://[fd00::1]/", "is a private address", true},
		{"link-local v6", "http://[fe80::1]/", "is a link-local address", true},
		{"non-default port", "http://93.184.216.34:8080/", "93.184.216.34:8080: port 8080 is not allowed (allowed: 80, 443)", false},
		{"non-default port by name", "http://example.com:8080/", "example.com:8080: port 8080 is not allowed (allowed: 80, 443)", false},
		{"https on port 80 is fine, 8443 is not", "https://example.com:8443/", "port 8443 is not allowed", false},
		{"invalid port", "http://example.com:99999/", `port "99999" is not valid`, false},
		{"file scheme", "file:///etc/passwd", `scheme "file" is not allowed`, false},
		{"gopher scheme", "gopher://example.com:70/1", `scheme "gopher" is not allowed`, false},
		{"ftp scheme", "ftp://example.com/", `scheme "ftp" is not allowed`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := newDialLog()
			_, err := get(t, log.client(Options{}), tt.url)
			if !errors.Is(err, ErrBlocked) {
				t.Fatalf("Get(%s) error = %v, want ErrBlocked", tt.url, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Get(%s) error = %q, want it to contain %q", tt.url, err, tt.want)
			}
			if got := len(log.addrs()) > 0; got != tt.dial {
				t.Errorf("dial check reached = %v (%v), want %v", got, log.addrs(), tt.dial)
			}
		})
	}
}

func TestBlockReason(t *testing.T) {
	tests := []struct {
		addr    string
		blocked bool
	}{
		{"127.0.0.1", true},
		{"127.255.255.254", true},
		{"10.1.2.3", true},
		{"172.31.255.255", true},
		{"172.32.0.1", false},
		{"192.168.0.1", true},
		{"169.254.169.254", true},
		{"169.254.1.1", true},
		{"100.64.0.1", true},
		{"100.127.255.255", true},
		{"100.128.0.1", false},
		{"0.0.0.0", true},
		{"0.1.2.3", true},
		{"198.18.0.1", true},
		{"198.19.255.255", true},
		{"192.0.2.1", true},
		{"198.51.100.7", true},
		{"203.0.113.9", true},
		{"224.0.0.1", true},
		{"239.255.255.250", true},
		{"255.255.255.255", true},
		{"240.0.0.1", true},
		{"192.0.0.8", true},
		{"8.8.8.8", false},
		{"93.184.216.34", false},
		{"::1", true},
		{"::", true},
		{"::ffff:127.0.0.1", true},
		{"::ffff:169.254.169.254", true},
		{"::ffff:8.8.8.8", false},
		{"::127.0.0.1", true},
		{"64:ff9b::7f00:1", true},
		{"64:ff9b::a9fe:a9fe", true},
		{"64:ff9b::808:808", false},
		{"64:ff9b:1::1", true},
		{"2002:a00:1::1", true},
		{"2002:808:808::1", false},
		{"2001::1", true},
		{"2001:db8::1", true},
		{"3fff::1", true},
		{"fc00::1", true},
		{"fdff:ffff::1", true},
		{"fe80::1", true},
		{"fe80::1%eth0", true},
		{"fec0::1", true},
		{"ff02::1", true},
		{"100::1", true},
		{"2606:4700:4700::1111", false},
		{"2a00:1450:4001:80b::200e", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			reason := blockReason(netip.MustParseAddr(tt.addr))
			if got := reason != ""; got != tt.blocked {
				t.Errorf("blockReason(%s) = %q, blocked = %v, want %v", tt.addr, reason, got, tt.blocked)
			}
		})
	}
	if r := blockReason(netip.Addr{}); r == "" {
		t.Error("blockReason(invalid) = \"\", want a reason")
	}
}

func TestControlFailsClosed(t *testing.T) {
	g := &guard{allowedPorts: DefaultAllowedPorts()}
	tests := []struct {
		network, address string
	}{
		{"tcp", "not an address"},
		{"tcp", "example.com:80"},
		{"udp", "8.8.8.8:53"},
		{"tcp", "8.8.8.8:22"},
	}
	for _, tt := range tests {
		if err := g.control(tt.network, tt.address, nil); !errors.Is(err, ErrBlocked) {
			t.Errorf("control(%q, %q) = %v, want ErrBlocked", tt.network, tt.address, err)
		}
	}
	if err := g.control("tcp4", "8.8.8.8:443", nil); err != nil {
		t.Errorf("control(public:443) = %v, want nil", err)
	}
	custom := &guard{allowedPorts: []uint16{8443}}
	if err := custom.control("tcp", "8.8.8.8:8443", nil); err != nil {
		t.Errorf("control with AllowedPorts 8443 = %v, want nil", err)
	}
	if err := custom.control("tcp", "8.8.8.8:443", nil); !errors.Is(err, ErrBlocked) {
		t.Errorf("control(443) with AllowedPorts 8443 = %v, want ErrBlocked", err)
	}
	exact := &guard{allowedPorts: DefaultAllowedPorts(), allowAddrs: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:8080")}}
	if err := exact.control("tcp", "127.0.0.1:8080", nil); err != nil {
		t.Errorf("control(allowed address) = %v, want nil", err)
	}
	for _, addr := range []string{"127.0.0.1:8081", "127.0.0.2:8080", "10.0.0.1:8080"} {
		if err := exact.control("tcp", addr, nil); !errors.Is(err, ErrBlocked) {
			t.Errorf("control(%s) with AllowAddrs 127.0.0.1:8080 = %v, want ErrBlocked", addr, err)
		}
	}
	open := &guard{allowPrivate: true}
	if err := open.control("tcp", "127.0.0.1:9999", nil); err != nil {
		t.Errorf("control with AllowPrivate = %v, want nil", err)
	}
}

// serverAddr returns the loopback address:port a test server listens on.
func serverAddr(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	return srv.Listener.Addr().String()
}

func TestRedirectToBlockedAddress(t *testing.T) {
	var forbiddenHits atomic.Int32
	forbidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forbiddenHits.Add(1)
		fmt.Fprint(w, "secret")
	}))
	defer forbidden.Close()

	targets := map[string]string{
		"/to-private":  "http://10.0.0.1/",
		"/to-loopback": forbidden.URL + "/admin",
		"/to-metadata": "http://169.254.169.254/latest/meta-data",
		"/to-file":     "file:///etc/passwd",
		"/to-port":     "http://example.com:8080/",
		"/to-gopher":   "gopher://example.com:70/1",
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to, ok := targets[r.URL.Path]; ok {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()

	tests := []struct {
		path string
		want string
	}{
		{"/to-private", "10.0.0.1:80 is a private address"},
		// Refused by the URL check for its port, before its address is dialed.
		{"/to-loopback", "redirect refused: " + serverAddr(t, forbidden) + ": port"},
		{"/to-metadata", "cloud metadata endpoint"},
		{"/to-file", `redirect refused: scheme "file" is not allowed`},
		{"/to-port", "redirect refused: example.com:8080: port 8080 is not allowed (allowed: 80, 443)"},
		{"/to-gopher", `redirect refused: scheme "gopher" is not allowed`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			log := newDialLog(serverAddr(t, srv))
			_, err := get(t, log.client(Options{}), srv.URL+tt.path)
			if !errors.Is(err, ErrBlocked) {
				t.Fatalf("error = %v, want ErrBlocked", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
	if n := forbiddenHits.Load(); n != 0 {
		t.Errorf("blocked server was reached %d times", n)
	}

	// The first hop alone is fine: the hook really lets the test server through.
	log := newDialLog(serverAddr(t, srv))
	resp, err := get(t, log.client(Options{}), srv.URL+"/plain")
	if err != nil {
		t.Fatalf("Get(test server) error = %v", err)
	}
	if body, _ := io.ReadAll(resp.Body); string(body) != "ok" {
		t.Errorf("body = %q, want ok", body)
	}
}

func TestRedirectLimit(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "/again", http.StatusFound)
	}))
	defer srv.Close()

	tests := []struct {
		maxRedirects int
		wantHits     int32
	}{
		{0, DefaultMaxRedirects + 1},
		{2, 3},
		{-1, 1},
		{1000, MaxRedirectsLimit + 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.maxRedirects), func(t *testing.T) {
			hits.Store(0)
			c := NewClient(Options{AllowPrivate: true, MaxRedirects: tt.maxRedirects})
			_, err := get(t, c, srv.URL)
			if !errors.Is(err, ErrTooManyRedirects) {
				t.Fatalf("error = %v, want ErrTooManyRedirects", err)
			}
			if got := hits.Load(); got != tt.wantHits {
				t.Errorf("server hits = %d, want %d", got, tt.wantHits)
			}
		})
	}
}

func TestAllowPrivate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()

	resp, err := get(t, NewClient(Options{AllowPrivate: true}), srv.URL)
	if err != nil {
		t.Fatalf("Get with AllowPrivate: %v", err)
	}
	if body, _ := io.ReadAll(resp.Body); string(body) != "hello" {
		t.Errorf("body = %q, want hello", body)
	}

	// The same server through the production configuration is refused.
	_, err = get(t, NewClient(Options{}), srv.URL)
	if !errors.Is(err, ErrBlocked) {
		t.Errorf("Get without AllowPrivate error = %v, want ErrBlocked", err)
	}

	// AllowPrivate does not open other schemes.
	_, err = get(t, NewClient(Options{AllowPrivate: true}), "file:///etc/passwd")
	if !errors.Is(err, ErrBlocked) {
		t.Errorf("file URL with AllowPrivate error = %v, want ErrBlocked", err)
	}
}

func TestClientConfiguration(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://proxy.invalid:3128")
	t.Setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
	c := NewClient(Options{})
	if c.Timeout != DefaultTimeout {
		t.Errorf("Timeout = %v, want %v", c.Timeout, DefaultTimeout)
	}
	g, ok := c.Transport.(*urlGuard)
	if !ok {
		t.Fatalf("Transport = %T, want *urlGuard", c.Transport)
	}
	if g.base.Proxy != nil {
		t.Error("Transport.Proxy is set; proxies from the environment must not be used")
	}
	if g.base.DialContext == nil {
		t.Error("Transport.DialContext is nil; the dial check would be skipped")
	}
	if c2 := NewClient(Options{Timeout: time.Second}); c2.Timeout != time.Second {
		t.Errorf("Timeout = %v, want 1s", c2.Timeout)
	}
	c.CloseIdleConnections() // reaches the base transport without panicking
}

func TestReadLimited(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name          string
		r             io.Reader
		max           int64
		want          string
		wantTruncated bool
		wantErr       error
	}{
		{"under", strings.NewReader("abc"), 10, "abc", false, nil},
		{"exact", strings.NewReader("abcde"), 5, "abcde", false, nil},
		{"over", strings.NewReader("abcdef"), 5, "abcde", true, nil},
		{"empty", strings.NewReader(""), 5, "", false, nil},
		{"zero max", strings.NewReader("a"), 0, "", true, nil},
		{"negative max", strings.NewReader("a"), -3, "", true, nil},
		{"huge max", strings.NewReader("abc"), 1<<63 - 1, "abc", false, nil},
		{"one byte at a time", iotest.OneByteReader(strings.NewReader("abcdef")), 4, "abcd", true, nil},
		{"error", io.MultiReader(strings.NewReader("ab"), iotest.ErrReader(boom)), 10, "ab", false, boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, truncated, err := ReadLimited(tt.r, tt.max)
			if string(data) != tt.want || truncated != tt.wantTruncated {
				t.Errorf("ReadLimited = %q, %v; want %q, %v", data, truncated, tt.want, tt.wantTruncated)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("ReadLimited error = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestAllowAddrs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()
	addr := netip.MustParseAddrPort(serverAddr(t, srv))
	c := NewClient(Options{AllowAddrs: []netip.AddrPort{addr}})

	resp, err := get(t, c, srv.URL)
	if err != nil {
		t.Fatalf("Get(allowed address) error = %v", err)
	}
	if body, _ := io.ReadAll(resp.Body); string(body) != "hello" {
		t.Errorf("body = %q, want hello", body)
	}

	// The port passes the URL check, but another loopback address on it
	// is still refused when dialed.
	other := fmt.Sprintf("http://127.0.0.2:%d/", addr.Port())
	if _, err := get(t, c, other); !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), "is a loopback address") {
		t.Errorf("Get(%s) error = %v, want a loopback refusal", other, err)
	}
	// Another port is refused by the URL check.
	port := fmt.Sprintf("http://127.0.0.1:%d/", addr.Port()+1)
	if _, err := get(t, c, port); !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), "is not allowed") {
		t.Errorf("Get(%s) error = %v, want a port refusal", port, err)
	}
}

func TestCheckURLPorts(t *testing.T) {
	g := &guard{allowedPorts: []uint16{443, 8443}}
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://example.com/", true},
		{"https://example.com:8443/", true},
		{"http://example.com/", false}, // default port 80 is not in the list
		{"http://example.com:443/", true},
		{"https://[2001:db8::1]:8443/", true},
		{"https://example.com:0/", false},
		{"https://example.com:x/", false},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.url)
		if err != nil {
			// url.Parse refuses some bad ports itself; the transport never sees them.
			continue
		}
		if err := g.checkURL(u); (err == nil) != tt.ok {
			t.Errorf("checkURL(%s) = %v, want ok = %v", tt.url, err, tt.ok)
		}
	}
	if err := (&guard{allowPrivate: true}).checkURL(&url.URL{Scheme: "http", Host: "x:1"}); err != nil {
		t.Errorf("checkURL with AllowPrivate = %v, want nil", err)
	}
	if err := (&guard{allowPrivate: true}).checkURL(&url.URL{Scheme: "file", Path: "/etc/passwd"}); err == nil {
		t.Error("checkURL(file) with AllowPrivate = nil, want a scheme refusal")
	}
}
