package tools

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// fakeTool is a Tool with a configurable name and schema.
type fakeTool struct {
	name   string
	schema string
}

func (f fakeTool) Name() string        { return f.name }
func (f fakeTool) Description() string { return "fake " + f.name }
func (f fakeTool) Parameters() json.RawMessage {
	if f.schema == "" {
		return json.RawMessage(`{"type":"object"}`)
	}
	return json.RawMessage(f.schema)
}
func (f fakeTool) Call(context.Context, Call) (Result, error) { return Result{Content: f.name}, nil }

func TestNewRegistryErrors(t *testing.T) {
	tests := []struct {
		name  string
		tools []Tool
		want  string
	}{
		{"duplicate", []Tool{fakeTool{name: "a"}, fakeTool{name: "b"}, fakeTool{name: "a"}}, `tool "a" is registered twice`},
		{"empty name", []Tool{fakeTool{name: ""}}, "invalid"},
		{"space in name", []Tool{fakeTool{name: "web fetch"}}, "invalid"},
		{"dot in name", []Tool{fakeTool{name: "web.fetch"}}, "invalid"},
		{"too long", []Tool{fakeTool{name: strings.Repeat("x", 65)}}, "invalid"},
		{"non-ascii", []Tool{fakeTool{name: "wëb"}}, "invalid"},
		{"nil tool", []Tool{nil}, "nil"},
		{"schema not JSON", []Tool{fakeTool{name: "a", schema: "{"}}, "invalid parameters schema"},
		{"schema not object", []Tool{fakeTool{name: "a", schema: `{"type":"string"}`}}, `"type" must be "object"`},
		{"schema bad keyword", []Tool{fakeTool{name: "a", schema: `{"type":"object","properties":{"x":{"type":7}}}`}}, "invalid parameters schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRegistry(tt.tools...)
			if err == nil {
				t.Fatalf("NewRegistry = %v, nil; want error", r)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"a": true, "web_fetch": true, "get-weather": true, "A1_b-2": true,
		strings.Repeat("x", 64): true, strings.Repeat("x", 65): false,
		"": false, "a b": false, "a.b": false, "a/b": false, "ä": false,
	} {
		if got := ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestRegistryLookups(t *testing.T) {
	r, err := NewRegistry(fakeTool{name: "zeta"}, fakeTool{name: "alpha"}, &CurrentTime{}, NewWebFetch(WebFetchOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	wantNames := []string{"alpha", "current_time", "web_fetch", "zeta"}
	names := r.Names()
	if !slices.Equal(names, wantNames) {
		t.Errorf("Names() = %v, want %v", names, wantNames)
	}
	names[0] = "mutated"
	if r.Names()[0] != "alpha" {
		t.Error("Names() returned the registry's own slice")
	}
	if tool, ok := r.Get("zeta"); !ok || tool.Name() != "zeta" {
		t.Errorf("Get(zeta) = %v, %v", tool, ok)
	}
	if _, ok := r.Get("nope"); ok {
		t.Error("Get(nope) found a tool")
	}
	if !r.Has("web_fetch") || r.Has("nope") {
		t.Error("Has gives wrong answers")
	}

	empty, err := NewRegistry()
	if err != nil || len(empty.Names()) != 0 {
		t.Errorf("NewRegistry() = %v, %v; want an empty registry", empty.Names(), err)
	}
}

func TestRegistryDefinitions(t *testing.T) {
	r, err := NewRegistry(fakeTool{name: "b"}, fakeTool{name: "a"}, fakeTool{name: "c", schema: `{"type":"object","properties":{"x":{"type":"string"}}}`})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		names   []string
		want    []string
		wantErr error
	}{
		{"order given", []string{"c", "a", "b"}, []string{"c", "a", "b"}, nil},
		{"subset", []string{"b"}, []string{"b"}, nil},
		{"none", nil, []string{}, nil},
		{"unknown", []string{"a", "missing"}, nil, ErrUnknownTool},
		{"twice", []string{"a", "a"}, nil, errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defs, err := r.Definitions(tt.names)
			if tt.wantErr != nil {
				if err == nil || tt.wantErr != errAny && !errors.Is(err, tt.wantErr) {
					t.Fatalf("Definitions(%v) error = %v, want %v", tt.names, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, d := range defs {
				got = append(got, d.Name)
				if d.Description != "fake "+d.Name {
					t.Errorf("definition %s description = %q", d.Name, d.Description)
				}
				if !json.Valid(d.Parameters) {
					t.Errorf("definition %s parameters are not JSON: %s", d.Name, d.Parameters)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Definitions(%v) names = %v, want %v", tt.names, got, tt.want)
			}
		})
	}
	_, err = r.Definitions([]string{"missing"})
	if err == nil || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("unknown tool error = %v, want it to name the tool", err)
	}
}

// errAny marks a table case that expects some error, whatever it wraps.
var errAny = errors.New("any error")

func TestRegistryValidate(t *testing.T) {
	r, err := NewRegistry(NewWebFetch(WebFetchOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Validate("web_fetch", json.RawMessage(`{"url":"https://example.com"}`)); err != nil {
		t.Errorf("Validate(valid) = %v", err)
	}
	if err := r.Validate("web_fetch", json.RawMessage(`{}`)); !errors.Is(err, ErrInvalidArguments) {
		t.Errorf("Validate(missing url) = %v, want ErrInvalidArguments", err)
	}
	if err := r.Validate("nope", json.RawMessage(`{}`)); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("Validate(unknown tool) = %v, want ErrUnknownTool", err)
	}
}

func TestRegistrySetGroup(t *testing.T) {
	r, err := NewRegistry(fakeTool{name: "fixed"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetGroup("mcp:a", []Tool{fakeTool{name: "a__x"}, fakeTool{name: "a__y"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Names(), []string{"a__x", "a__y", "fixed"}; !slices.Equal(got, want) {
		t.Fatalf("Names = %v, want %v", got, want)
	}
	// Replacing the group drops what it no longer lists.
	if err := r.SetGroup("mcp:a", []Tool{fakeTool{name: "a__z"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Names(), []string{"a__z", "fixed"}; !slices.Equal(got, want) {
		t.Fatalf("Names = %v, want %v", got, want)
	}
	// A collision with another group or a fixed tool changes nothing.
	for _, bad := range [][]Tool{{fakeTool{name: "fixed"}}, {fakeTool{name: "ok"}, fakeTool{name: "a__z"}}, {fakeTool{name: "bad name"}}} {
		if err := r.SetGroup("mcp:b", bad); err == nil {
			t.Fatalf("SetGroup(%v) = nil, want error", bad)
		}
		if got, want := r.Names(), []string{"a__z", "fixed"}; !slices.Equal(got, want) {
			t.Fatalf("after failed SetGroup Names = %v, want %v", got, want)
		}
	}
	if err := r.SetGroup("mcp:a", nil); err != nil {
		t.Fatal(err)
	}
	if r.Has("a__z") || !r.Has("fixed") {
		t.Fatalf("after emptying the group Names = %v", r.Names())
	}
	if err := r.SetGroup("", nil); err == nil {
		t.Fatal("SetGroup with empty group = nil, want error")
	}
}
