package redact_test

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/redact"
)

func TestURLs(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"http://localhost:11434/v1", "http://localhost:11434/v1"},
		{"postgres://ann:s3cret@db:5432/longhaul?sslmode=require", "postgres://ann:xxxxx@db:5432/longhaul?sslmode=require"},
		{"postgresql://ann:s3cret@db/longhaul", "postgresql://ann:xxxxx@db/longhaul"},
		// An unescaped @ and : in the password, which url.Parse rejects.
		{"postgres://ann:p@ss:w0rd@db/x", "postgres://ann:xxxxx@db/x"},
		{"https://user:pw@llm.example.com/v1", "https://user:xxxxx@llm.example.com/v1"},
		// A user alone is a token for NATS and many HTTP services.
		{"nats://tok3n@n2:4222", "nats://xxxxx@n2:4222"},
		{"nats://ann:secret@n1:4222,nats://tok3n@n2:4222,nats://n3:4222",
			"nats://ann:xxxxx@n1:4222,nats://xxxxx@n2:4222,nats://n3:4222"},
		{"https://search.example/?q=x&api_key=abc123&format=json#top", "https://search.example/?q=x&api_key=xxxxx&format=json#top"},
		{"postgres://db/x?user=ann&password=s3cret", "postgres://db/x?user=ann&password=xxxxx"},
		{"https://h/p?X-Amz-Signature=abc&sig=def&Token=t&page=2", "https://h/p?X-Amz-Signature=xxxxx&sig=xxxxx&Token=xxxxx&page=2"},
		// URLs quoted in an error message; the text around them stays.
		{`connect: Post "http://u:pw@mcp.local:9000/mcp": dial tcp: connection refused`,
			`connect: Post "http://u:xxxxx@mcp.local:9000/mcp": dial tcp: connection refused`},
		{"from https://a:b@x/ to wss://c:d@y/ and ftp://z/", "from https://a:xxxxx@x/ to wss://c:xxxxx@y/ and ftp://z/"},
		// An @ in the path is not userinfo.
		{"https://example.com/users/@ann", "https://example.com/users/@ann"},
		{"no url here: user:pass@host", "no url here: user:pass@host"},
		// A ${NAME} reference names a secret; it is not one.
		{"http://h/mcp?key=${API_KEY}&token=abc", "http://h/mcp?key=${API_KEY}&token=xxxxx"},
		{"https://${USER}:${PASSWORD}@h/", "https://${USER}:${PASSWORD}@h/"},
		{"https://ann:${PASSWORD}x@h/", "https://ann:xxxxx@h/"},
	} {
		if got := redact.URLs(tc.in); got != tc.want {
			t.Errorf("URLs(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// TestURLsIdempotent: hiding twice is hiding once, so a message that went
// through a redacting layer can go through another.
func TestURLsIdempotent(t *testing.T) {
	for _, s := range []string{
		"postgres://ann:s3cret@db/x?password=y",
		"nats://tok@n1,nats://a:b@n2",
	} {
		once := redact.URLs(s)
		if twice := redact.URLs(once); twice != once {
			t.Errorf("URLs(URLs(%q)) = %q, want %q", s, twice, once)
		}
		if strings.Contains(once, "s3cret") || strings.Contains(once, "tok@") {
			t.Errorf("URLs(%q) = %q still shows a secret", s, once)
		}
	}
}

func TestHandler(t *testing.T) {
	var buf strings.Builder
	log := slog.New(redact.Handler(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	log = log.With("database", "postgres://ann:pg-secret@db/x")
	log.WithGroup("mcp").Warn("cannot reach http://u:msg-secret@mcp.local/mcp",
		"error", fmt.Errorf(`connect: Post "http://u:err-secret@mcp.local/mcp": refused`),
		"urls", []string{"nats://tok-secret@n1"},
		slog.Group("model", "base_url", "https://k:group-secret@llm/v1"),
		"url", mustParse(t, "https://s:stringer-secret@search/"),
		"n", 3)
	out := buf.String()
	for _, secret := range []string{"pg-secret", "msg-secret", "err-secret", "tok-secret", "group-secret", "stringer-secret"} {
		if strings.Contains(out, secret) {
			t.Errorf("log shows %s:\n%s", secret, out)
		}
	}
	for _, kept := range []string{"postgres://ann:xxxxx@db/x", "mcp.local/mcp", "n=3", "level=WARN", "mcp.model.base_url=https://k:xxxxx@llm/v1"} {
		if !strings.Contains(out, kept) {
			t.Errorf("log lacks %q:\n%s", kept, out)
		}
	}
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
