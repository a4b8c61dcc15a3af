package mcp

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParseConfig parses an operator's mcp.json, whatever it holds: a
// config that validates, or an ErrInvalidConfig that never repeats a
// header or env value (which hold the secrets).
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`{"mcpServers":{"files":{"command":"npx","args":["-y","server"],"env":{"TOKEN":"${TOKEN}"},"approval":["write_file"]}}}`,
		`{"mcpServers":{"remote":{"url":"https://mcp.example.test/mcp","headers":{"Authorization":"Bearer s3cr3t-value"},"transport":"sse","approval":"required"}}}`,
		`{"mcpServers":{"a":{"url":"http://x","command":"y"}}}`,
		`{"mcpServers":{"a__b":{"command":"x"}}}`,
		`{"mcpServers":{"a":{"command":"x"},"a":{"command":"y"}}}`,
		`{"mcpServers":{"a":{"url":"ftp://x","headers":{"X-Key":"s3cr3t-value"}}}}`,
		`{"mcpServers":{"a":{"command":"x","approval":"sometimes"}}}`,
		`{"servers":{}}`, `{"mcpServers":null}`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
			}
			if strings.Contains(err.Error(), "s3cr3t-value") {
				t.Fatalf("the error repeats a secret: %v", err)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("a parsed config does not validate: %v", err)
		}
		for name, sc := range cfg.Servers {
			if (sc.Command == "") == (sc.URL == "") {
				t.Fatalf("server %q has both or neither of command and url: %+v", name, sc)
			}
			cfg.RequiresApproval(name + "__tool")
		}
	})
}
