// Reading one agent or skill file: its frontmatter decoded strictly, with
// every mistake named by file and key, into an Agent or a Skill.

package skills

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/strict"
	"github.com/longhaul-dev/longhaul/internal/tools"
)

// parseFile parses one agent or skill file. It returns the agent or the
// skill, or neither when the file is too broken to identify, together with
// the problems found. An entry is still returned when its frontmatter decoded
// with some values of the wrong type, so that other files' references to it
// resolve; damaged is then true, and the entry's own values are not checked
// further, since they would only echo the type errors.
func parseFile(src string, data []byte) (*Agent, *Skill, bool, []error) {
	fail := func(line int, k error, format string, args ...any) (*Agent, *Skill, bool, []error) {
		return nil, nil, false, []error{&FileError{Path: src, Line: line, Err: k, Detail: fmt.Sprintf(format, args...)}}
	}
	fm, body, err := splitFrontmatter(data)
	if err != nil {
		return fail(0, ErrFrontmatter, "%v", err)
	}
	// The frontmatter is parsed with its opening "---" (a YAML document
	// start), so the line of every node is its line in the file.
	doc, err := strict.YAML(append([]byte("---\n"), fm...))
	if err != nil {
		return fail(0, ErrFrontmatter, "invalid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if doc.Kind == 0 || len(doc.Content) == 0 || doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null" {
		return fail(0, ErrFileKind, `the frontmatter is empty: it needs an "agent:" or a "skill:" key`)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fail(root.Line, ErrFrontmatter, "the frontmatter must be a mapping of keys to values")
	}
	var hasAgent, hasSkill bool
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch root.Content[i].Value {
		case "agent":
			hasAgent = true
		case "skill":
			hasSkill = true
		}
	}
	switch {
	case hasAgent && hasSkill:
		return fail(0, ErrFileKind, `the frontmatter has both "agent:" and "skill:"; a file is one or the other`)
	case !hasAgent && !hasSkill:
		return fail(0, ErrFileKind, `the frontmatter has neither "agent:" nor "skill:"`)
	}
	d := &decoder{src: src}
	var a *Agent
	var s *Skill
	var more []error
	if hasAgent {
		var f agentFile
		d.decode(root, reflect.ValueOf(&f).Elem(), "")
		a, more = agentFromFile(src, body, &f)
	} else {
		var f skillFile
		d.decode(root, reflect.ValueOf(&f).Elem(), "")
		s, more = skillFromFile(src, body, &f)
	}
	// When values had the wrong type, the fields hold zero values; checking
	// them would only echo the type errors.
	if !d.damaged {
		d.problems = append(d.problems, more...)
	}
	return a, s, d.damaged, d.problems
}

// splitFrontmatter splits a file into its YAML frontmatter and its body. The
// first line must be "---" and a later line "---" closes the frontmatter.
func splitFrontmatter(data []byte) (fm []byte, body string, err error) {
	s := strings.TrimPrefix(string(data), "\ufeff")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	first, rest, found := strings.Cut(s, "\n")
	if strings.TrimRight(first, " \t") != "---" {
		return nil, "", errors.New(`missing frontmatter: the first line must be "---"`)
	}
	if !found {
		return nil, "", errors.New(`unclosed frontmatter: no closing "---" line`)
	}
	for off := 0; ; {
		line, after, more := strings.Cut(rest[off:], "\n")
		if strings.TrimRight(line, " \t") == "---" {
			return []byte(rest[:off]), after, nil
		}
		if !more {
			return nil, "", errors.New(`unclosed frontmatter: no closing "---" line`)
		}
		off += len(line) + 1
	}
}

// decoder decodes frontmatter nodes into the file structs strictly, as
// yaml.v3's KnownFields does, but walks the nodes itself so that each
// unknown key, duplicate key and value of the wrong type is reported from
// its node: with its line and its path (e.g. "http_tools[0].timeout").
type decoder struct {
	src      string
	problems []error
	// damaged is set by a problem that leaves a field at its zero value.
	damaged bool
}

func (d *decoder) report(n *yaml.Node, k error, format string, args ...any) {
	d.problems = append(d.problems, &FileError{Path: d.src, Line: n.Line, Err: k, Detail: fmt.Sprintf(format, args...)})
}

// decode stores n in v, a settable value, and reports what does not fit.
// Structs take the fields named by their yaml tags; lists, mappings and
// values held in an any are walked node by node; scalars (and aliases in an
// any, which yaml.v3 expands with its limits on aliasing) are decoded by
// yaml.v3.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.AliasNode && v.Kind() != reflect.Interface {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	t := v.Type()
	if t.Kind() == reflect.Interface && (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) {
		t = reflect.TypeOf(map[string]any(nil))
		if n.Kind == yaml.SequenceNode {
			t = reflect.TypeOf([]any(nil))
		}
		inner := reflect.New(t).Elem()
		d.decode(n, inner, path)
		v.Set(inner)
		return
	}
	switch {
	case t.Kind() == reflect.String && n.Kind == yaml.SequenceNode && modelKey(path):
		d.modelList(n, v, path)
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		// An optional mapping (allow:): absent stays nil, {} is set.
		p := reflect.New(t.Elem())
		d.decode(n, p.Elem(), path)
		v.Set(p)
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		d.each(n, path, func(k, val *yaml.Node) {
			for i := range t.NumField() {
				if t.Field(i).Tag.Get("yaml") == k.Value {
					d.decode(val, v.Field(i), join(path, k.Value))
					return
				}
			}
			d.report(k, ErrUnknownKey, "unknown key %q%s", k.Value, within(path))
		})
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		m := reflect.MakeMap(t)
		d.each(n, path, func(k, val *yaml.Node) {
			e := reflect.New(t.Elem()).Elem()
			d.decode(val, e, join(path, k.Value))
			m.SetMapIndex(reflect.ValueOf(k.Value), e)
		})
		v.Set(m)
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, c := range n.Content {
			d.decode(c, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case n.Kind == yaml.ScalarNode || n.Kind == yaml.AliasNode:
		if err := n.Decode(v.Addr().Interface()); err == nil {
			return
		}
		fallthrough
	default:
		got := map[yaml.Kind]string{yaml.MappingNode: "a mapping", yaml.SequenceNode: "a list"}[n.Kind]
		if got == "" {
			got = strconv.Quote(n.Value)
		}
		d.damaged = true
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		d.report(n, ErrInvalid, "%s: bad value: got %s, want %s", path, got, wantNames[t.Kind()])
	}
}

// modelKey reports whether the key at path names a model reference, which
// may be a fallback list: an agent's or a skill's model:, an agent's
// models: entries.
func modelKey(path string) bool {
	return path == "model" || strings.HasPrefix(path, "models.")
}

// modelList stores a list of model references (model: [a, b]) as one
// reference, the models joined by longhaul.ModelListSep: a fallback list
// travels wherever a single model does.
func (d *decoder) modelList(n *yaml.Node, v reflect.Value, path string) {
	refs := make([]string, 0, len(n.Content))
	for i, c := range n.Content {
		var ref string
		if c.Kind != yaml.ScalarNode || c.Decode(&ref) != nil || strings.TrimSpace(ref) == "" || strings.Contains(ref, longhaul.ModelListSep) {
			d.damaged = true
			d.report(c, ErrInvalid, "%s[%d]: bad value: want a model reference, such as llama3.1:8b or endpoint:model", path, i)
			return
		}
		refs = append(refs, strings.TrimSpace(ref))
	}
	if len(refs) == 0 {
		d.damaged = true
		d.report(n, ErrInvalid, "%s: an empty list: name a model, or leave the key out", path)
		return
	}
	v.SetString(strings.Join(refs, longhaul.ModelListSep))
}

// each calls f with every key and value of mapping n, reporting keys that
// appear twice; f sees each occurrence, so the last one wins.
func (d *decoder) each(n *yaml.Node, path string, f func(k, v *yaml.Node)) {
	first := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if prev, ok := first[k.Value]; ok {
			d.damaged = true
			d.report(k, ErrInvalid, "key %q%s appears twice (first on line %d)", k.Value, within(path), prev.Line)
		} else {
			first[k.Value] = k
		}
		f(k, n.Content[i+1])
	}
}

// join names key of the mapping at path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// within says where a key of the mapping at path is: "" at the top.
func within(path string) string {
	if path == "" {
		return ""
	}
	return " in " + path
}

// wantNames names, for a person, the kinds of value the file structs hold.
var wantNames = map[reflect.Kind]string{
	reflect.Int: "an integer", reflect.Int64: "an integer", reflect.Float32: "a number",
	reflect.Bool: "true or false", reflect.String: "a string", reflect.Slice: "a list",
	reflect.Map: "a mapping", reflect.Struct: "a mapping", reflect.Interface: "a value",
}

// agentFromFile converts decoded agent frontmatter, applying defaults.
func agentFromFile(src, body string, f *agentFile) (*Agent, []error) {
	if f.Agent == "" {
		return nil, []error{&FileError{Path: src, Err: ErrBadID, Detail: `"agent:" is empty: it must name the agent`}}
	}
	a := &Agent{
		ID:           f.Agent,
		Description:  strings.TrimSpace(f.Description),
		Mode:         Mode(f.Mode),
		Skills:       f.Skills,
		Model:        f.Model,
		MaxReplans:   DefaultMaxReplans,
		ReviewPlan:   f.ReviewPlan,
		Temperature:  f.Temperature,
		Memory:       MemoryMode(f.Memory),
		Remember:     f.Remember,
		Models:       f.Models,
		Language:     f.Language,
		ReasonIn:     f.ReasonIn,
		Allow:        f.Allow.rule(),
		VectorStores: f.VectorStores,
		Agents:       f.Agents,
		Prompt:       strings.TrimSpace(body),
		Source:       src,
	}
	if a.Mode == "" {
		a.Mode = ModeChat
	}
	if a.Memory == "" {
		a.Memory = MemoryOff
	}
	if a.Language == LanguageAuto && a.ReasonIn == "" {
		a.ReasonIn = DefaultReasonIn
	}
	if a.Memory == MemoryTools || a.Memory == MemoryRecall {
		// memory: tools and recall give the agent the memory skill (its
		// tools and its prompt) without listing it.
		if !slices.Contains(a.Skills, MemorySkill) {
			a.Skills = append(slices.Clone(a.Skills), MemorySkill)
		}
	}
	if len(a.VectorStores) > 0 && !slices.Contains(a.Skills, DocumentsSkill) {
		// vector_stores: gives the agent the documents skill (its tool
		// and its prompt) without listing it.
		a.Skills = append(slices.Clone(a.Skills), DocumentsSkill)
	}
	if f.MaxReplans != nil {
		a.MaxReplans = *f.MaxReplans
	}
	problems := checkAllow(src, "", a.Allow)
	if f.Parallel != nil {
		a.Parallel = *f.Parallel
		if a.Parallel < 1 || a.Parallel > MaxParallel {
			problems = append(problems, &FileError{Path: src, Err: ErrOutOfRange,
				Detail: fmt.Sprintf("parallel must be between 1 and %d, got %d", MaxParallel, a.Parallel)})
		}
	}
	if f.Context != nil {
		a.Context = *f.Context
		if a.Context < MinContext || a.Context > MaxContext {
			problems = append(problems, &FileError{Path: src, Err: ErrOutOfRange,
				Detail: fmt.Sprintf("context must be between %d and %d tokens, got %d", MinContext, MaxContext, a.Context)})
		}
	}
	problems = append(problems, checkVectorStores(src, a.VectorStores)...)
	if f.MaxTurns != nil {
		a.MaxTurns = *f.MaxTurns
		if a.MaxTurns == 0 { // 0 in the struct means "not set"; Validate checks the rest.
			problems = append(problems, &FileError{Path: src, Err: ErrOutOfRange,
				Detail: fmt.Sprintf("max_turns must be between 1 and %d, got 0", MaxTurnsLimit)})
		}
	}
	return a, problems
}

// checkVectorStores reports the ids of an agent's vector_stores: that are
// not vector store ids, and ids listed twice.
func checkVectorStores(src string, ids []string) []error {
	var problems []error
	if len(ids) > longhaul.MaxVectorStores {
		problems = append(problems, &FileError{Path: src, Err: ErrOutOfRange,
			Detail: fmt.Sprintf("vector_stores: at most %d stores, got %d", longhaul.MaxVectorStores, len(ids))})
	}
	for i, id := range ids {
		switch {
		case !longhaul.ValidVectorStoreID(id):
			problems = append(problems, &FileError{Path: src, Err: ErrBadVectorStore,
				Detail: fmt.Sprintf(`vector_stores[%d]: %q is not a vector store id ("vs_" and letters or digits)`, i, id)})
		case slices.Contains(ids[:i], id):
			problems = append(problems, &FileError{Path: src, Err: ErrBadVectorStore,
				Detail: fmt.Sprintf("vector_stores[%d]: %q is listed twice", i, id)})
		}
	}
	return problems
}

// skillFromFile converts decoded skill frontmatter, applying defaults.
func skillFromFile(src, body string, f *skillFile) (*Skill, []error) {
	if f.Skill == "" {
		return nil, []error{&FileError{Path: src, Err: ErrBadID, Detail: `"skill:" is empty: it must name the skill`}}
	}
	s := &Skill{
		ID:          f.Skill,
		Description: strings.TrimSpace(f.Description),
		Command:     f.Command,
		Tools:       f.Tools,
		Model:       f.Model,
		Allow:       f.Allow.rule(),
		Prompt:      strings.TrimSpace(body),
		Source:      src,
	}
	problems := checkAllow(src, "", s.Allow)
	bad := func(k error, format string, args ...any) {
		problems = append(problems, &FileError{Path: src, Err: k, Detail: fmt.Sprintf(format, args...)})
	}
	if f.MaxTurns != nil {
		s.MaxTurns = *f.MaxTurns
		if s.MaxTurns == 0 {
			bad(ErrOutOfRange, "max_turns must be between 1 and %d, got 0", MaxTurnsLimit)
		}
	}
	for i, hf := range f.HTTPTools {
		h, more := httpToolFromFile(src, s.ID, i, &hf)
		problems = append(problems, more...)
		s.HTTPTools = append(s.HTTPTools, h)
	}
	return s, problems
}

// httpToolFromFile converts the i-th http_tools entry of skill, applying
// defaults, and returns the problems of the values it converts.
func httpToolFromFile(src, skill string, i int, hf *httpToolFile) (tools.HTTPToolDef, []error) {
	h := tools.HTTPToolDef{
		Name:             hf.Name,
		Description:      strings.TrimSpace(hf.Description),
		Method:           strings.ToUpper(strings.TrimSpace(hf.Method)),
		URL:              strings.TrimSpace(hf.URL),
		Headers:          hf.Headers,
		Query:            hf.Query,
		Timeout:          tools.DefaultHTTPTimeout,
		MaxResponseBytes: tools.DefaultMaxResponseBytes,
		Result:           hf.Result,
		RequiresEnv:      hf.RequiresEnv,
		Skill:            skill,
		Allow:            hf.Allow.rule(),
	}
	label := fmt.Sprintf("http_tools[%d]", i)
	if h.Name != "" {
		label = fmt.Sprintf("http tool %q", h.Name)
	}
	if h.Method == "" {
		h.Method = "GET"
	}
	problems := checkAllow(src, label+": ", h.Allow)
	bad := func(k error, format string, args ...any) {
		problems = append(problems, &FileError{Path: src, Err: k, Detail: fmt.Sprintf(format, args...)})
	}
	if hf.Timeout != "" {
		d, err := time.ParseDuration(hf.Timeout)
		if err != nil {
			bad(ErrBadHTTPTool, "%s: timeout %q is not a Go duration such as 30s or 2m", label, hf.Timeout)
		} else {
			h.Timeout = d
		}
	}
	if hf.MaxResponseBytes != nil {
		h.MaxResponseBytes = *hf.MaxResponseBytes
	}
	switch hf.Approval {
	case "":
	case "required":
		h.RequiresApproval = true
	default:
		bad(ErrBadHTTPTool, `%s: approval must be "required" or omitted, got %q`, label, hf.Approval)
	}
	if hf.Body != nil {
		v, err := toJSONValue(hf.Body)
		if err != nil {
			bad(ErrBadHTTPTool, "%s: body is not JSON-compatible: %v", label, err)
		} else {
			h.Body = v
		}
	}
	// A broken parameters value is reported here and replaced by the
	// default, so Validate does not report it a second time.
	h.Parameters = map[string]any{"type": "object", "properties": map[string]any{}}
	if hf.Parameters != nil {
		v, err := toJSONValue(hf.Parameters)
		m, isMap := v.(map[string]any)
		switch {
		case err != nil:
			bad(ErrBadHTTPTool, "%s: parameters are not JSON-compatible: %v", label, err)
		case !isMap:
			bad(ErrBadHTTPTool, "%s: parameters must be a JSON schema object such as {type: object, properties: {...}}", label)
		default:
			h.Parameters = m
		}
	}
	return h, problems
}

// toJSONValue converts a decoded YAML value to the value encoding/json would
// decode from its JSON form, failing for values JSON cannot hold.
func toJSONValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}
