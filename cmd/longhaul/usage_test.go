package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelpStartsNothing: every subcommand answers --help with its usage on
// stdout and exit 0, and starts nothing (no data directory appears in the
// working directory); an unknown flag or a stray argument exits 2 with the
// usage on stderr.
func TestHelpStartsNothing(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("LONGHAUL_DATA_DIR", "")
	commands := [][]string{
		{"dev"}, {"server"}, {"worker"}, {"api"}, {"setup"}, {"health"}, {"settings"}, {"version"},
		{"eval"}, {"eval", "export"}, {"eval", "run"},
	}
	for _, cmd := range commands {
		name := strings.Join(cmd, " ")
		for _, help := range []string{"--help", "-h"} {
			var out, errs strings.Builder
			if code := Main(append(append([]string(nil), cmd...), help), &out, &errs); code != 0 {
				t.Errorf("longhaul %s %s: exit %d, stderr %q", name, help, code, errs.String())
			}
			if !strings.Contains(out.String(), "Usage:") || !strings.Contains(out.String(), "longhaul "+cmd[0]) {
				t.Errorf("longhaul %s %s printed no usage: %q", name, help, out.String())
			}
		}
		var out, errs strings.Builder
		if code := Main(append(append([]string(nil), cmd...), "--no-such-flag"), &out, &errs); code != 2 {
			t.Errorf("longhaul %s --no-such-flag: exit %d", name, code)
		}
		if !strings.Contains(errs.String(), "no-such-flag") || !strings.Contains(errs.String(), "Usage:") {
			t.Errorf("longhaul %s --no-such-flag: stderr %q", name, errs.String())
		}
	}
	var out, errs strings.Builder
	if code := Main([]string{"dev", "now"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), `unexpected argument "now"`) {
		t.Errorf("longhaul dev now: exit %d, stderr %q", code, errs.String())
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) > 0 {
		t.Errorf("--help left %s behind", filepath.Join(dir, entries[0].Name()))
	}
}
