package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/template"

	"github.com/longhaul-dev/longhaul/internal/textcut"
)

// MaxResultBytes bounds the text an HTTP tool's result template writes;
// longer output is cut and the cut is noted.
const MaxResultBytes = 32 << 10

// errResultTooLong stops a result template that wrote MaxResultBytes.
var errResultTooLong = errors.New("result too long")

// resultFuncs are the functions of a result template beside text/template's
// own (and, or, not, eq, len, index, slice, printf, …):
//
//	arg "name"      the call argument name (nil when absent)
//	trunc N s       s cut to N characters ("2026-05-15" → "2026" with 4)
//	ellipsis N s    s cut to N characters, the last one "…" when cut
//	json v          v as compact JSON
//	default d v     v, or d when v is absent, null, "" or zero
//
// A function set per call is swapped in by clone; this one only parses.
func resultFuncs(args map[string]any) template.FuncMap {
	return template.FuncMap{
		"arg":      func(name string) any { return args[name] },
		"trunc":    func(n int, v any) string { return textcut.Runes(argString(v), n) },
		"ellipsis": func(n int, v any) string { return textcut.Ellipsis(argString(v), n) },
		"json": func(v any) (string, error) {
			b, err := marshalJSON(v)
			return string(b), err
		},
		"default": func(d, v any) any {
			switch v := v.(type) {
			case nil:
				return d
			case string:
				if v == "" {
					return d
				}
			case int64:
				if v == 0 {
					return d
				}
			case float64:
				if v == 0 {
					return d
				}
			case bool:
				if !v {
					return d
				}
			}
			return v
		},
	}
}

// templateNumbers turns the json.Numbers of a decoded value into int64
// (an integer that fits) or float64, so that templates print ids exactly,
// compare them with eq .id 5, and take 0 as false in if and with.
func templateNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = templateNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = templateNumbers(e)
		}
	}
	return v
}

// parseResultTemplate parses an HTTP tool's result template. Missing map
// keys are zero (nil), so {{with .field}} and default handle absent fields.
func parseResultTemplate(name, text string) (*template.Template, error) {
	return template.New(name).Funcs(resultFuncs(nil)).Option("missingkey=zero").Parse(text)
}

// limitedBuffer is a buffer that refuses to grow past max bytes.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.Buffer.Write(p[:max(room, 0)])
		return 0, errResultTooLong
	}
	return b.Buffer.Write(p)
}

// renderResult executes the result template over a JSON body (decoded with
// numbers kept exact) and the call's arguments. It fails when the body is
// not JSON or the template fails; the caller then shows the body as it
// came, with the reason.
func (t *HTTPTool) renderResult(data []byte, args map[string]any) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("the response is not JSON: %v", err)
	}
	v = templateNumbers(v)
	tmpl, err := t.result.Clone()
	if err != nil {
		return "", err
	}
	tmpl.Funcs(resultFuncs(args))
	out := &limitedBuffer{max: MaxResultBytes}
	err = tmpl.Execute(out, v)
	if errors.Is(err, errResultTooLong) {
		text := strings.ToValidUTF8(string(dropPartialRune(out.Bytes())), "\uFFFD")
		return strings.TrimRight(text, "\n") + fmt.Sprintf("\n\n[truncated: the result was longer than %d bytes]", MaxResultBytes), nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(strings.ToValidUTF8(out.String(), "\uFFFD")), nil
}
