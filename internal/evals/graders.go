package evals

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// Graders is an operator's graders file (e.g. evals/graders.yaml).
type Graders struct {
	Graders []Grader `yaml:"graders"`
}

// Grader is one check of a replay. It applies to the cases whose id
// matches one of Cases (path.Match patterns; none: every case), and is
// exactly one kind:
//
//   - Exact: the answer is this text (spaces around it aside);
//   - Contains: the answer holds this text;
//   - Regex: the answer matches this regular expression;
//   - JSONSchema: the answer is JSON valid against this schema;
//   - Rubric: a model (the grade role) judges the answer by this rubric;
//   - Answer "recorded": the answer is the recorded one;
//   - ToolCalls "exact": the same tool calls, names and arguments, in
//     order, as recorded; "names": the same tool names in order.
type Grader struct {
	Name       string   `yaml:"name"`
	Cases      []string `yaml:"cases"`
	Exact      *string  `yaml:"exact"`
	Contains   string   `yaml:"contains"`
	Regex      string   `yaml:"regex"`
	JSONSchema any      `yaml:"json_schema"`
	Rubric     string   `yaml:"rubric"`
	Answer     string   `yaml:"answer"`
	ToolCalls  string   `yaml:"tool_calls"`
}

// DefaultGraders are the graders of an evaluation without a graders
// file: the recorded answer and the recorded tool calls.
const DefaultGraders = `graders:
  - name: same-answer
    answer: recorded
  - name: same-tool-calls
    tool_calls: exact
`

// ErrGraders is a graders file that cannot be used.
var ErrGraders = errors.New("bad graders file")

// ParseGraders reads a graders file, strictly: an unknown key is an error,
// as is a grader of no kind or of two.
func ParseGraders(data []byte) (Graders, error) {
	var g Graders
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte(DefaultGraders)
	}
	d := yaml.NewDecoder(bytes.NewReader(data))
	d.KnownFields(true)
	if err := d.Decode(&g); err != nil {
		return g, fmt.Errorf("%w: %w", ErrGraders, err)
	}
	for i := range g.Graders {
		if err := g.Graders[i].check(); err != nil {
			return g, fmt.Errorf("%w: grader %d: %w", ErrGraders, i+1, err)
		}
	}
	return g, nil
}

// kind is the grader's kind, and how many kinds it has.
func (g Grader) kind() (string, int) {
	kinds := []struct {
		name string
		set  bool
	}{
		{"exact", g.Exact != nil}, {"contains", g.Contains != ""}, {"regex", g.Regex != ""},
		{"json_schema", g.JSONSchema != nil}, {"rubric", g.Rubric != ""}, {"answer", g.Answer != ""},
		{"tool_calls", g.ToolCalls != ""},
	}
	name, n := "", 0
	for _, k := range kinds {
		if k.set {
			name, n = k.name, n+1
		}
	}
	return name, n
}

func (g *Grader) check() error {
	kind, n := g.kind()
	if n != 1 {
		return errors.New("give exactly one of exact, contains, regex, json_schema, rubric, answer, tool_calls")
	}
	if g.Name == "" {
		g.Name = kind
	}
	for _, p := range g.Cases {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("cases: %q: %w", p, err)
		}
	}
	switch {
	case g.Regex != "":
		if _, err := regexp.Compile(g.Regex); err != nil {
			return fmt.Errorf("regex: %w", err)
		}
	case g.JSONSchema != nil:
		if _, err := g.schema(); err != nil {
			return fmt.Errorf("json_schema: %w", err)
		}
	case g.Answer != "" && g.Answer != "recorded":
		return fmt.Errorf(`answer: %q: the one value is "recorded"`, g.Answer)
	case g.ToolCalls != "" && g.ToolCalls != "exact" && g.ToolCalls != "names":
		return fmt.Errorf(`tool_calls: %q: "exact" or "names"`, g.ToolCalls)
	}
	return nil
}

