package longhaul_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The README is a map, not a manual: under maxReadmeLines lines, the rest
// in docs/. Its "Layout" block is checked against the tree here: every
// package, every workflow file and every activity named, every path it
// names present.
const maxReadmeLines = 400

// layoutGroups are the Layout block's entries that name their packages by
// the last element alone, as items "name (what it is) · name · …" (a
// comma list of names before one description is one item too): the test
// doubles and the scenario tests. Every name must be a folder under the
// entry.
var layoutGroups = []string{"internal/testing", "test"}

// headColumn is the column left of which a line of the block starts an
// entry (a path, drawn as a tree); the descriptions start right of it.
const headColumn = 16

// treeRunes are the drawing of the map's tree, not part of its words.
var treeRunes = strings.NewReplacer("│", " ", "├", " ", "└", " ", "─", " ")

// repoPath is a token that looks like a path of the repository: words of
// a file name joined by "/", one of them possibly a brace list
// ("internal/{a,b}"). It is taken as a path when it has a "/" or names a
// Go file.
var repoPath = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/([A-Za-z0-9_.-]+|\{[A-Za-z0-9_.,-]+\}))*/?$`)

// layoutEntry is one entry of the block: the path that starts it, the
// folder the names in it are relative to, and its text, continuation
// lines included.
type layoutEntry struct{ head, dir, text string }

// layoutMap is what the block names: the repository paths it resolves to
// and the names that resolve to nothing.
type layoutMap struct {
	named   map[string]bool
	missing []string
}

// layoutBlock returns the fenced code block of readme's "## Layout"
// section.
func layoutBlock(readme string) (string, bool) {
	_, section, ok := strings.Cut(readme, "\n## Layout\n")
	if !ok {
		return "", false
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, ok := strings.Cut(section, "```\n")
	if !ok {
		return "", false
	}
	block, _, ok = strings.Cut(block, "```")
	return block, ok
}

// layoutEntries splits the block into its entries: a line whose first
// word is a path (or "." for the root) left of headColumn starts one.
func layoutEntries(block string) []layoutEntry {
	var entries []layoutEntry
	for line := range strings.Lines(block) {
		line = treeRunes.Replace(strings.TrimRight(line, "\n"))
		trimmed := strings.TrimLeft(line, " ")
		col := len([]rune(line)) - len([]rune(trimmed))
		first, rest, _ := strings.Cut(trimmed, " ")
		if col < headColumn && (first == "." || isPathToken(first) && strings.Contains(first, "/")) {
			dir, _, _ := strings.Cut(first, "{")
			entries = append(entries, layoutEntry{head: first, dir: path.Clean(strings.TrimSuffix(dir, "/")), text: rest})
			continue
		}
		if len(entries) == 0 {
			entries = append(entries, layoutEntry{dir: "."})
		}
		entries[len(entries)-1].text += "\n" + line
	}
	return entries
}

func isPathToken(tok string) bool {
	return repoPath.MatchString(tok) && (strings.Contains(tok, "/") || strings.HasSuffix(tok, ".go"))
}

// trimToken takes the punctuation of the prose around a word off it, and
// a possessive ("internal/window's").
func trimToken(tok string) string {
	const around = "()[],;:.`\"'"
	tok = strings.TrimLeft(tok, "(`\"")
	tok = strings.TrimRight(tok, around)
	return strings.TrimRight(strings.TrimSuffix(tok, "'s"), around)
}

// expandBraces turns "internal/{a,b}" into internal/a and internal/b.
func expandBraces(tok string) []string {
	pre, rest, ok := strings.Cut(tok, "{")
	if !ok {
		return []string{tok}
	}
	list, post, _ := strings.Cut(rest, "}")
	var out []string
	for item := range strings.SplitSeq(list, ",") {
		out = append(out, pre+item+post)
	}
	return out
}

// resolve finds the path a name of an entry in dir stands for: a path
// with a "/" from the root, else in dir; a file name in dir, else at the
// root (the root package's tests the map cites).
func resolve(name, dir string, exists func(string) bool) (string, bool) {
	cands := []string{path.Join(dir, name), name}
	if strings.Contains(strings.TrimSuffix(name, "/"), "/") {
		cands[0], cands[1] = cands[1], cands[0]
	}
	for _, c := range cands {
		if c = path.Clean(c); exists(c) {
			return c, true
		}
	}
	return "", false
}

