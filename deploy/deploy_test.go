// Package deploy_test checks the container image and the compose file: the
// image keeps every listener on the container's loopback and serves
// nothing by default; the compose file, read with the Compose v2 loader
// (internal/testing/composetest, compose-go: no Docker daemon needed),
// starts the whole stack in order and wires it together.
package deploy_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/config"
	"github.com/longhaul-dev/longhaul/internal/testing/composetest"
)

// dockerfile is what the tests read of deploy/Dockerfile.
type dockerfile struct {
	env     map[string]string // ENV of the final stage
	exposed []string
	user    string
	cmd     string   // CMD as written
	runs    []string // RUN lines
	copies  []string // COPY lines of the final stage
}

// readDockerfile reads the Dockerfile in this directory.
func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	d := dockerfile{env: map[string]string{}}
	var line strings.Builder
	for _, text := range strings.Split(string(b), "\n") {
		text = strings.TrimSpace(text)
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(text, `\`); ok {
			line.WriteString(cont + " ")
			continue
		}
		line.WriteString(text)
		instr, args, _ := strings.Cut(line.String(), " ")
		line.Reset()
		switch strings.ToUpper(instr) {
		case "FROM": // a new stage: only the last one's settings count
			d.env, d.exposed, d.user, d.cmd, d.copies = map[string]string{}, nil, "", "", nil
		case "ENV":
			for _, kv := range strings.Fields(args) {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					t.Fatalf("ENV %q: only the key=value form is read here", args)
				}
				d.env[k] = strings.Trim(v, `"`)
			}
		case "EXPOSE":
			for _, p := range strings.Fields(args) {
				d.exposed = append(d.exposed, strings.TrimSuffix(p, "/tcp"))
			}
		case "USER":
			d.user = args
		case "CMD":
			d.cmd = args
		case "RUN":
			d.runs = append(d.runs, args)
		case "COPY":
			d.copies = append(d.copies, args)
		}
	}
	return d
}

// TestImage loads the settings the image's own environment gives any
// command: the API, the embedded Temporal frontend and the UI only on the
// container's loopback, the UI read-only; its default command serves
// nothing; the binary is stripped and versioned by the build; /data
// belongs to the non-root user; the build context leaves out what is not
// source.
func TestImage(t *testing.T) {
	d := readDockerfile(t)
	cfg := loadWith(t, d.env)
	if !loopback(t, cfg.HTTPAddr) {
		t.Errorf("the API listens on %s in the image, want the container's loopback unless the operator says otherwise", cfg.HTTPAddr)
	}
	if !loopback(t, cfg.EmbeddedTemporalAddr) {
		t.Errorf("the Temporal frontend listens on %s in the image, want the loopback", cfg.EmbeddedTemporalAddr)
	}
	if !cfg.UIDisabled() && !loopback(t, cfg.EmbeddedUIAddr) {
		t.Errorf("the Temporal UI listens on %s in the image, want the loopback", cfg.EmbeddedUIAddr)
	}
	if cfg.EmbeddedUIWrite {
		t.Error("the image lets the Temporal UI change runs")
	}
	if !slices.Equal(d.exposed, []string{"8080"}) {
		t.Errorf("EXPOSE %v, want only the API's 8080 (docker run -P publishes what is exposed on every interface)", d.exposed)
	}
	if d.cmd != `["help"]` {
		t.Errorf("CMD %s, want [\"help\"]: the image's default must not serve", d.cmd)
	}
	if d.user != "nonroot" {
		t.Errorf("USER %q, want nonroot", d.user)
	}
	if cfg.DataDir != "/data" {
		t.Errorf("the data directory is %q, want /data", cfg.DataDir)
	}
	if !slices.ContainsFunc(d.copies, func(c string) bool {
		return strings.Contains(c, "--chown=65532:65532") && strings.HasSuffix(c, " /data")
	}) {
		t.Errorf("/data is not created owned by distroless's nonroot (65532): COPY %v", d.copies)
	}
	i := slices.IndexFunc(d.runs, func(r string) bool { return strings.Contains(r, "go build") })
	if i < 0 {
		t.Fatal("no go build in the Dockerfile")
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-s -w", "-X main.Version=${VERSION}", "./cmd/longhaul"} {
		if !strings.Contains(d.runs[i], want) {
			t.Errorf("the build %q lacks %s", d.runs[i], want)
		}
	}

	ignored := map[string]bool{}
	for _, l := range strings.Split(readFile(t, "../.dockerignore"), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			ignored[l] = true
		}
	}
	for _, want := range []string{".git", "bin", ".longhaul", ".env", "**/node_modules", "**/*.test"} {
		if !ignored[want] {
			t.Errorf(".dockerignore does not leave out %s", want)
		}
	}
	for p := range ignored { // the embedded skills are part of the build
		if strings.HasPrefix("skills/builtin", strings.TrimSuffix(p, "/")) {
			t.Errorf(".dockerignore leaves out %s, which the binary embeds", p)
		}
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// loadWith loads Longhaul's settings with exactly env set among the
// LONGHAUL_ variables.
func loadWith(t *testing.T, env map[string]string) config.Config {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, config.Prefix+"_") {
			t.Setenv(k, "") // restored when the test ends
			os.Unsetenv(k)
		}
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	cfg, err := config.Load()
	if err != nil {
		t.Fatalf("settings %v: %v", env, err)
	}
	return cfg
}

// secretEnv is .env.example with every change-me… placeholder replaced by
// a real-looking secret (64 hex digits), as an operator following
// docs/deploy.md does: Longhaul refuses the placeholders themselves at start.
func secretEnv(t *testing.T) map[string]string {
	t.Helper()
	env := composetest.ExampleEnv(t)
	for k, v := range env {
		if strings.HasPrefix(v, "change-me") {
			sum := sha256.Sum256([]byte(k))
			env[k] = hex.EncodeToString(sum[:])
		}
	}
	return env
}

func hostOf(t *testing.T, addr string) string {
	t.Helper()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("%q: %v", addr, err)
	}
	return host
}

func loopback(t *testing.T, addr string) bool {
	host := hostOf(t, addr)
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
