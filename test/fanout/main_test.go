package fanout

import (
	"os"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// TestMain shares one embedded Temporal server among the package's
// stacks, a namespace each (testenv.Main).
func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