// readLayout reads what the block names, with exists telling whether a
// path (relative to the repository's root) is there.
func readLayout(block string, exists func(string) bool) layoutMap {
	m := layoutMap{named: map[string]bool{}}
	add := func(name, dir string) {
		if r, ok := resolve(name, dir, exists); ok {
			m.named[r] = true
		} else {
			m.missing = append(m.missing, name+" (in the entry of "+dir+")")
		}
	}
	for _, e := range layoutEntries(block) {
		if e.head == "." {
			add(".", "")
		}
		for _, tok := range strings.Fields(e.head + " " + e.text) {
			if tok = trimToken(tok); isPathToken(tok) {
				for _, p := range expandBraces(tok) {
					add(p, e.dir)
				}
			}
		}
		if !slices.Contains(layoutGroups, e.dir) {
			continue
		}
		for _, name := range groupNames(e.text) {
			if p := e.dir + "/" + name; exists(p) {
				m.named[p] = true
			} else {
				m.missing = append(m.missing, name+" (in the entry of "+e.dir+")")
			}
		}
	}
	return m
}

// groupNames are the names a group entry's items start with: the words
// before each item's description in parentheses.
func groupNames(text string) []string {
	var names []string
	for item := range strings.SplitSeq(text, "·") {
		head, _, _ := strings.Cut(item, "(")
		names = append(names, strings.FieldsFunc(head, func(r rune) bool {
			return r == ',' || r == ' ' || r == '\n'
		})...)
	}
	return names
}

// unnamed returns the paths of want the map does not name.
func (m layoutMap) unnamed(want []string) []string {
	var out []string
	for _, p := range want {
		if !m.named[p] {
			out = append(out, p)
		}
	}
	return out
}

// unnamedActivities returns the activities the docs do not name as a word.
func unnamedActivities(docs string, names []string) []string {
	var out []string
	for _, n := range names {
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(n) + `\b`).MatchString(docs) {
			out = append(out, n)
		}
	}
	return out
}

// activityMethods returns the exported methods of Activities in f. The
// worker registers a *Activities (worker.Register: w.RegisterActivity(acts)),
// and Temporal registers each exported method of its method set, value
// receivers included (go.temporal.io/sdk v1.50.0,
// internal/internal_worker.go:907-940, registerActivityStructWithOptions).
func activityMethods(f *ast.File) []string {
	var names []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv == nil || !fn.Name.IsExported() {
			continue
		}
		typ := fn.Recv.List[0].Type
		if star, ok := typ.(*ast.StarExpr); ok {
			typ = star.X
		}
		if id, ok := typ.(*ast.Ident); ok && id.Name == "Activities" {
			names = append(names, fn.Name.Name)
		}
	}
	return names
}

func readmeLines(readme string) int {
	return strings.Count(strings.TrimSuffix(readme, "\n"), "\n") + 1
}

