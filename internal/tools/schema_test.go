package tools

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const testSchema = `{
  "type": "object",
  "properties": {
    "url": {"type": "string", "minLength": 1, "maxLength": 20},
    "mediaType": {"type": "string", "enum": ["movie", "tv"]},
    "count": {"type": "integer", "minimum": 1, "maximum": 10},
    "score": {"type": "number", "exclusiveMinimum": 0},
    "exact": {"type": "boolean"},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    "filter": {
      "type": "object",
      "properties": {"year": {"type": "integer"}},
      "required": ["year"],
      "additionalProperties": false
    },
    "note": {"type": ["string", "null"]},
    "code": {"type": "string", "pattern": "^[A-Z]{3}$"}
  },
  "required": ["url"],
  "additionalProperties": false
}`

func TestValidateArguments(t *testing.T) {
	tests := []struct {
		name string
		args string
		want []string // substrings of the error; nil means valid
	}{
		{"minimal", `{"url":"https://x.io"}`, nil},
		{"everything", `{"url":"u","mediaType":"tv","count":3,"score":0.5,"exact":true,"tags":["a","b"],"filter":{"year":1999},"note":null,"code":"ABC"}`, nil},
		{"integer as float", `{"url":"u","count":2.0}`, nil},
		{"whitespace around", " \n{\"url\":\"u\"}\n ", nil},
		{"missing required", `{}`, []string{`argument "url": required`}},
		{"empty args", ``, []string{`argument "url": required`}},
		{"wrong type string", `{"url":5}`, []string{`argument "url": must be a string, got number 5`}},
		{"wrong type integer", `{"url":"u","count":1.5}`, []string{`argument "count": must be an integer, got number 1.5`}},
		{"integer as string", `{"url":"u","count":"3"}`, []string{`argument "count": must be an integer, got string "3"`}},
		{"wrong type boolean", `{"url":"u","exact":"yes"}`, []string{`argument "exact": must be a boolean`}},
		{"wrong type array", `{"url":"u","tags":"a"}`, []string{`argument "tags": must be an array`}},
		{"union type", `{"url":"u","note":1}`, []string{`argument "note": must be one of the types [string null]`}},
		{"enum", `{"url":"u","mediaType":"book"}`, []string{`argument "mediaType": must be one of [movie tv]`}},
		{"minimum", `{"url":"u","count":0}`, []string{`argument "count": must be >= 1`}},
		{"maximum", `{"url":"u","count":11}`, []string{`argument "count": must be <= 10`}},
		{"exclusive minimum", `{"url":"u","score":0}`, []string{`argument "score": must be > 0`}},
		{"min length", `{"url":""}`, []string{`argument "url": must be at least 1 characters long`}},
		{"max length", `{"url":"` + strings.Repeat("é", 21) + `"}`, []string{`argument "url": must be at most 20 characters long`}},
		{"max items", `{"url":"u","tags":["a","b","c","d"]}`, []string{`argument "tags": must have at most 3 items`}},
		{"item type", `{"url":"u","tags":["a",2]}`, []string{`argument "tags[1]": must be a string`}},
		{"additional property", `{"url":"u","colour":"red"}`, []string{`argument "colour": unknown argument (allowed: code, count, exact, filter, mediaType, note, score, tags, url)`}},
		{"nested required", `{"url":"u","filter":{}}`, []string{`argument "filter.year": required`}},
		{"nested additional", `{"url":"u","filter":{"year":1,"month":2}}`, []string{`argument "filter.month": unknown argument (allowed: year)`}},
		{"several problems", `{"mediaType":"x","count":"y"}`, []string{`argument "url": required`, `argument "count": must be an integer`, `argument "mediaType": must be one of`}},
		{"bad JSON", `{"url":`, []string{"arguments are not valid JSON"}},
		{"trailing garbage", `{"url":"u"} x`, []string{"arguments are not valid JSON"}},
		{"not an object", `["u"]`, []string{"arguments: must be an object, got an array"}},
		{"null", `null`, []string{"arguments: must be an object, got null"}},
		{"keyword left to the library", `{"url":"u","code":"abc"}`, []string{"pattern"}},
		{"library keyword with the others", `{"code":"abc","count":0}`, []string{`argument "url": required`, `argument "code": 'abc' does not match pattern`, `argument "count": must be >= 1`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateArguments(json.RawMessage(testSchema), json.RawMessage(tt.args))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("ValidateArguments(%s) = %v, want nil", tt.args, err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidArguments) {
				t.Fatalf("ValidateArguments(%s) = %v, want ErrInvalidArguments", tt.args, err)
			}
			checkContains(t, "error", err.Error(), tt.want, nil)
		})
	}
}

func TestValidateArgumentsBadSchema(t *testing.T) {
	for _, schema := range []string{``, `{`, `{"type":"array"}`, `{"properties":{}}`, `{"type":"object","required":"url"}`,
		`{"type":"object","properties":{"r":{"$ref":"file:///etc/passwd"}}}`, `{"type":"object","properties":{"r":{"$ref":"https://example.com/s.json"}}}`} {
		err := ValidateArguments(json.RawMessage(schema), json.RawMessage(`{}`))
		if !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("ValidateArguments(schema %q) = %v, want ErrInvalidSchema", schema, err)
		}
		if errors.Is(err, ErrInvalidArguments) {
			t.Errorf("schema %q: a bad schema must not blame the arguments", schema)
		}
	}
}

func TestValidateArgumentsListsAtMostTenProblems(t *testing.T) {
	schema := `{"type":"object","additionalProperties":false}`
	var b strings.Builder
	b.WriteString("{")
	for i := range 15 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"k` + string(rune('a'+i)) + `":1`)
	}
	b.WriteString("}")
	err := ValidateArguments(json.RawMessage(schema), json.RawMessage(b.String()))
	if !errors.Is(err, ErrInvalidArguments) {
		t.Fatalf("error = %v", err)
	}
	if got := strings.Count(err.Error(), "unknown argument"); got != 10 {
		t.Errorf("problems listed = %d, want 10: %v", got, err)
	}
	if !strings.Contains(err.Error(), "and 5 more") {
		t.Errorf("error = %q, want it to mention the rest", err)
	}
}

func TestValidateArgumentsAlternatives(t *testing.T) {
	schema := `{"type":"object","properties":{"when":{"anyOf":[{"type":"string","minLength":3},{"type":"object","required":["year"]}]}}}`
	err := ValidateArguments(json.RawMessage(schema), json.RawMessage(`{"when":{}}`))
	want := `invalid arguments: argument "when": must match one of the alternatives: (must be a string, got an object) or (argument "when.year": required)`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
}
