// Package strict holds the one way Longhaul reads a configuration file or a
// request body strictly: exactly one JSON value or YAML document, and
// nothing after it, so a file with a stray second document or a body with
// a second object is refused with the same words wherever it is read.
// What is inside the value (unknown keys, duplicates, types) stays with
// the callers, which report it with their own paths and lines.
package strict

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"gopkg.in/yaml.v3"
)

// ErrTrailing is wrapped by the error JSONEnd and YAML return when data
// follows the one value they read.
var ErrTrailing = errors.New("trailing data")

// JSONEnd checks that dec, having read one JSON object, holds nothing more
// than white space. Otherwise it returns "data after the object", wrapping
// ErrTrailing.
func JSONEnd(dec *json.Decoder) error {
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return trailing("object")
	}
	return nil
}

// YAML parses data as one YAML document, whose node it returns (of Kind 0
// when data holds no document). A second document is an error, "data after
// the document", wrapping ErrTrailing; a syntax error is yaml.v3's.
func YAML(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
		return &doc, nil
	case err != nil:
		return nil, err
	default:
		return nil, trailing("document")
	}
}

// trailing is the error for data after the one value of kind what.
func trailing(what string) error {
	return &trailingError{what: what}
}

type trailingError struct{ what string }

func (e *trailingError) Error() string { return "data after the " + e.what }

func (e *trailingError) Unwrap() error { return ErrTrailing }
