package skills

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/longhaul-dev/longhaul/internal/access"
)

//go:embed builtin/*.md builtin/prompts/*.md
var builtinFiles embed.FS

// Builtin returns the agent and skill files embedded in the binary, rooted at
// the builtin directory and named "builtin/<file>" in sources and errors.
func Builtin() fs.FS {
	sub, err := fs.Sub(builtinFiles, "builtin")
	if err != nil {
		// fs.Sub only fails for an invalid directory name, which "builtin" is not.
		return Named("builtin", errFS{err})
	}
	return Named("builtin", sub)
}

// Named returns fsys labelled with name: files loaded from it get the source
// path.Join(name, file), which Agent.Source, Skill.Source and errors report.
// Without a label a layer's sources are the bare paths inside it.
func Named(name string, fsys fs.FS) fs.FS {
	return namedFS{fsys: fsys, name: name}
}

// namedFS is an fs.FS carrying a label for the files it holds.
type namedFS struct {
	fsys fs.FS
	name string
}

func (n namedFS) Open(name string) (fs.File, error) {
	if n.fsys == nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return n.fsys.Open(name)
}

func (n namedFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if n.fsys == nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	return fs.ReadDir(n.fsys, name)
}

func (n namedFS) ReadFile(name string) ([]byte, error) {
	if n.fsys == nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
	}
	return fs.ReadFile(n.fsys, name)
}

// errFS is an fs.FS whose every operation fails with err.
type errFS struct{ err error }

func (e errFS) Open(string) (fs.File, error) { return nil, e.err }

// sourceName names file p of layer for sources and errors.
func sourceName(layer fs.FS, p string) string {
	if n, ok := layer.(namedFS); ok && n.name != "" {
		return path.Join(n.name, p)
	}
	return p
}

// LoadDefault loads the built-in files and, when operatorDir is not empty,
// layers the files of that directory over them (see Load). An operatorDir
// that does not exist or is not a directory is an error naming it.
func LoadDefault(operatorDir string) (*Catalog, error) {
	if operatorDir == "" {
		return Load(Builtin())
	}
	info, err := os.Stat(operatorDir)
	if err != nil {
		return nil, fmt.Errorf("skills: operator directory %q: %w", operatorDir, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("skills: operator directory %q is not a directory", operatorDir)
	}
	return Load(Builtin(), Named(operatorDir, os.DirFS(operatorDir)))
}

// Load reads every agent and skill file of each layer, in order, and returns
// the merged catalog.
//
// In each layer, every file whose name ends in ".md" is read, recursively;
// files and directories whose names start with "." are skipped, and every
// other .md file must be an agent or skill file. An agent or skill in a later
// layer replaces the one with the same id from an earlier layer; two files of
// the same layer with the same id are an error. Agents and skills have
// separate ids, so an agent and a skill may share one.
//
// Load checks everything that can be checked without the tool registry and
// reports every problem it finds, joined with errors.Join, each a *FileError
// naming its file; the catalog is nil then. Whether each skill's tools exist
// is left to Validate, which the caller runs once the registry is known.
func Load(layers ...fs.FS) (*Catalog, error) {
	c := &Catalog{agents: map[string]*Agent{}, skills: map[string]*Skill{}, damaged: map[string]bool{}}
	var problems []error
	for i, layer := range layers {
		if layer == nil {
			problems = append(problems, fmt.Errorf("skills: layer %d is nil", i))
			continue
		}
		problems = append(problems, c.loadLayer(layer)...)
		problems = append(problems, c.loadPrompts(layer)...)
	}
	problems = append(problems, c.validate(nil, false)...)
	if len(problems) > 0 {
		return nil, joinSorted(problems)
	}
	return c, nil
}

// loadLayer parses the files of one layer into c, replacing entries from
// earlier layers, and returns the problems found.
func (c *Catalog) loadLayer(layer fs.FS) []error {
	var problems []error
	agentSrc := map[string]string{}
	skillSrc := map[string]string{}
	walkErr := fs.WalkDir(layer, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			problems = append(problems, &FileError{Path: sourceName(layer, p), Err: err, Detail: err.Error()})
			if d != nil && d.IsDir() && p != "." {
				return fs.SkipDir
			}
			return nil
		}
		if p == promptDir && d.IsDir() {
			return fs.SkipDir // prompts, read by loadPrompts
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !strings.EqualFold(path.Ext(p), ".md") {
			return nil
		}
		src := sourceName(layer, p)
		data, err := fs.ReadFile(layer, p)
		if err != nil {
			problems = append(problems, &FileError{Path: src, Err: err, Detail: err.Error()})
			return nil
		}
		a, s, damaged, errs := parseFile(src, data)
		problems = append(problems, errs...)
		if damaged {
			c.damaged[src] = true
		}
		var dup error
		switch {
		case a != nil:
			dup = define(c.agents, agentSrc, "agent", a.ID, src, a)
		case s != nil:
			dup = define(c.skills, skillSrc, "skill", s.ID, src, s)
		}
		if dup != nil {
			problems = append(problems, dup)
		}
		return nil
	})
	if walkErr != nil {
		problems = append(problems, fmt.Errorf("skills: reading %s: %w", sourceName(layer, "."), walkErr))
	}
	return problems
}

