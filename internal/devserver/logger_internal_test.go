package devserver

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/server/common/log/tag"
)

// TestFatalNamesItsCause runs the Temporal logger's Fatal in a child
// process, as the server does when a port it was given is taken: the
// child exits 1 and the line reaches stderr, not only the log file in the
// data directory; a warning stays in the file.
func TestFatalNamesItsCause(t *testing.T) {
	if dir := os.Getenv("DEVSERVER_FATAL_CHILD"); dir != "" {
		l := newLogger(dir, os.Stderr)
		l.Warn("only in the file")
		l.Fatal("Failed to start gRPC listener", tag.Address("127.0.0.1:7233"))
		return // not reached: Fatal exits
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFatalNamesItsCause$")
	cmd.Env = append(os.Environ(), "DEVSERVER_FATAL_CHILD="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("child: %v, want exit status 1; stderr:\n%s", err, stderr.String())
	}
	if got := stderr.String(); !strings.Contains(got, "Failed to start gRPC listener") || !strings.Contains(got, "127.0.0.1:7233") {
		t.Errorf("stderr does not name the cause:\n%s", got)
	}
	if strings.Contains(stderr.String(), "only in the file") {
		t.Errorf("a warning reached stderr:\n%s", stderr.String())
	}
	file, err := os.ReadFile(filepath.Join(dir, LogFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"only in the file", "Failed to start gRPC listener"} {
		if !bytes.Contains(file, []byte(want)) {
			t.Errorf("%s lacks %q:\n%s", LogFile, want, file)
		}
	}
}
