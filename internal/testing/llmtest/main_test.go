package llmtest_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestMain fails the run if any server handler goroutine outlives the tests.
// Every server is closed by then, and Close waits for its handlers, so a
// surviving llmtest frame is a leak rather than a goroutine still winding
// down.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := leakedHandlers(); leaked != "" {
			fmt.Fprintf(os.Stderr, "llmtest handler goroutines leaked:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

func leakedHandlers() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var leaked []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "internal/llmtest.(*Server)") {
			leaked = append(leaked, g)
		}
	}
	return strings.Join(leaked, "\n\n")
}
