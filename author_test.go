package longhaul_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// internal/runs is the one author of a run: it alone builds the
// workflow's input (contract.AgentInput) and mints run ids. The HTTP
// handlers hand it requests in their own words (runs.Request) and read
// back what it gives them; none names the input type, so none can build
// one, and none writes a run id's prefix.

// namesRunInput lists where the Go source src names the workflow's input
// type, contract.AgentInput (under whatever name the file imports the
// contract package), or writes a run id's "run-" prefix.
func namesRunInput(t *testing.T, fset *token.FileSet, name string, src any) []string {
	t.Helper()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	local := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == module+"/contract" {
			local = "contract"
			if imp.Name != nil {
				local = imp.Name.Name
			}
		}
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && local != "" && x.Name == local && n.Sel.Name == "AgentInput" {
				found = append(found, fset.Position(n.Pos()).String()+": names contract.AgentInput")
			}
		case *ast.BasicLit:
			if s, err := strconv.Unquote(n.Value); n.Kind == token.STRING && err == nil && s == "run-" {
				found = append(found, fset.Position(n.Pos()).String()+`: mints a run id ("run-")`)
			}
		}
		return true
	})
	return found
}

// TestOneAuthorOfRuns holds the rule over every non-test file under api/.
func TestOneAuthorOfRuns(t *testing.T) {
	fset := token.NewFileSet()
	var files int
	err := filepath.WalkDir("api", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		files++
		for _, f := range namesRunInput(t, fset, path, nil) {
			t.Errorf("%s: a handler hands runs.Gate a runs.Request; internal/runs alone builds a run's input and mints its id", f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read %d files under api/; the walk missed the handlers", files)
	}
}

// TestOneAuthorOfRunsRefuses proves the rule catches a handler that builds
// an input, under the contract package's own name or another, or mints an
// id.
func TestOneAuthorOfRunsRefuses(t *testing.T) {
	for _, src := range []string{
		"package h\nimport \"" + module + "/contract\"\nvar in = contract.AgentInput{Agent: \"a\"}\n",
		"package h\nimport c \"" + module + "/contract\"\nfunc f(in *c.AgentInput) {}\n",
		"package h\nimport \"github.com/google/uuid\"\nvar id = \"run-\" + uuid.NewString()\n",
	} {
		if got := namesRunInput(t, token.NewFileSet(), "h.go", src); len(got) != 1 {
			t.Errorf("%q: found %v, want one finding", src, got)
		}
	}
	ok := "package h\nimport \"" + module + "/contract\"\nvar s = contract.StatusRunning\n"
	if got := namesRunInput(t, token.NewFileSet(), "h.go", ok); len(got) != 0 {
		t.Errorf("a handler naming another contract type was refused: %v", got)
	}
}
