package redact

import (
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// MinSecretLen is the length in bytes of the shortest value Secrets hides;
// shorter values would blot out ordinary text.
const MinSecretLen = 4

// minPartial is the length of the shortest start of a secret HideCut hides
// at the end of a cut text.
const minPartial = 3

// Secrets hides the values of the environment variables that a template of
// an HTTP tool or an MCP server expanded, in the text of what the call or
// the server returns: a service that echoes an API key does not hand it to
// the model, the logs or the workflow history. Each value is replaced by the
// reference the operator wrote, ${NAME}, which names the secret without
// holding it. A value is found as written and in the forms net/url and
// encoding/json give it, since error messages quote URLs escaped and
// services echo JSON.
type Secrets struct {
	forms []form // longest value first
}

// form is one written form of a secret and the reference that replaces it.
type form struct{ value, ref string }

// NewSecrets returns a Secrets for values, which maps variable names to
// their values. Values shorter than MinSecretLen are not hidden.
func NewSecrets(values map[string]string) *Secrets {
	s := &Secrets{}
	seen := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		v := values[name]
		if len(v) < MinSecretLen {
			continue
		}
		for _, f := range writtenForms(v) {
			if !seen[f] {
				seen[f] = true
				s.forms = append(s.forms, form{f, "${" + name + "}"})
			}
		}
	}
	slices.SortStableFunc(s.forms, func(a, b form) int { return len(b.value) - len(a.value) })
	return s
}

// writtenForms returns v as written, URL-escaped and JSON-escaped.
func writtenForms(v string) []string {
	forms := []string{v, url.QueryEscape(v), url.PathEscape(v)}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) == nil {
		j := strings.TrimSuffix(b.String(), "\n")
		forms = append(forms, j[1:len(j)-1])
	}
	if j, err := json.Marshal(v); err == nil {
		forms = append(forms, string(j[1:len(j)-1]))
	}
	return forms
}

// Hide replaces every occurrence of a secret in text. Where occurrences
// overlap, every byte of each is hidden: the run they cover is replaced by
// the references of the secrets found in it, in order, and a secret found
// only inside a longer one is not named.
func (s *Secrets) Hide(text string) string {
	if s == nil || len(s.forms) == 0 {
		return text
	}
	covered := make([]bool, len(text))
	refAt := map[int]string{} // where an occurrence starts → its reference
	for _, f := range s.forms {
		for from := 0; ; {
			i := strings.Index(text[from:], f.value)
			if i < 0 {
				break
			}
			i += from
			from = i + 1
			end := i + len(f.value)
			if !slices.Contains(covered[i:end], false) {
				continue // inside a longer secret already hidden
			}
			if _, taken := refAt[i]; !taken {
				refAt[i] = f.ref
			}
			for j := i; j < end; j++ {
				covered[j] = true
			}
		}
	}
	if len(refAt) == 0 {
		return text
	}
	var b strings.Builder
	for i := 0; i < len(text); {
		if !covered[i] {
			b.WriteByte(text[i])
			i++
			continue
		}
		var last string
		for ; i < len(text) && covered[i]; i++ {
			if ref, ok := refAt[i]; ok && ref != last {
				b.WriteString(ref)
				last = ref
			}
		}
	}
	return b.String()
}

// HideCut is Hide for a text that was cut short: it also replaces the start
// of a secret (minPartial bytes or more) left at the end of the text.
func (s *Secrets) HideCut(text string) string {
	text = s.Hide(text)
	if s == nil {
		return text
	}
	for _, f := range s.forms {
		for k := len(f.value) - 1; k >= minPartial; k-- {
			if strings.HasSuffix(text, f.value[:k]) {
				return text[:len(text)-k] + f.ref
			}
		}
	}
	return text
}
