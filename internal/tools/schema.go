package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// ErrInvalidArguments is returned (wrapped) when a tool call's arguments
// are not valid JSON or do not match the tool's parameters schema. Its
// message is meant for the model, which can fix the call and try again.
var ErrInvalidArguments = errors.New("invalid arguments")

// ErrInvalidSchema is returned (wrapped) when a tool's parameters schema
// itself is unusable; that is a bug in the tool, not in the call.
var ErrInvalidSchema = errors.New("invalid parameters schema")

// maxProblems bounds how many problems one error lists.
const maxProblems = 10

// ValidateArguments checks args against schema. Empty args count as the
// empty object. The keywords tool schemas use (type, properties, required,
// enum, items, additionalProperties, minimum, maximum, minLength,
// maxLength and a few more) get messages naming the argument, such as
// `argument "url": required`; every other keyword is still enforced, by
// github.com/google/jsonschema-go, with that library's message. A bad
// schema is an error wrapping ErrInvalidSchema; bad arguments give an error
// wrapping ErrInvalidArguments.
func ValidateArguments(schema, args json.RawMessage) error {
	s, err := compileSchema(schema)
	if err != nil {
		return err
	}
	return s.validate(args)
}

// compiledSchema is a parsed and resolved parameters schema.
type compiledSchema struct {
	root     *jsonschema.Schema
	resolved *jsonschema.Resolved
}

// compileSchema parses and resolves a parameters schema, which must
// describe an object.
func compileSchema(raw json.RawMessage) (*compiledSchema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, fmt.Errorf("%w: schema is empty", ErrInvalidSchema)
	}
	var root jsonschema.Schema
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	if root.Type != "object" {
		return nil, fmt.Errorf(`%w: top-level "type" must be "object"`, ErrInvalidSchema)
	}
	resolved, err := root.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	return &compiledSchema{root: &root, resolved: resolved}, nil
}

// validate checks args against the schema.
func (s *compiledSchema) validate(args json.RawMessage) error {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 {
		trimmed = []byte("{}")
	}
	var instance any
	if err := json.Unmarshal(trimmed, &instance); err != nil {
		return fmt.Errorf("%w: arguments are not valid JSON: %v", ErrInvalidArguments, err)
	}
	var problems []string
	check(s.root, instance, "", &problems)
	if len(problems) > 0 {
		if len(problems) > maxProblems {
			problems = append(problems[:maxProblems], fmt.Sprintf("and %d more", len(problems)-maxProblems))
		}
		return fmt.Errorf("%w: %s", ErrInvalidArguments, strings.Join(problems, "; "))
	}
	if err := s.resolved.Validate(instance); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidArguments, err)
	}
	return nil
}

// check walks the common keywords and appends a model-readable problem for
// each violation. Whatever it does not understand is left to the library.
func check(s *jsonschema.Schema, v any, path string, problems *[]string) {
	if s == nil {
		return
	}
	report := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if path == "" {
			*problems = append(*problems, "arguments: "+msg)
		} else {
			*problems = append(*problems, fmt.Sprintf("argument %q: %s", path, msg))
		}
	}
	if isFalse(s) {
		report("not allowed")
		return
	}
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	if len(types) > 0 && !slices.ContainsFunc(types, func(t string) bool { return hasType(v, t) }) {
		if len(types) == 1 {
			report("must be %s, got %s", article(types[0]), describe(v))
		} else {
			report("must be one of the types %v, got %s", types, describe(v))
		}
		return
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return reflect.DeepEqual(e, v) }) {
		report("must be one of %v", s.Enum)
		return
	}
	switch v := v.(type) {
	case string:
		n := utf8.RuneCountInString(v)
		if s.MinLength != nil && n < *s.MinLength {
			report("must be at least %d characters long", *s.MinLength)
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			report("must be at most %d characters long", *s.MaxLength)
		}
	case float64:
		if s.Minimum != nil && v < *s.Minimum {
			report("must be >= %s", formatNumber(*s.Minimum))
		}
		if s.Maximum != nil && v > *s.Maximum {
			report("must be <= %s", formatNumber(*s.Maximum))
		}
		if s.ExclusiveMinimum != nil && v <= *s.ExclusiveMinimum {
			report("must be > %s", formatNumber(*s.ExclusiveMinimum))
		}
		if s.ExclusiveMaximum != nil && v >= *s.ExclusiveMaximum {
			report("must be < %s", formatNumber(*s.ExclusiveMaximum))
		}
	case []any:
		if s.MinItems != nil && len(v) < *s.MinItems {
			report("must have at least %d items", *s.MinItems)
		}
		if s.MaxItems != nil && len(v) > *s.MaxItems {
			report("must have at most %d items", *s.MaxItems)
		}
		for i, item := range v {
			check(s.Items, item, fmt.Sprintf("%s[%d]", path, i), problems)
		}
	case map[string]any:
		for _, name := range s.Required {
			if _, ok := v[name]; !ok {
				*problems = append(*problems, fmt.Sprintf("argument %q: required", join(path, name)))
			}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if ps, ok := s.Properties[k]; ok {
				check(ps, v[k], join(path, k), problems)
				continue
			}
			if len(s.PatternProperties) > 0 {
				continue // which keys the patterns cover is left to the library
			}
			if s.AdditionalProperties != nil {
				if isFalse(s.AdditionalProperties) {
					*problems = append(*problems, fmt.Sprintf("argument %q: unknown argument (allowed: %s)",
						join(path, k), strings.Join(propertyNames(s), ", ")))
				} else {
					check(s.AdditionalProperties, v[k], join(path, k), problems)
				}
			}
		}
	}
}

// isFalse reports whether s is the schema false, which jsonschema-go
// represents as {"not": {}}.
func isFalse(s *jsonschema.Schema) bool {
	return s.Not != nil && reflect.ValueOf(*s.Not).IsZero()
}

// hasType reports whether the decoded JSON value v has JSON schema type t.
func hasType(v any, t string) bool {
	switch v := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case float64:
		return t == "number" || t == "integer" && v == math.Trunc(v) && !math.IsInf(v, 0)
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	}
	return false
}

// describe names the JSON type of v, with the value for short scalars.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean " + strconv.FormatBool(v)
	case string:
		if utf8.RuneCountInString(v) <= 40 {
			return "string " + strconv.Quote(v)
		}
		return "a string"
	case float64:
		return "number " + formatNumber(v)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func article(t string) string {
	switch t {
	case "integer", "array", "object":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

func formatNumber(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func propertyNames(s *jsonschema.Schema) []string {
	names := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		names = append(names, k)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return []string{"none"}
	}
	return names
}