// define puts v, the kind id that file src defines, into defs, and records
// src in srcs, the files of the layer read so far by the ids they define;
// when one of them defines id already, it returns the problem instead.
func define[T any](defs map[string]T, srcs map[string]string, kind, id, src string, v T) error {
	if prev, ok := srcs[id]; ok {
		return &FileError{Path: src, Err: ErrDuplicateID,
			Detail: fmt.Sprintf("%s %q is also defined in %s", kind, id, prev)}
	}
	srcs[id] = src
	defs[id] = v
	return nil
}

// joinSorted joins problems ordered by file, keeping the order within each
// file, so that an operator reads each file's problems together.
func joinSorted(problems []error) error {
	sort.SliceStable(problems, func(i, j int) bool {
		var a, b *FileError
		okA, okB := errors.As(problems[i], &a), errors.As(problems[j], &b)
		if !okA || !okB {
			return !okA && okB
		}
		return a.Path < b.Path
	})
	return errors.Join(problems...)
}

// agentFile is the frontmatter of an agent file.
type agentFile struct {
	Agent       string   `yaml:"agent"`
	Description string   `yaml:"description"`
	Mode        string   `yaml:"mode"`
	Skills      []string `yaml:"skills"`
	Model       string   `yaml:"model"`
	MaxTurns    *int     `yaml:"max_turns"`
	MaxReplans  *int     `yaml:"max_replans"`
	Parallel    *int     `yaml:"parallel"`
	ReviewPlan  bool     `yaml:"review_plan"`
	Temperature *float32 `yaml:"temperature"`
	Memory      string   `yaml:"memory"`
	Remember    bool     `yaml:"remember"`
	// Models names a model per role; Language and ReasonIn are the
	// language rule (language: auto, reason_in: en).
	Models   RoleModels `yaml:"models"`
	Language string     `yaml:"language"`
	ReasonIn string     `yaml:"reason_in"`
	Allow    *allowFile `yaml:"allow"`
	// VectorStores are vector store ids ("vs_…") the agent searches.
	VectorStores []string `yaml:"vector_stores"`
	// Context is the agent's context window in tokens.
	Context *int `yaml:"context"`
	// Agents are the agents this one may ask (each an ask_<id> tool).
	Agents []string `yaml:"agents"`
}

// allowFile is an allow: rule (agents, skills, http_tools entries).
type allowFile struct {
	Roles  []string `yaml:"roles"`
	Groups []string `yaml:"groups"`
	Users  []string `yaml:"users"`
}

// rule converts an allow: rule; nil stays nil (everyone).
func (f *allowFile) rule() *access.Rule {
	if f == nil {
		return nil
	}
	return &access.Rule{Roles: f.Roles, Groups: f.Groups, Users: f.Users}
}

// checkAllow reports the problems of an allow: rule in src, each after
// prefix (e.g. `http tool "x": `).
func checkAllow(src, prefix string, r *access.Rule) []error {
	var problems []error
	for _, err := range r.Check() {
		problems = append(problems, &FileError{Path: src, Err: ErrBadAllow, Detail: prefix + err.Error()})
	}
	return problems
}

// skillFile is the frontmatter of a skill file.
type skillFile struct {
	Skill       string         `yaml:"skill"`
	Description string         `yaml:"description"`
	Command     string         `yaml:"command"`
	Tools       []string       `yaml:"tools"`
	HTTPTools   []httpToolFile `yaml:"http_tools"`
	Model       string         `yaml:"model"`
	MaxTurns    *int           `yaml:"max_turns"`
	Allow       *allowFile     `yaml:"allow"`
}

// httpToolFile is one entry of a skill file's http_tools.
type httpToolFile struct {
	Name             string            `yaml:"name"`
	Description      string            `yaml:"description"`
	Method           string            `yaml:"method"`
	URL              string            `yaml:"url"`
	Headers          map[string]string `yaml:"headers"`
	Query            map[string]string `yaml:"query"`
	Body             any               `yaml:"body"`
	Parameters       any               `yaml:"parameters"`
	Timeout          string            `yaml:"timeout"`
	MaxResponseBytes *int64            `yaml:"max_response_bytes"`
	Approval         string            `yaml:"approval"`
	Result           string            `yaml:"result"`
	RequiresEnv      []string          `yaml:"requires_env"`
	Allow            *allowFile        `yaml:"allow"`
}