// applies says whether the grader grades case id.
func (g Grader) applies(id string) bool {
	if len(g.Cases) == 0 {
		return true
	}
	for _, p := range g.Cases {
		if ok, _ := path.Match(p, id); ok {
			return true
		}
	}
	return false
}

func (g Grader) schema() (*jsonschema.Schema, error) {
	raw, err := json.Marshal(g.JSONSchema)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	// No loader: a schema must not make the grader read files or URLs.
	c.UseLoader(jsonschema.SchemeURLLoader{})
	if err := c.AddResource("grader.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("grader.json")
}

// Judge grades an answer by a rubric (a model call on the grade role).
type Judge interface {
	Judge(ctx context.Context, rubric, question, answer string) (Verdict, error)
}

// Verdict is a judge's answer.
type Verdict struct {
	Pass   bool           `json:"pass"`
	Reason string         `json:"reason"`
	Usage  longhaul.Usage `json:"-"`
}

// VerdictSchema is the JSON schema a judge's answer follows.
const VerdictSchema = `{"type":"object","properties":{"pass":{"type":"boolean"},"reason":{"type":"string"}},"required":["pass","reason"],"additionalProperties":false}`

// Grade runs the graders that apply to case c on its replay: answer and
// calls. judge grades rubrics; nil fails them. It returns the verdicts and
// what the judge spent.
func (gs Graders) Grade(ctx context.Context, c contract.EvalCase, answer string, calls []contract.PinnedCall, judge Judge) ([]contract.GraderResult, longhaul.Usage, error) {
	var out []contract.GraderResult
	var usage longhaul.Usage
	for _, g := range gs.Graders {
		if !g.applies(c.ID) {
			continue
		}
		r := contract.GraderResult{Grader: g.Name}
		if g.Rubric != "" {
			v, err := rubric(ctx, judge, g.Rubric, c, answer)
			if err != nil {
				return out, usage, fmt.Errorf("grader %s: %w", g.Name, err)
			}
			r.Pass, r.Reason, usage = v.Pass, v.Reason, usage.Add(v.Usage)
		} else {
			r.Pass, r.Reason = g.grade(c, answer, calls)
		}
		out = append(out, r)
	}
	return out, usage, nil
}

func rubric(ctx context.Context, judge Judge, text string, c contract.EvalCase, answer string) (Verdict, error) {
	if judge == nil {
		return Verdict{Reason: "no model to grade rubrics with"}, nil
	}
	return judge.Judge(ctx, text, longhaul.LastUserText(c.Messages), answer)
}

// grade runs a grader that needs no model.
func (g Grader) grade(c contract.EvalCase, answer string, calls []contract.PinnedCall) (bool, string) {
	switch {
	case g.Exact != nil:
		return verdict(strings.TrimSpace(answer) == strings.TrimSpace(*g.Exact), "the answer is not the expected text")
	case g.Contains != "":
		return verdict(strings.Contains(answer, g.Contains), fmt.Sprintf("the answer does not contain %q", g.Contains))
	case g.Regex != "":
		return verdict(regexp.MustCompile(g.Regex).MatchString(answer), fmt.Sprintf("the answer does not match %s", g.Regex))
	case g.JSONSchema != nil:
		return jsonValid(g, answer)
	case g.Answer != "":
		return verdict(strings.TrimSpace(answer) == strings.TrimSpace(c.Answer), "the answer differs from the recorded one")
	default:
		diff := CallsDiff(c.Calls, calls, g.ToolCalls == "names")
		return verdict(len(diff) == 0, strings.Join(diff, "; "))
	}
}

func verdict(ok bool, why string) (bool, string) {
	if ok {
		return true, ""
	}
	return false, why
}

func jsonValid(g Grader, answer string) (bool, string) {
	s, err := g.schema()
	if err != nil {
		return false, err.Error()
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(answer))
	if err != nil {
		return false, "the answer is not JSON: " + err.Error()
	}
	if err := s.Validate(doc); err != nil {
		return false, err.Error()
	}
	return true, ""
}
