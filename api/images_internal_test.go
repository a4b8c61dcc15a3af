package api

import (
	"strings"
	"testing"
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