// nonTestGo lists the non-test Go files in dir.
func nonTestGo(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fileExists(p string) bool {
	_, err := os.Stat(filepath.FromSlash(p))
	return err == nil
}

// TestReadmeMap holds README's map to the tree: README.md under
// maxReadmeLines lines; every package of the module, every workflow file
// named in its Layout block, every path the block names present; every
// activity Temporal sees named in docs/architecture.md or README.md.
func TestReadmeMap(t *testing.T) {
	readme := readFile(t, "README.md")
	if n := readmeLines(readme); n >= maxReadmeLines {
		t.Errorf("README.md has %d lines, want under %d: it is a map; move the rest to docs/", n, maxReadmeLines)
	}
	block, ok := layoutBlock(readme)
	if !ok {
		t.Fatal(`README.md has no fenced block under "## Layout"`)
	}
	m := readLayout(block, fileExists)
	for _, p := range m.missing {
		t.Errorf("README's Layout names %s, which is not in the tree", p)
	}
	var pkgs []string
	for p := range moduleImports(t) {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	for _, p := range m.unnamed(pkgs) {
		t.Errorf("package %s is not in README's Layout: name it there", p)
	}
	var wfs []string
	for _, f := range nonTestGo(t, "workflows") {
		wfs = append(wfs, filepath.ToSlash(f))
	}
	for _, f := range m.unnamed(wfs) {
		t.Errorf("workflow file %s is not in README's Layout (under workflows/): name it there", f)
	}
	var acts []string
	fset := token.NewFileSet()
	for _, f := range nonTestGo(t, "activities") {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		acts = append(acts, activityMethods(file)...)
	}
	if !slices.Contains(acts, "ChatCompletion") || len(wfs) == 0 || len(pkgs) == 0 {
		t.Fatalf("found activities %v, workflow files %v, packages %v: the test reads the tree wrong", acts, wfs, pkgs)
	}
	docs := readFile(t, "docs/architecture.md") + readme
	for _, a := range unnamedActivities(docs, acts) {
		t.Errorf("activity %s is not named in docs/architecture.md (How a request flows) or README.md", a)
	}
}

// TestReadmeMapRefuses proves each check of TestReadmeMap can fail, on a
// made-up map, tree and docs.
func TestReadmeMapRefuses(t *testing.T) {
	const block = "cmd/longhaul/        wiring: main.go · gone.go\n" +
		"  api/               HTTP: routes in server.go (layers_test.go checks it)\n" +
		"  │   api/runsapi    the runs API\n" +
		"    workflows/       AgentWorkflow: agent.go · stale.go\n" +
		"    │                (WebhookWorkflow: webhooks.go)\n" +
		"          internal/{config,nowhere}\n" +
		"  contract/          the workflow's own state stays in workflows/checkpoint.go; skills/builtin/\n" +
		".                    package longhaul (errors.go)\n" +
		"internal/testing/    llmtest (the scripted model) · ghosttest\n" +
		"test/                chaos (crash test, make chaos / topology) · mcp, pglite (npm pins)\n"
	tree := []string{".", "errors.go", "layers_test.go", "cmd/longhaul", "cmd/longhaul/main.go", "api", "api/server.go",
		"api/runsapi", "workflows", "workflows/agent.go", "workflows/webhooks.go", "workflows/checkpoint.go",
		"internal/config", "contract", "skills/builtin", "internal/testing", "internal/testing/llmtest",
		"test", "test/chaos", "test/mcp", "test/pglite"}
	m := readLayout(block, func(p string) bool { return slices.Contains(tree, p) })
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"missing", m.missing, []string{"gone.go (in the entry of cmd/longhaul)", "stale.go (in the entry of workflows)",
			"internal/nowhere (in the entry of internal)", "ghosttest (in the entry of internal/testing)"}},
		{"unnamed packages", m.unnamed([]string{".", "api", "api/runsapi", "api/sse", "cmd/longhaul", "contract",
			"internal/config", "internal/testing/llmtest", "internal/testing/owuitest", "test/chaos", "test/stack"}),
			[]string{"api/sse", "internal/testing/owuitest", "test/stack"}},
		{"unnamed workflow files", m.unnamed([]string{"workflows/agent.go", "workflows/webhooks.go",
			"workflows/checkpoint.go", "workflows/fork.go"}), []string{"workflows/fork.go"}},
		{"unnamed activities", unnamedActivities("| `model.go` | `ChatCompletion` |\nPlanning and CallTool.",
			[]string{"ChatCompletion", "CallTool", "Plan", "Compact"}), []string{"Plan", "Compact"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
		}
	}
	if !m.named["skills/builtin"] || !m.named["layers_test.go"] || !m.named["errors.go"] {
		t.Errorf("named = %v: a path from the root, or a root file an entry cites, is not named", m.named)
	}
	if _, ok := layoutBlock("# X\n\n## Usage\n\n```\ncmd/\n```\n"); ok {
		t.Error("layoutBlock found a Layout block in a README without one")
	}
	long := strings.Repeat("line\n", maxReadmeLines)
	if n := readmeLines(long); n < maxReadmeLines {
		t.Errorf("readmeLines(%d lines) = %d", maxReadmeLines, n)
	}
	if n := readmeLines(long[len("line\n"):]); n >= maxReadmeLines {
		t.Errorf("readmeLines(%d lines) = %d", maxReadmeLines-1, n)
	}
	const src = "package activities\n" +
		"func (a *Activities) ChatCompletion() {}\n" +
		"func (a Activities) Describe() {}\n" +
		"func (a *Activities) stream() {}\n" +
		"func (r *Registry) Lookup() {}\n" +
		"func Helper() {}\n"
	f, err := parser.ParseFile(token.NewFileSet(), "a.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := activityMethods(f); !slices.Equal(got, []string{"ChatCompletion", "Describe"}) {
		t.Errorf("activityMethods = %q, want the exported methods of Activities, value receivers too", got)
	}
}
