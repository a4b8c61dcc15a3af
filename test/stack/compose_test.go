//go:build unix

package stack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/longhaul-dev/longhaul/internal/devserver"
)

// userEnv is what a user following the README puts in .env: .env.example
// copied, with every placeholder secret (change-me…) replaced by a random
// one (hex, so that it is also URL-safe, as NATS_TOKEN must be).
func userEnv(t *testing.T, root string) map[string]string {
	t.Helper()
	env, err := dotenv.Read(filepath.Join(root, ".env.example"))
	if err != nil {
		t.Fatalf("read .env.example: %v", err)
	}
	for k, v := range env {
		if strings.HasPrefix(v, "change-me") {
			env[k] = randomHex(32)
		}
	}
	return env
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// loadCompose loads docker-compose.yml with the Compose v2 loader (the
// library `docker compose` itself uses), with env as the only environment
// (as .env would be: nothing of the test's own environment leaks in).
func loadCompose(t *testing.T, root string, env map[string]string) *types.Project {
	t.Helper()
	var list []string
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root, "docker-compose.yml")},
		cli.WithWorkingDirectory(root), cli.WithName("longhaul"), cli.WithEnv(list))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker-compose.yml does not load with .env.example's settings: %v", err)
	}
	return p
}

// service returns a service of the project, or fails the test.
func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, ok := p.Services[name]
	if !ok {
		t.Fatalf("docker-compose.yml has no service %q (has %v)", name, slices.Sorted(maps.Keys(p.Services)))
	}
	return s
}

// environment is a service's environment, resolved.
func environment(s types.ServiceConfig) map[string]string {
	env := map[string]string{}
	for k, v := range s.Environment {
		if v != nil {
			env[k] = *v
		}
	}
	return env
}

// container stands for one container of a service on the test's host: its
// files (bind mounts map onto the host; what the image itself holds onto
// the directories images lists; anything else onto an empty root, as the
// image has nothing there) and its ports (each container has all of its
// own; here each listening address is given a free loopback port).
type container struct {
	svc types.ServiceConfig
	// image maps paths the image holds to where they are on the host.
	image map[string]string
	// root is the empty root of everything else.
	root string
	// volumes maps named volumes to host directories, shared between the
	// containers of one test like Docker's volumes.
	volumes map[string]string
}

// path returns the host path of p inside the container.
func (c container) path(p string) string {
	best, host := "", ""
	consider := func(target, source string) {
		if within(target, p) && len(target) > len(best) {
			best, host = target, source
		}
	}
	for _, v := range c.svc.Volumes {
		switch v.Type {
		case types.VolumeTypeBind:
			consider(v.Target, v.Source)
		case types.VolumeTypeVolume:
			consider(v.Target, c.volumes[v.Source])
		}
	}
	for target, source := range c.image {
		consider(target, source)
	}
	if best == "" {
		return filepath.Join(c.root, p)
	}
	return filepath.Join(host, strings.TrimPrefix(p, best))
}

// within reports whether p is dir or under it.
func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// ports hands out free loopback ports, each once.
type ports struct {
	t    *testing.T
	used map[int]bool
}

func (ps *ports) next() int {
	ps.t.Helper()
	for range 100 {
		p, err := devserver.FreePort("127.0.0.1")
		if err != nil {
			ps.t.Fatal(err)
		}
		if !ps.used[p] {
			ps.used[p] = true
			return p
		}
	}
	ps.t.Fatal("no free port")
	return 0
}

func (ps *ports) addr() string { return "127.0.0.1:" + strconv.Itoa(ps.next()) }

// network is how the test reaches the stack's services: each service:port
// of the compose network, as a loopback address.
type network map[string]string

// rewrite replaces every service:port of the compose network in v with
// its loopback address, and every 0.0.0.0:port (a container listening on
// all its interfaces) with a free loopback address of its own. It fails
// the test when v still names a service the test does not run: a change
// of docker-compose.yml the test must learn.
func (n network) rewrite(t *testing.T, p *types.Project, ps *ports, key, v string) string {
	t.Helper()
	keys := slices.Collect(maps.Keys(n))
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		v = strings.ReplaceAll(v, k, n[k])
	}
	v = anyAddr.ReplaceAllStringFunc(v, func(string) string { return ps.addr() })
	for name := range p.Services {
		if regexp.MustCompile(`(^|[/@])` + regexp.QuoteMeta(name) + `(:\d+|$|/)`).MatchString(v) {
			t.Fatalf("%s=%s names the service %s, which the test does not know how to reach", key, v, name)
		}
	}
	return v
}

var anyAddr = regexp.MustCompile(`\b0\.0\.0\.0:\d+\b`)

// envList turns an environment into the list exec wants, sorted, with a
// PATH and a HOME as an image has.
func envList(env map[string]string, path, home string) []string {
	list := []string{"PATH=" + path, "HOME=" + home}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		list = append(list, fmt.Sprintf("%s=%s", k, env[k]))
	}
	return list
}
