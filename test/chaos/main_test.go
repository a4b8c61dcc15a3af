//go:build unix

package chaos

import (
	"fmt"
	"os"
	"testing"
)

// binDir holds the longhaul binary the package's tests share (binary).
var binDir string

// TestMain makes the directory the package's tests share their binary in,
// and removes it once they are done.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "longhaul-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
