package mcp

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseConfig(t *testing.T) {
	good := []struct {
		name string
		json string
		want Config
	}{
		{"empty", `{}`, Config{Servers: map[string]ServerConfig{}}},
		{"null servers", `{"mcpServers": null}`, Config{Servers: map[string]ServerConfig{}}},
		{"stdio", `{"mcpServers": {"files": {
			"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}/data"],
			"env": {"TOKEN": "${GITHUB_TOKEN}", "MODE": "ro"}, "cwd": "/srv"}}}`,
			Config{Servers: map[string]ServerConfig{"files": {
				Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "${HOME}/data"},
				Env: map[string]string{"TOKEN": "${GITHUB_TOKEN}", "MODE": "ro"}, Cwd: "/srv"}}}},
		{"stdio with type", `{"mcpServers": {"a": {"command": "x", "type": "stdio"}}}`,
			Config{Servers: map[string]ServerConfig{"a": {Command: "x", Transport: TransportStdio}}}},
		{"url", `{"mcpServers": {"gh-1": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${T}"}}}}`,
			Config{Servers: map[string]ServerConfig{"gh-1": {URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${T}"}}}}},
		{"http type", `{"mcpServers": {"a": {"url": "http://h/mcp", "type": "http"}, "b": {"url": "http://h/mcp", "type": "streamable-http"}}}`,
			Config{Servers: map[string]ServerConfig{"a": {URL: "http://h/mcp", Transport: TransportHTTP}, "b": {URL: "http://h/mcp", Transport: TransportHTTP}}}},
		{"sse", `{"mcpServers": {"old_one": {"url": "http://h/sse", "type": "sse"}}}`,
			Config{Servers: map[string]ServerConfig{"old_one": {URL: "http://h/sse", Transport: TransportSSE}}}},
		{"templated url", `{"mcpServers": {"a": {"url": "${MCP_URL}"}}}`,
			Config{Servers: map[string]ServerConfig{"a": {URL: "${MCP_URL}"}}}},
		{"approval of every tool", `{"mcpServers": {"a": {"command": "x", "approval": "required"}}}`,
			Config{Servers: map[string]ServerConfig{"a": {Command: "x", ApproveAll: true}}}},
		{"approval of some tools", `{"mcpServers": {"a": {"command": "x", "approval": ["delete_file", "move file"]}}}`,
			Config{Servers: map[string]ServerConfig{"a": {Command: "x", Approve: []string{"delete_file", "move file"}}}}},
		{"oauth", `{"mcpServers": {"gh": {"url": "https://example.com/mcp", "auth": "oauth"}}}`,
			Config{Servers: map[string]ServerConfig{"gh": {URL: "https://example.com/mcp", Auth: AuthOAuth}}}},
		{"oauth with a client", `{"mcpServers": {"gh": {"url": "https://example.com/mcp", "auth": "oauth", "client_id": "${ID}", "client_secret": "${SECRET}", "scopes": ["repo"]}}}`,
			Config{Servers: map[string]ServerConfig{"gh": {URL: "https://example.com/mcp", Auth: AuthOAuth, ClientID: "${ID}", ClientSecret: "${SECRET}", Scopes: []string{"repo"}}}}},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig([]byte(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}

	bad := []struct {
		name string
		json string
		want []string // substrings of the error
	}{
		{"not json", `{"mcpServers": `, []string{"not valid JSON"}},
		{"not an object", `[]`, []string{"must be a JSON object"}},
		{"trailing data", `{} {}`, []string{"data after the object"}},
		{"unknown top-level key", `{"mcpServer": {}}`, []string{`unknown key "mcpServer"`}},
		{"servers not an object", `{"mcpServers": []}`, []string{"mcpServers: must be a JSON object"}},
		{"bad name", `{"mcpServers": {"my server": {"command": "x"}}}`, []string{`mcp server "my server": the name must match`}},
		{"double underscore", `{"mcpServers": {"a__b": {"command": "x"}}}`, []string{`mcp server "a__b": the name must not contain "__"`}},
		{"neither", `{"mcpServers": {"a": {}}}`, []string{`mcp server "a": set either "command" or "url"`}},
		{"both", `{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}`, []string{`mcp server "a": set either "command" or "url", not both`}},
		{"typo", `{"mcpServers": {"a": {"command": "x", "arg": ["y"]}}}`, []string{`mcp server "a": "arg": unknown key`}},
		{"wrong types", `{"mcpServers": {"a": {"command": 1, "args": "y", "env": {"K": 2}}}}`,
			[]string{`"command": must be a string`, `"args": must be an array of strings`, `"env": "K": must be a string`}},
		{"bad type", `{"mcpServers": {"a": {"url": "http://h", "type": "websocket"}}}`, []string{`"websocket" is not a transport`}},
		{"bad auth", `{"mcpServers": {"a": {"url": "http://h", "auth": "basic"}}}`, []string{`"basic" is not an auth`}},
		{"oauth over stdio", `{"mcpServers": {"a": {"command": "x", "auth": "oauth"}}}`, []string{`"auth": "oauth" needs a "url" served over streamable HTTP`}},
		{"oauth over sse", `{"mcpServers": {"a": {"url": "http://h", "type": "sse", "auth": "oauth"}}}`, []string{`"auth": "oauth" needs a "url" served over streamable HTTP`}},
		{"client without oauth", `{"mcpServers": {"a": {"url": "http://h", "client_id": "x"}}}`, []string{`need "auth": "oauth"`}},
		{"secret without client", `{"mcpServers": {"a": {"url": "http://h", "auth": "oauth", "client_secret": "x"}}}`, []string{`"client_secret" needs a "client_id"`}},
		{"stdio type with url", `{"mcpServers": {"a": {"url": "http://h", "type": "stdio"}}}`, []string{`type "stdio" needs a "command"`}},
		{"sse with command", `{"mcpServers": {"a": {"command": "x", "type": "sse"}}}`, []string{`type "sse" needs a "url"`}},
		{"headers without url", `{"mcpServers": {"a": {"command": "x", "headers": {"A": "b"}}}}`, []string{`"headers" needs a "url"`}},
		{"args with url", `{"mcpServers": {"a": {"url": "http://h", "args": ["x"]}}}`, []string{`need a "command"`}},
		{"bad url", `{"mcpServers": {"a": {"url": "ftp://h/x"}}}`, []string{"url: the scheme must be http or https"}},
		{"relative url", `{"mcpServers": {"a": {"url": "/mcp"}}}`, []string{"url: the scheme must be http or https"}},
		{"bad template", `{"mcpServers": {"a": {"command": "x", "env": {"K": "${unterminated"}}}}`, []string{`env["K"]`, "unterminated"}},
		{"bad header name", `{"mcpServers": {"a": {"url": "http://h", "headers": {"Bad Header": "v"}}}}`, []string{`"Bad Header" is not a valid header name`}},
		{"bad env name", `{"mcpServers": {"a": {"command": "x", "env": {"A=B": "v"}}}}`, []string{`"A=B" is not a valid variable name`}},
		{"bad approval word", `{"mcpServers": {"a": {"command": "x", "approval": "maybe"}}}`, []string{`"approval": must be "required" or a list`, `"maybe"`}},
		{"approval not a list of names", `{"mcpServers": {"a": {"command": "x", "approval": [1]}}}`, []string{`"approval": must be "required" or a list`}},
		{"approval of an empty name", `{"mcpServers": {"a": {"command": "x", "approval": [""]}}}`, []string{`"approval": names an empty tool`}},
		{"approval null", `{"mcpServers": {"a": {"command": "x", "approval": null}}}`, []string{`"approval": must be "required" or a list`}},
		{"duplicate server", `{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`, []string{`key "a" is given twice`}},
		{"all problems at once", `{"mcpServers": {"a": {}, "b__c": {"command": "x"}, "d": {"command": "x", "extra": true}}}`,
			[]string{`mcp server "a"`, `mcp server "b__c"`, `mcp server "d": "extra": unknown key`}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.json))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("error %v does not wrap ErrInvalidConfig", err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestLoadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"a": {"command": "x"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers["a"].Command; got != "x" {
		t.Errorf("command = %q", got)
	}
	if _, err := LoadConfig(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"a": {}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(path); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), path) {
		t.Errorf("invalid file: %v, want ErrInvalidConfig naming the file", err)
	}
}

func TestValidate(t *testing.T) {
	cfg := Config{Servers: map[string]ServerConfig{
		"ok":  {Command: "x"},
		"b_d": {URL: "http://h", Transport: "carrier-pigeon"},
	}}
	err := cfg.Validate()
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), `mcp server "b_d": transport "carrier-pigeon" is unknown`) {
		t.Errorf("Validate = %v", err)
	}
}

func TestRequiresApproval(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"mcpServers": {
		"files": {"command": "x", "approval": ["delete_file", "move file"]},
		"shell": {"command": "y", "approval": "required"},
		"clock": {"command": "z"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"files__delete_file": true, "files__move_file": true, "files__read_file": false,
		"shell__run": true, "clock__now": false, "other__delete_file": false, "delete_file": false,
	} {
		if got := cfg.RequiresApproval(name); got != want {
			t.Errorf("RequiresApproval(%q) = %v, want %v", name, got, want)
		}
	}
}
