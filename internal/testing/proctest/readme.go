//go:build unix

package proctest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ReadmeBlock returns the first fenced code block of language lang in the
// repository's README.md after the first line that begins with after,
// so that a test runs the README's commands as a newcomer copies them.
func ReadmeBlock(t testing.TB, after, lang string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, after) {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			if lines[j] != "```"+lang {
				continue
			}
			for k := j + 1; k < len(lines); k++ {
				if lines[k] == "```" {
					return strings.Join(lines[j+1:k], "\n") + "\n"
				}
			}
		}
		break
	}
	t.Fatalf("README.md has no ```%s block after a line beginning %q", lang, after)
	return ""
}
