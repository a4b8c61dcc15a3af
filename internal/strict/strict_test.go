package strict_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/longhaul-dev/longhaul/internal/strict"
)

func TestJSONEnd(t *testing.T) {
	for _, tc := range []struct {
		in      string
		trailed bool
	}{
		{`{"a": 1}`, false},
		{"{}\n \t", false},
		{`{} {}`, true},
		{`{} ]`, true},
		{`{} x`, true},
	} {
		dec := json.NewDecoder(strings.NewReader(tc.in))
		var v map[string]any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%q: decode: %v", tc.in, err)
		}
		err := strict.JSONEnd(dec)
		if got := err != nil; got != tc.trailed {
			t.Errorf("%q: JSONEnd = %v, want trailing data %v", tc.in, err, tc.trailed)
		}
		if tc.trailed && (!errors.Is(err, strict.ErrTrailing) || err.Error() != "data after the object") {
			t.Errorf("%q: JSONEnd = %q, want \"data after the object\" wrapping ErrTrailing", tc.in, err)
		}
	}
}

func TestYAML(t *testing.T) {
	doc, err := strict.YAML([]byte("---\na: 1\nb: [x]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if doc.Kind != yaml.DocumentNode || doc.Content[0].Kind != yaml.MappingNode || doc.Content[0].Content[0].Line != 2 {
		t.Errorf("YAML: got kind %v, want a document holding a mapping whose first key is on line 2", doc.Kind)
	}
	if doc, err := strict.YAML(nil); err != nil || doc.Kind != 0 {
		t.Errorf("YAML(nil) = %v, %v; want a zero node", doc, err)
	}
	if _, err := strict.YAML([]byte("a: 1\n...\n")); err != nil {
		t.Errorf("YAML with a document end marker: %v", err)
	}
	_, err = strict.YAML([]byte("a: 1\n---\nb: 2\n"))
	if !errors.Is(err, strict.ErrTrailing) || err.Error() != "data after the document" {
		t.Errorf("YAML with two documents = %v, want \"data after the document\" wrapping ErrTrailing", err)
	}
	if _, err := strict.YAML([]byte("a: [1\n")); err == nil || errors.Is(err, strict.ErrTrailing) {
		t.Errorf("YAML with a syntax error = %v, want yaml's error", err)
	}
	if _, err := strict.YAML([]byte("a: 1\n---\nb: [\n")); err == nil || errors.Is(err, strict.ErrTrailing) {
		t.Errorf("YAML with a syntax error in a second document = %v, want yaml's error", err)
	}
}
