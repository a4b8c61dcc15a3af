package proctest

import (
	"os"
	"testing"
)

// Missing skips the test for want of what why names (a program, a package
// make test-deps installs, a file of the system), and says how a laptop
// gets it; with CI set it fails the test instead, since CI installs
// everything the tests need and a test that skips there proves nothing.
func Missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(why + " and CI is set")
	}
	t.Skip(why + "; with CI set this fails instead")
}
