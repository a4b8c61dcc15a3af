// Package deploy_test checks the container image and the compose file keep
// the embedded Temporal frontend and Web UI off the network unless the
// operator says otherwise. The compose file is read by Debian's
// docker-compose (`docker-compose config` needs no Docker daemon), which
// make test-deps installs.
package deploy_test

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/longhaul-dev/longhaul/internal/config"
)

// TestImageKeepsTemporalOnLoopback loads the settings the image's
// environment gives `longhaul dev`: the API listens on the container's
// interfaces, the Temporal frontend and the UI only on its loopback, the UI
// read-only, and only the API's port is exposed.
func TestImageKeepsTemporalOnLoopback(t *testing.T) {
	env, exposed := readDockerfile(t, "Dockerfile")
	cfg := loadWith(t, env)
	if host := hostOf(t, cfg.HTTPAddr); host != "0.0.0.0" {
		t.Errorf("the API listens on %s in the image, want every interface of the container", cfg.HTTPAddr)
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
	if !slices.Equal(exposed, []string{"8080"}) {
		t.Errorf("EXPOSE %v, want only the API's 8080 (docker run -P publishes what is exposed on every interface)", exposed)
	}
}

// TestComposeDevPublishesOnLoopback reads the single-container `dev`
// profile of docker-compose.yml as docker-compose resolves it: by default
// every published port is bound to the host's loopback, the Temporal
// frontend is not published and the UI is read-only; an operator's
// LONGHAUL_UI_PUBLISH publishes the UI elsewhere.
func TestComposeDevPublishesOnLoopback(t *testing.T) {
	imageEnv, _ := readDockerfile(t, "Dockerfile")

	svc := composeConfig(t, exampleEnv(t))["longhaul-dev"]
	ports := publishedPorts(t, svc)
	if len(ports) == 0 {
		t.Fatal("the compose file publishes no port; want the API's at least")
	}
	for _, p := range ports {
		if p.hostIP != "127.0.0.1" {
			t.Errorf("port %s is published on %q, want 127.0.0.1", p.target, p.hostIP)
		}
	}
	env := map[string]string{}
	for k, v := range imageEnv {
		env[k] = v
	}
	for k, v := range svc.Environment {
		env[k] = v
	}
	cfg := loadWith(t, env)
	_, frontendPort, _ := net.SplitHostPort(cfg.EmbeddedTemporalAddr)
	for _, p := range ports {
		if p.target == frontendPort {
			t.Errorf("the Temporal frontend's port %s is published", p.target)
		}
	}
	if !loopback(t, cfg.EmbeddedTemporalAddr) {
		t.Errorf("the Temporal frontend listens on %s in the container, want its loopback", cfg.EmbeddedTemporalAddr)
	}
	if cfg.EmbeddedUIWrite {
		t.Error("the compose file lets the Temporal UI change runs by default")
	}

	// The operator says otherwise.
	svc = composeConfig(t, append(exampleEnv(t), "LONGHAUL_UI_PUBLISH=0.0.0.0:8233", "LONGHAUL_EMBEDDED_UI_WRITE=true"))["longhaul-dev"]
	var ui *port
	for _, p := range publishedPorts(t, svc) {
		if p.target == "8233" {
			ui = &p
		}
	}
	if ui == nil || ui.hostIP != "0.0.0.0" {
		t.Errorf("with LONGHAUL_UI_PUBLISH=0.0.0.0:8233 the UI is published as %+v, want on 0.0.0.0", ui)
	}
	if svc.Environment["LONGHAUL_EMBEDDED_UI_WRITE"] != "true" {
		t.Errorf("LONGHAUL_EMBEDDED_UI_WRITE did not reach the container: %v", svc.Environment)
	}
}

// readDockerfile returns the ENV settings and the EXPOSEd ports of the
// Dockerfile in this directory.
func readDockerfile(t *testing.T, name string) (map[string]string, []string) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	var exposed []string
	var line strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(text, "#") {
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
		case "ENV":
			for _, kv := range strings.Fields(args) {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					t.Fatalf("%s: ENV %q: only the key=value form is read here", name, args)
				}
				env[k] = strings.Trim(v, `"`)
			}
		case "EXPOSE":
			for _, p := range strings.Fields(args) {
				exposed = append(exposed, strings.TrimSuffix(p, "/tcp"))
			}
		}
	}
	return env, exposed
}

