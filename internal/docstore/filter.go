package docstore

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// maxFilterDepth and maxFilterNodes bound a filter, so a query cannot make
// the match recurse or loop without end.
const (
	maxFilterDepth = 8
	maxFilterNodes = 256
)

// checkFilter reports whether f is a filter Search can apply: known
// types, a key on every comparison, a list for in and nin, a scalar for
// the others, and filters in every compound.
func checkFilter(f *Filter) error {
	if f == nil {
		return nil
	}
	n := 0
	return checkFilterAt(*f, 0, &n)
}

func checkFilterAt(f Filter, depth int, n *int) error {
	*n++
	if *n > maxFilterNodes || depth > maxFilterDepth {
		return fmt.Errorf("%w: filter: more than %d levels or %d filters", ErrInvalid, maxFilterDepth, maxFilterNodes)
	}
	switch f.Type {
	case "and", "or":
		if len(f.Filters) == 0 {
			return fmt.Errorf("%w: filter: %q needs filters", ErrInvalid, f.Type)
		}
		for _, g := range f.Filters {
			if err := checkFilterAt(g, depth+1, n); err != nil {
				return err
			}
		}
		return nil
	case "eq", "ne", "gt", "gte", "lt", "lte":
		if f.Key == "" {
			return fmt.Errorf("%w: filter: %q needs a key", ErrInvalid, f.Type)
		}
		if !scalar(f.Value) {
			return fmt.Errorf("%w: filter %q on %q: the value must be a string, a number or a boolean", ErrInvalid, f.Type, f.Key)
		}
		return nil
	case "in", "nin":
		if f.Key == "" {
			return fmt.Errorf("%w: filter: %q needs a key", ErrInvalid, f.Type)
		}
		list, ok := listOf(f.Value)
		if !ok {
			return fmt.Errorf("%w: filter %q on %q: the value must be a list of strings, numbers or booleans", ErrInvalid, f.Type, f.Key)
		}
		for _, v := range list {
			if !scalar(v) {
				return fmt.Errorf("%w: filter %q on %q: the value must be a list of strings, numbers or booleans", ErrInvalid, f.Type, f.Key)
			}
		}
		return nil
	}
	return fmt.Errorf("%w: filter: unknown type %q (want eq, ne, gt, gte, lt, lte, in, nin, and, or)", ErrInvalid, f.Type)
}

// Match reports whether attributes match f (checked by checkFilter).
// Numbers compare as numbers whatever their Go type; strings compare as
// strings; a comparison of a string with a number is false. A comparison
// on a key the attributes lack is false, except ne and nin, which it
// satisfies (the attribute is not equal to the value).
func (f Filter) Match(attrs map[string]any) bool {
	switch f.Type {
	case "and":
		for _, g := range f.Filters {
			if !g.Match(attrs) {
				return false
			}
		}
		return true
	case "or":
		for _, g := range f.Filters {
			if g.Match(attrs) {
				return true
			}
		}
		return false
	}
	v, ok := attrs[f.Key]
	if !ok {
		return f.Type == "ne" || f.Type == "nin"
	}
	switch f.Type {
	case "eq":
		return equal(v, f.Value)
	case "ne":
		return !equal(v, f.Value)
	case "in", "nin":
		list, _ := listOf(f.Value)
		found := false
		for _, x := range list {
			if equal(v, x) {
				found = true
				break
			}
		}
		return found == (f.Type == "in")
	}
	c, ok := compare(v, f.Value)
	if !ok {
		return false
	}
	switch f.Type {
	case "gt":
		return c > 0
	case "gte":
		return c >= 0
	case "lt":
		return c < 0
	case "lte":
		return c <= 0
	}
	return false
}

// number returns v as a float64 when it is a Go or JSON number.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func scalar(v any) bool {
	switch v.(type) {
	case string, bool:
		return true
	}
	f, ok := number(v)
	return ok && !math.IsNaN(f)
}

func listOf(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case []string:
		return anys(x), true
	case []float64:
		return anys(x), true
	case []int:
		return anys(x), true
	}
	return nil, false
}

func anys[T any](x []T) []any {
	out := make([]any, len(x))
	for i, v := range x {
		out[i] = v
	}
	return out
}

func equal(a, b any) bool {
	if c, ok := compare(a, b); ok {
		return c == 0
	}
	x, ok1 := a.(bool)
	y, ok2 := b.(bool)
	return ok1 && ok2 && x == y
}

// compare orders two numbers or two strings; ok is false for any other
// pair.
func compare(a, b any) (int, bool) {
	if x, ok := number(a); ok {
		y, ok := number(b)
		if !ok {
			return 0, false
		}
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	}
	x, ok1 := a.(string)
	y, ok2 := b.(string)
	if !ok1 || !ok2 {
		return 0, false
	}
	return strings.Compare(x, y), true
}
