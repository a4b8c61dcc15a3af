package mcp

import (
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestToolName(t *testing.T) {
	tests := []struct {
		server, tool string
		want         string
		ok           bool
	}{
		{"github", "create_issue", "github__create_issue", true},
		{"fs", "read-file", "fs__read-file", true},
		{"fs", "files.read/v2", "fs__files_read_v2", true},
		{"fs", "naïve tool", "fs__na_ve_tool", true},
		{"fs", "", "fs__", false},
		{"s", strings.Repeat("x", 61), "s__" + strings.Repeat("x", 61), true},
		{"s", strings.Repeat("x", 62), "s__" + strings.Repeat("x", 62), false},
	}
	for _, tc := range tests {
		got, ok := toolName(tc.server, tc.tool)
		if got != tc.want || ok != tc.ok {
			t.Errorf("toolName(%q, %q) = %q, %v; want %q, %v", tc.server, tc.tool, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParameters(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want string
		err  string
	}{
		{"missing", nil, `{"type":"object","properties":{}}`, ""},
		{"empty", map[string]any{}, `{"type":"object","properties":{}}`, ""},
		{"no type", map[string]any{"properties": map[string]any{"a": map[string]any{"type": "string"}}},
			`{"properties":{"a":{"type":"string"}},"type":"object"}`, ""},
		{"no properties", map[string]any{"type": "object"}, `{"properties":{},"type":"object"}`, ""},
		{"big number kept", map[string]any{"type": "object", "properties": map[string]any{}, "maxProperties": 9007199254740993},
			`{"maxProperties":9007199254740993,"properties":{},"type":"object"}`, ""},
		{"not an object schema", map[string]any{"type": "string"}, "", `type string, want "object"`},
		{"not an object", []any{1}, "", "not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parameters(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("parameters = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestResultText(t *testing.T) {
	res := &mcpsdk.CallToolResult{Content: []mcpsdk.Content{
		&mcpsdk.TextContent{Text: "first"},
		&mcpsdk.ImageContent{MIMEType: "image/png", Data: make([]byte, 1234)},
		&mcpsdk.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 10)},
		&mcpsdk.ResourceLink{URI: "file:///tmp/x.txt", Name: "x"},
		&mcpsdk.EmbeddedResource{Resource: &mcpsdk.ResourceContents{URI: "mem://a", Text: "embedded"}},
		&mcpsdk.EmbeddedResource{Resource: &mcpsdk.ResourceContents{URI: "mem://b", MIMEType: "application/zip", Blob: make([]byte, 7)}},
	}}
	want := "first\n\n[image image/png, 1234 bytes]\n\n[audio audio/wav, 10 bytes]\n\nfile:///tmp/x.txt\n\nembedded\n\n[resource mem://b, application/zip, 7 bytes]"
	if got := resultText(res); got != want {
		t.Errorf("resultText = %q\nwant %q", got, want)
	}
	structured := &mcpsdk.CallToolResult{StructuredContent: map[string]any{"n": 1}}
	if got := resultText(structured); got != `{"n":1}` {
		t.Errorf("structured = %q", got)
	}
}

func TestDescription(t *testing.T) {
	if got := description(&mcpsdk.Tool{Description: "d", Title: "t"}); got != "d" {
		t.Errorf("got %q", got)
	}
	if got := description(&mcpsdk.Tool{Title: "t"}); got != "t" {
		t.Errorf("got %q", got)
	}
	if got := description(&mcpsdk.Tool{Annotations: &mcpsdk.ToolAnnotations{Title: "a"}}); got != "a" {
		t.Errorf("got %q", got)
	}
}

func TestRedactor(t *testing.T) {
	e := newExpander(func(name string) (string, bool) {
		return map[string]string{"TOKEN": "s3cr3t/+x", "SHORT": "ab"}[name], name == "TOKEN" || name == "SHORT"
	})
	out, err := e.expand("url", "http://h/?k=${TOKEN}&s=${SHORT}")
	if err != nil {
		t.Fatal(err)
	}
	if out != "http://h/?k=s3cr3t/+x&s=ab" {
		t.Fatalf("expanded = %q", out)
	}
	redact := e.redactor()
	for _, in := range []string{"got s3cr3t/+x", "got s3cr3t%2F%2Bx", "got s3cr3t%2F+x"} {
		if got := redact(in); got != "got ${TOKEN}" {
			t.Errorf("redact(%q) = %q", in, got)
		}
	}
	if got := redact("ab stays"); got != "ab stays" {
		t.Errorf("a short value was redacted: %q", got)
	}
}
