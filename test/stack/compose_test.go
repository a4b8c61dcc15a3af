//go:build unix

package stack

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/longhaul-dev/longhaul/internal/devserver"
	"github.com/longhaul-dev/longhaul/internal/testing/composetest"
)

// service returns a service of the compose file (composetest.Service).
var service = composetest.Service

// environment is a service's environment, resolved (composetest.Env).
var environment = composetest.Env

// container stands for one container of a service on the test's host: its
// files (bind mounts map onto the host, composetest.HostPath; named volumes
// onto the test's directories; what the image itself holds onto the
// directories image lists; anything else onto an empty root, as the image
// has nothing there) and its ports (each container has all of its
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
		if v.Type == types.VolumeTypeVolume {
			consider(v.Target, c.volumes[v.Source])
		}
	}
	for target, source := range c.image {
		consider(target, source)
	}
	if h, ok := composetest.HostPath(c.svc, p); ok {
		return h
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
