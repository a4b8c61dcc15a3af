//go:build unix

package proctest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// TestMain makes the test binary a stand-in for `longhaul api` when
// PROCTEST_API is set: it listens on LONGHAUL_HTTP_ADDR and answers
// /readyz, or exits as the API does when it cannot listen ("fail" makes
// it exit with another error).
func TestMain(m *testing.M) {
	switch os.Getenv("PROCTEST_API") {
	case "":
		os.Exit(m.Run())
	case "fail":
		fmt.Println("longhaul api: LONGHAUL_LLM_BASE_URL is not a URL")
		os.Exit(1)
	}
	l, err := net.Listen("tcp4", os.Getenv("LONGHAUL_HTTP_ADDR"))
	if err != nil {
		fmt.Printf("longhaul api: API on %s: failed to listen: %v\n", os.Getenv("LONGHAUL_HTTP_ADDR"), err)
		os.Exit(1)
	}
	fmt.Println(http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
	os.Exit(1)
}

func fakeAPI(t *testing.T, mode string) (bin string, env []string) {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return bin, append(os.Environ(), "PROCTEST_API="+mode)
}

// hold binds a free loopback port and keeps it until the test ends,
// hanging up on whoever connects (a readiness check does not wait).
func hold(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().String()
}

func TestServeAPIMovesOffATakenAddress(t *testing.T) {
	bin, env := fakeAPI(t, "serve")
	taken := hold(t)
	logPath := filepath.Join(t.TempDir(), "api.log")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var picked []string
	p, addr, err := ServeAPI(ctx, t, "api-1", bin, logPath, env, taken, func() string {
		a := testenv.FreeAddr(t)
		picked = append(picked, a)
		return a
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, Tail(logPath, 20))
	}
	defer p.Kill()
	if len(picked) != 1 || addr != picked[0] {
		t.Fatalf("served on %s after picking %v; want the one address picked after %s", addr, picked, taken)
	}
	if !Ready("http://" + addr + "/readyz") {
		t.Fatalf("nothing answers on %s", addr)
	}
	if log := Tail(logPath, 20); strings.Count(log, "===== api-1: start api") != 2 || !strings.Contains(log, "address already in use") {
		t.Fatalf("want two starts, the first refused its address; the log:\n%s", log)
	}
}

func TestServeAPIGivesUpOnOtherErrors(t *testing.T) {
	bin, env := fakeAPI(t, "fail")
	logPath := filepath.Join(t.TempDir(), "api.log")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, addr, err := ServeAPI(ctx, t, "api-1", bin, logPath, env, testenv.FreeAddr(t), func() string {
		t.Error("picked another address for an error that is not about the address")
		return testenv.FreeAddr(t)
	})
	if err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("err = %v, want the API's exit", err)
	}
	if log := Tail(logPath, 20); strings.Count(log, "===== api-1: start api") != 1 {
		t.Fatalf("want one start at %s; the log:\n%s", addr, log)
	}
}

func TestServeAPIStopsAfterThreeTakenAddresses(t *testing.T) {
	bin, env := fakeAPI(t, "serve")
	logPath := filepath.Join(t.TempDir(), "api.log")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// No address given: ServeAPI picks the first one too.
	picks := 0
	_, _, err := ServeAPI(ctx, t, "api-1", bin, logPath, env, "", func() string { picks++; return hold(t) })
	if err == nil {
		t.Fatal("served on an address held by the test")
	}
	if picks != 3 {
		t.Fatalf("picked %d addresses for three starts", picks)
	}
	if log := Tail(logPath, 40); strings.Count(log, "===== api-1: start api") != 3 {
		t.Fatalf("want three starts; the log:\n%s", log)
	}
}
