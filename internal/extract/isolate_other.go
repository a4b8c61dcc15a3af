//go:build !linux

package extract

import (
	"os"
	"os/exec"
)

// isolate does nothing off Linux: Longhaul's deployments run on Linux,
// where the child cannot read its parent's environment (isolate_linux.go).
func isolate(*exec.Cmd, string) error { return nil }

// selfPath is the running executable.
func selfPath() (string, error) { return os.Executable() }
