package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
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

// schemaURL names a parameters schema inside its compiler. Nothing is ever
// loaded from it: the compiler reads no file and fetches no URL (see
// compileSchema).
const schemaURL = "urn:longhaul:parameters"

// printer renders the library's messages for the keywords problem does
// not word itself.
var printer = message.NewPrinter(language.English)

// ValidateArguments checks args against schema with
// github.com/santhosh-tekuri/jsonschema, which reports every failure. Empty
// args count as the empty object. Each failure becomes one line naming the
// argument, such as `argument "url": required`; the keywords tool schemas
// use (type, required, enum, additionalProperties, minimum, minLength, …)
// are worded for the model, the others keep the library's message. A bad
// schema is an error wrapping ErrInvalidSchema; bad arguments give an error
// wrapping ErrInvalidArguments.
func ValidateArguments(schema, args json.RawMessage) error {
	s, err := compileSchema(schema)
	if err != nil {
		return err
	}
	return s.validate(args)
}

// compiledSchema is a compiled parameters schema and its JSON, which
// names the properties an additionalProperties failure lists.
type compiledSchema struct {
	schema *jsonschema.Schema
	doc    any
}

// CheckSchema reports whether raw is a schema ValidateArguments can use: an
// object schema that compiles, referring to nothing outside itself.
func CheckSchema(raw json.RawMessage) error {
	_, err := compileSchema(raw)
	return err
}

// compileSchema compiles a parameters schema, which must describe an
// object. References may only point inside it: a tool's schema (an MCP
// server's, say) must not make the engine read files or fetch URLs.
func compileSchema(raw json.RawMessage) (*compiledSchema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, fmt.Errorf("%w: schema is empty", ErrInvalidSchema)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	if m, _ := doc.(map[string]any); m["type"] != "object" {
		return nil, fmt.Errorf(`%w: top-level "type" must be "object"`, ErrInvalidSchema)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	return &compiledSchema{schema: s, doc: doc}, nil
}

// validate checks args against the schema.
func (s *compiledSchema) validate(args json.RawMessage) error {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 {
		trimmed = []byte("{}")
	}
	instance, err := jsonschema.UnmarshalJSON(bytes.NewReader(trimmed))
	if err != nil {
		return fmt.Errorf("%w: arguments are not valid JSON: %v", ErrInvalidArguments, err)
	}
	var verr *jsonschema.ValidationError
	if err := s.schema.Validate(instance); !errors.As(err, &verr) {
		return err
	}
	var problems []problem
	s.render(verr, instance, &problems)
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].path < problems[j].path })
	lines := make([]string, len(problems))
	for i, p := range problems {
		lines[i] = p.String()
	}
	if len(lines) > maxProblems {
		lines = append(lines[:maxProblems], fmt.Sprintf("and %d more", len(lines)-maxProblems))
	}
	return fmt.Errorf("%w: %s", ErrInvalidArguments, strings.Join(lines, "; "))
}

// problem is one way the arguments fail their schema: the argument (a path
// such as "filter.year" or "tags[1]", "" for the arguments as a whole) and
// what is wrong with it.
type problem struct{ path, msg string }

func (p problem) String() string {
	if p.path == "" {
		return "arguments: " + p.msg
	}
	return fmt.Sprintf("argument %q: %s", p.path, p.msg)
}

// render appends the problems of e's tree: one for each failed keyword,
// and one for an anyOf or oneOf that no alternative satisfied, saying how
// each alternative failed.
func (s *compiledSchema) render(e *jsonschema.ValidationError, instance any, out *[]problem) {
	path, v := locate(instance, e.InstanceLocation)
	add := func(format string, args ...any) { *out = append(*out, problem{path, fmt.Sprintf(format, args...)}) }
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		for _, c := range e.Causes {
			s.render(c, instance, out)
		}
	case *kind.AnyOf, *kind.OneOf:
		if len(e.Causes) == 0 { // oneOf matched more than one
			add("%s", k.LocalizedString(printer))
			return
		}
		alts := make([]string, len(e.Causes))
		for i, c := range e.Causes {
			var ps []problem
			s.render(c, instance, &ps)
			text := make([]string, len(ps))
			for j, p := range ps {
				text[j] = p.msg
				if p.path != path {
					text[j] = p.String()
				}
			}
			alts[i] = "(" + strings.Join(text, "; ") + ")"
		}
		add("must match one of the alternatives: %s", strings.Join(alts, " or "))
	case *kind.Required:
		for _, name := range k.Missing {
			*out = append(*out, problem{join(path, name), "required"})
		}
	case *kind.AdditionalProperties:
		props, _ := s.schemaAt(e.SchemaURL)["properties"].(map[string]any)
		allowed := strings.Join(slices.Sorted(maps.Keys(props)), ", ")
		if allowed == "" {
			allowed = "none"
		}
		for _, name := range k.Properties {
			*out = append(*out, problem{join(path, name), "unknown argument (allowed: " + allowed + ")"})
		}
	case *kind.FalseSchema:
		add("not allowed")
	case *kind.Type:
		if len(k.Want) == 1 {
			add("must be %s, got %s", article(k.Want[0]), describe(v))
		} else {
			// The types as the schema lists them; the library sorts them.
			want, _ := s.schemaAt(e.SchemaURL)["type"].([]any)
			add("must be one of the types %v, got %s", want, describe(v))
		}
	case *kind.Enum:
		add("must be one of %v", k.Want)
	case *kind.Minimum:
		add("must be >= %s", number(k.Want))
	case *kind.Maximum:
		add("must be <= %s", number(k.Want))
	case *kind.ExclusiveMinimum:
		add("must be > %s", number(k.Want))
	case *kind.ExclusiveMaximum:
		add("must be < %s", number(k.Want))
	case *kind.MinLength:
		add("must be at least %d characters long", k.Want)
	case *kind.MaxLength:
		add("must be at most %d characters long", k.Want)
	case *kind.MinItems:
		add("must have at least %d items", k.Want)
	case *kind.MaxItems:
		add("must have at most %d items", k.Want)
	default:
		add("%s", k.LocalizedString(printer))
	}
}

// locate follows an instance location (object keys and array indexes) into
// the arguments and returns it as a path, with the value found there.
func locate(v any, loc []string) (string, any) {
	path := ""
	for _, tok := range loc {
		switch c := v.(type) {
		case []any:
			i, _ := strconv.Atoi(tok)
			path, v = fmt.Sprintf("%s[%d]", path, i), c[i]
		case map[string]any:
			path, v = join(path, tok), c[tok]
		}
	}
	return path, v
}

// schemaAt returns the schema, as JSON, at loc: a location the library
// reports (the schema's URL, "#", and a JSON pointer).
func (s *compiledSchema) schemaAt(loc string) map[string]any {
	node := s.doc
	if _, ptr, ok := strings.Cut(loc, "#"); ok && ptr != "" {
		for _, tok := range strings.Split(ptr, "/")[1:] {
			tok, _ = url.PathUnescape(tok)
			tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
			switch n := node.(type) {
			case map[string]any:
				node = n[tok]
			case []any:
				if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(n) {
					node = n[i]
				}
			}
		}
	}
	obj, _ := node.(map[string]any)
	return obj
}

// describe names the JSON type of v, with the value for short scalars.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean " + strconv.FormatBool(v)
	case string:
		if len([]rune(v)) <= 40 {
			return "string " + strconv.Quote(v)
		}
		return "a string"
	case json.Number:
		return "number " + v.String()
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// number writes a schema's bound as JSON would.
func number(r *big.Rat) string {
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'f', -1, 64)
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

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
