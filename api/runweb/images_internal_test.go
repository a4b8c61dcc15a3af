package runweb

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/safehttp"
)

// TestImageURLPolicy accepts the documented schemes of public hosts and
// refuses the rest, each with a reason; the settings widen it.
func TestImageURLPolicy(t *testing.T) {
	tests := []struct {
		url    string
		policy ImagePolicy
		refuse string // a part of the reason; "" = accepted
	}{
		{"https://example.com/cat.png", ImagePolicy{}, ""},
		{"HTTPS://Example.com/cat.png", ImagePolicy{}, ""},
		{"data:image/png;base64,iVBORw0KGgo=", ImagePolicy{}, ""},
		{"DATA:image/png;base64,AAAA", ImagePolicy{}, ""},
		{"https://93.184.215.14/cat.png", ImagePolicy{}, ""},
		{"https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/c.png", ImagePolicy{}, ""},
		{"https://cafe.de/c.png", ImagePolicy{}, ""},
		{"http://example.com/cat.png", ImagePolicy{}, "LONGHAUL_IMAGE_URL_HTTP"},
		{"http://example.com/cat.png", ImagePolicy{AllowHTTP: true}, ""},
		{"http://169.254.169.254/latest/meta-data/", ImagePolicy{AllowHTTP: true}, "link-local"},
		{"https://169.254.169.254/latest/meta-data/", ImagePolicy{}, "cloud metadata"},
		{"file:///etc/passwd", ImagePolicy{}, "only https: and data: URLs"},
		{"file:///etc/passwd", ImagePolicy{AllowHTTP: true, AllowPrivate: true}, "only https:, http: and data: URLs"},
		{"ftp://example.com/a.png", ImagePolicy{}, "only https:"},
		{"gopher://127.0.0.1:6379/_x", ImagePolicy{}, "only https:"},
		{"/relative.png", ImagePolicy{}, "only https:"},
		{"https://127.0.0.1/a.png", ImagePolicy{}, "loopback"},
		{"https://[::1]/a.png", ImagePolicy{}, "loopback"},
		{"https://[::ffff:127.0.0.1]/a.png", ImagePolicy{}, "loopback"},
		{"https://[fe80::1%25eth0]/a.png", ImagePolicy{}, "link-local"},
		{"https://localhost/a.png", ImagePolicy{}, "loopback"},
		{"https://LOCALHOST./a.png", ImagePolicy{}, "loopback"},
		{"https://x.localhost/a.png", ImagePolicy{}, "loopback"},
		{"https://10.1.2.3/a.png", ImagePolicy{}, "private"},
		{"https://192.168.1.1/a.png", ImagePolicy{}, "private"},
		{"https://user@169.254.169.254/a.png", ImagePolicy{}, "link-local"},
		{"https://2852039166/a.png", ImagePolicy{}, "numeric"},
		{"https://0xA9.0xFE.0xA9.0xFE/a.png", ImagePolicy{}, "numeric"},
		{"https://0251.254.169.254/a.png", ImagePolicy{}, "numeric"},
		{"https://169.254.43518/a.png", ImagePolicy{}, "numeric"},
		{"https://127.1/a.png", ImagePolicy{}, "numeric"},
		{`https://example.com\@169.254.169.254/a.png`, ImagePolicy{}, "backslash"},
		{"https://exa mple.com/a.png", ImagePolicy{}, "spaces"},
		{"https:///a.png", ImagePolicy{}, "no host"},
		{"https:opaque", ImagePolicy{}, "no host"},
		{"https://127.0.0.1/a.png", ImagePolicy{AllowPrivate: true}, ""},
		{"https://localhost/a.png", ImagePolicy{AllowPrivate: true}, ""},
	}
	for _, tt := range tests {
		err := tt.policy.checkURL(tt.url)
		switch {
		case tt.refuse == "" && err != nil:
			t.Errorf("%+v: %q refused: %v", tt.policy, tt.url, err)
		case tt.refuse != "" && err == nil:
			t.Errorf("%+v: %q accepted, want refused (%s)", tt.policy, tt.url, tt.refuse)
		case tt.refuse != "" && !strings.Contains(err.Error(), tt.refuse):
			t.Errorf("%+v: %q refused with %q, want it to say %q", tt.policy, tt.url, err, tt.refuse)
		}
	}
}

// FuzzImageURL checks any URL under each policy: an accepted one is a data:
// URL, or an https: (http: when allowed) URL naming a host that, unless
// private hosts are allowed, is no loopback name and no address
// internal/safehttp refuses to dial.
func FuzzImageURL(f *testing.F) {
	for _, s := range []string{"https://example.com/a.png", "data:image/png;base64,AA", "http://169.254.169.254/", "file:///etc/passwd",
		"https://[::ffff:a9fe:a9fe]/", "https://0x7f.1/", "https://localhost./", "HTTPS://127.0.0.1:443/", "https://[fe80::1%25en0]/", "https:\\\\x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, p := range []ImagePolicy{{}, {AllowHTTP: true}, {AllowPrivate: true}} {
			err := p.checkURL(raw)
			if err != nil {
				if strings.ContainsAny(err.Error(), "\n\r") {
					t.Fatalf("%q: a reason of more than one line: %q", raw, err)
				}
				continue
			}
			if len(raw) >= 5 && strings.EqualFold(raw[:5], "data:") {
				continue
			}
			u, perr := url.Parse(raw)
			if perr != nil {
				t.Fatalf("%+v accepted %q, which does not parse: %v", p, raw, perr)
			}
			if s := strings.ToLower(u.Scheme); s != "https" && !(s == "http" && p.AllowHTTP) {
				t.Fatalf("%+v accepted %q, scheme %q", p, raw, u.Scheme)
			}
			host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
			if host == "" {
				t.Fatalf("%+v accepted %q, which names no host", p, raw)
			}
			if p.AllowPrivate {
				continue
			}
			if host == "localhost" || strings.HasSuffix(host, ".localhost") {
				t.Fatalf("%+v accepted %q, a loopback name", p, raw)
			}
			if addr, err := netip.ParseAddr(host); err == nil && safehttp.BlockReason(addr) != "" {
				t.Fatalf("%+v accepted %q, host %s: %s", p, raw, addr, safehttp.BlockReason(addr))
			}
		}
	})
}
