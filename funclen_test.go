package longhaul_test

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxFuncLines is how long a production function may be before it needs a
// doc comment saying why: about what fits on a screen.
const maxFuncLines = 80

// longReason is what such a doc comment must say, in so many words.
const longReason = "long because"

type funcLen struct {
	name  string // file:line Recv.Name
	lines int
	why   bool // its doc comment says why it is long
}

// walkGoFiles calls f with the path of each Go file of the module, tests
// included, skipping testdata, node_modules and hidden folders; an error
// of the walk or of f fails t.
func walkGoFiles(t *testing.T, f func(p string) error) {
	t.Helper()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "node_modules" || (strings.HasPrefix(n, ".") && n != ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		return f(p)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// funcLengths measures every function and method with a body in the
// module's non-test Go files (test harnesses included: they are read and
// changed like the rest), skipping testdata and node_modules.
func funcLengths(t *testing.T) []funcLen {
	t.Helper()
	var fns []funcLen
	fset := token.NewFileSet()
	walkGoFiles(t, func(p string) error {
		if strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			start := fset.Position(fd.Pos())
			fns = append(fns, funcLen{
				name:  fmt.Sprintf("%s:%d %s", p, start.Line, funcName(fd)),
				lines: fset.Position(fd.End()).Line - start.Line + 1,
				why:   fd.Doc != nil && strings.Contains(strings.ToLower(fd.Doc.Text()), longReason),
			})
		}
		return nil
	})
	slices.SortFunc(fns, func(a, b funcLen) int { return cmp.Compare(b.lines, a.lines) })
	return fns
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if g, ok := t.(*ast.IndexExpr); ok {
		t = g.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// TestFunctionLength fails on a production function over maxFuncLines
// lines whose doc comment does not say why it is long. With -v it lists
// the ten longest.
func TestFunctionLength(t *testing.T) {
	fns := funcLengths(t)
	if len(fns) < 100 {
		t.Fatalf("measured %d functions; the walk missed the module", len(fns))
	}
	for i, f := range fns[:10] {
		t.Logf("%2d. %4d lines  %s", i+1, f.lines, f.name)
	}
	for _, f := range fns {
		if f.lines > maxFuncLines && !f.why {
			t.Errorf("%s is %d lines: split it along its seams, or give it a doc comment that says why (%q…)", f.name, f.lines, longReason)
		}
	}
}

// maxFileLines is how long a Go file may be before its first line must say
// why: past it a newcomer scrolls instead of reading.
const maxFileLines = 600

// TestFileLength fails on a Go file (tests included) over maxFileLines
// lines whose first line is not a comment saying why it is long ("// Long
// because …", set apart from the package clause by a blank line).
func TestFileLength(t *testing.T) {
	files := 0
	walkGoFiles(t, func(p string) error {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		text := string(data)
		lines := strings.Count(text, "\n")
		first, _, _ := strings.Cut(text, "\n")
		why := strings.HasPrefix(first, "//") && strings.Contains(strings.ToLower(first), longReason)
		if lines > maxFileLines && !why {
			t.Errorf("%s is %d lines: split it along its seams, or open it with a line that says why (\"// Long because …\")", p, lines)
		}
		return nil
	})
	if files < 100 {
		t.Fatalf("read %d files; the walk missed the module", files)
	}
}