// loadWith loads the settings with exactly env set among the LONGHAUL_
// variables.
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
		t.Fatalf("settings of the image: %v", err)
	}
	return cfg
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

// service is the part of a resolved compose service the tests read.
type service struct {
	Image         string                                `yaml:"image"`
	Build         *yaml.Node                            `yaml:"build"`
	Command       []string                              `yaml:"command"`
	Entrypoint    []string                              `yaml:"entrypoint"`
	Environment   map[string]string                     `yaml:"environment"`
	Ports         []yaml.Node                           `yaml:"ports"`
	DependsOn     map[string]struct{ Condition string } `yaml:"depends_on"`
	Healthcheck   *struct{ Test []string }              `yaml:"healthcheck"`
	Profiles      []string                              `yaml:"profiles"`
	ContainerName string                                `yaml:"container_name"`
	Restart       string                                `yaml:"restart"`
}

// composeConfig runs `docker-compose config` on the repository's compose
// file with only env (and PATH and HOME) in its environment, and returns
// its services.
func composeConfig(t *testing.T, env []string) map[string]service {
	t.Helper()
	cmd := composeCommand(t, env)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, stderr.String())
	}
	return parseCompose(t, out)
}

// composeCommand is `docker-compose config` on the repository's compose
// file with only env (and PATH and HOME) in its environment: an .env file
// in the checkout is not read.
func composeCommand(t *testing.T, env []string) *exec.Cmd {
	t.Helper()
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("docker-compose is not installed and CI is set (make test-deps installs Debian's)")
		}
		t.Skip("docker-compose is not installed (make test-deps installs Debian's); set CI to fail instead")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	empty := filepath.Join(home, "empty.env")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--project-directory", root, "--env-file", empty, "-f", filepath.Join(root, "docker-compose.yml"), "config")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, env...)
	return cmd
}

// exampleEnv is .env.example as KEY=VALUE settings.
func exampleEnv(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../.env.example")
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			env = append(env, line)
		}
	}
	return env
}

// composeFails runs `docker-compose config` like composeConfig and returns
// its error output, failing the test when it succeeds.
func composeFails(t *testing.T, env []string) string {
	t.Helper()
	cmd := composeCommand(t, env)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("docker-compose config succeeded with %v", env)
	}
	return string(out)
}

func parseCompose(t *testing.T, out []byte) map[string]service {
	t.Helper()
	var doc struct {
		Services map[string]service `yaml:"services"`
	}
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("docker-compose config output: %v\n%s", err, out)
	}
	if len(doc.Services) == 0 {
		t.Fatalf("no services in\n%s", out)
	}
	return doc.Services
}

// port is one published port of a service.
type port struct {
	hostIP, published, target string
}

// publishedPorts reads the ports of svc in either form docker-compose
// writes: "[ip:]published:target[/proto]" or a mapping.
func publishedPorts(t *testing.T, svc service) []port {
	t.Helper()
	var out []port
	for _, n := range svc.Ports {
		var p port
		switch n.Kind {
		case yaml.ScalarNode:
			parts := strings.Split(strings.TrimSuffix(strings.TrimSuffix(n.Value, "/tcp"), "/udp"), ":")
			switch len(parts) {
			case 3:
				p = port{parts[0], parts[1], parts[2]}
			case 2:
				p = port{"", parts[0], parts[1]}
			case 1: // a random port of the host, on every interface
				p = port{"", "", parts[0]}
			default:
				t.Fatalf("port %q: want [ip:]published:target", n.Value)
			}
		case yaml.MappingNode:
			var m struct {
				HostIP    string `yaml:"host_ip"`
				Published int    `yaml:"published"`
				Target    int    `yaml:"target"`
			}
			if err := n.Decode(&m); err != nil {
				t.Fatal(err)
			}
			p = port{m.HostIP, strconv.Itoa(m.Published), strconv.Itoa(m.Target)}
		default:
			t.Fatalf("port entry of kind %v", n.Kind)
		}
		out = append(out, p)
	}
	return out
}
