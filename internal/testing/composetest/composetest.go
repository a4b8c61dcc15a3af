// Package composetest reads the repository's docker-compose.yml the way
// `docker compose` itself does, with github.com/compose-spec/compose-go/v2
// (the loader the Compose v2 CLI is built on): the file is interpolated
// with exactly the environment a test gives, validated against the Compose
// specification and normalised, so a test reads each service's image,
// command, environment, volumes and start order as Docker would run them,
// with no Docker daemon.
//
// Tests outside deploy/ use it too: test/stack reads the environments of
// the temporal, temporal-schema and longhaul-* services from it, so a
// change of the compose file is a change of what that test runs.
package composetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/template"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
)

// File is the compose file of the repository, relative to its root.
const File = "docker-compose.yml"

// ProjectName is the project name tests load the file under (the
// directory's name would depend on the checkout's).
const ProjectName = "longhaul"

// ExampleEnv returns the settings of the repository's .env.example, read
// with Compose's own .env parser: what `cp .env.example .env` gives
// `docker compose`.
func ExampleEnv(t testing.TB) map[string]string {
	t.Helper()
	env, err := dotenv.GetEnvFromFile(map[string]string{}, []string{filepath.Join(proctest.RepoRoot(t), ".env.example")})
	if err != nil {
		t.Fatalf("composetest: .env.example: %v", err)
	}
	return env
}

// UserEnv is what a user following docs/deploy.md puts in .env: .env.example
// copied, with every placeholder secret (change-me…, which Longhaul refuses)
// replaced by a random one (hex, so that it is also URL-safe, as NATS_TOKEN
// must be).
func UserEnv(t testing.TB) map[string]string {
	t.Helper()
	env := ExampleEnv(t)
	for k, v := range env {
		if strings.HasPrefix(v, "change-me") {
			b := make([]byte, 32)
			rand.Read(b)
			env[k] = hex.EncodeToString(b)
		}
	}
	return env
}

// Without returns a copy of env without the named settings.
func Without(env map[string]string, names ...string) map[string]string {
	out := make(map[string]string, len(env))
	for k, v := range env {
		out[k] = v
	}
	for _, n := range names {
		delete(out, n)
	}
	return out
}

// With returns a copy of env with kv ("NAME=value" each) set in it.
func With(env map[string]string, kv ...string) map[string]string {
	out := Without(env)
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		out[k] = v
	}
	return out
}

// Load loads the compose files (relative to the repository's root; none
// means docker-compose.yml) as `docker compose --env-file /dev/null` would
// with env as its whole environment, every profile enabled, and fails the
// test on any error — a variable used without a default and not in env
// included, where Compose itself would only warn and put in an empty
// string.
func Load(t testing.TB, env map[string]string, files ...string) *types.Project {
	t.Helper()
	p, err := LoadErr(context.Background(), proctest.RepoRoot(t), env, files...)
	if err != nil {
		t.Fatalf("composetest: %v", err)
	}
	return p
}

// LoadErr is Load returning the error, for a test that expects one; root
// is the repository's root.
func LoadErr(ctx context.Context, root string, env map[string]string, files ...string) (*types.Project, error) {
	if len(files) == 0 {
		files = []string{File}
	}
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = filepath.Join(root, f)
	}
	kv := make([]string, 0, len(env))
	for k, v := range env {
		kv = append(kv, k+"="+v)
	}
	opts, err := cli.NewProjectOptions(paths,
		cli.WithName(ProjectName),
		cli.WithWorkingDirectory(root),
		cli.WithEnv(kv),
		cli.WithProfiles([]string{"*"}),
		cli.WithLoadOptions(strictInterpolation),
	)
	if err != nil {
		return nil, err
	}
	return opts.LoadProject(ctx)
}

// strictInterpolation makes a ${VAR} (or $VAR) with neither a value in the
// environment nor a default an error. Compose's own substitution
// (template.DefaultReplacementAppliedFunc) reports whether it found a value
// or applied a default or an error (${VAR:?msg}); only a plain miss is
// turned into an error here.
func strictInterpolation(o *loader.Options) {
	if o.Interpolate == nil { // reading the files, before interpolation
		return
	}
	o.Interpolate.Substitute = func(s string, m template.Mapping) (string, error) {
		return template.SubstituteWithOptions(s, m, template.WithoutLogging,
			template.WithReplacementFunction(func(sub string, m template.Mapping, c *template.Config) (string, error) {
				v, ok, err := template.DefaultReplacementAppliedFunc(sub, m, c)
				if err == nil && !ok {
					return "", fmt.Errorf("%s is not set and has no default", sub)
				}
				return v, err
			}))
	}
}

// Env returns the environment a service's container is given, each
// variable with its value (a variable listed without one, taken from the
// environment of `docker compose`, is empty).
func Env(svc types.ServiceConfig) map[string]string {
	out := make(map[string]string, len(svc.Environment))
	for k, v := range svc.Environment {
		if v != nil {
			out[k] = *v
		} else {
			out[k] = ""
		}
	}
	return out
}

// Service returns the named service of p, failing the test when there is
// none.
func Service(t testing.TB, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	svc, ok := p.Services[name]
	if !ok {
		t.Fatalf("composetest: no service %q in %v", name, p.ServiceNames())
	}
	return svc
}

// HostPath returns the file on this machine that the container of svc sees
// at containerPath through a bind mount (the longest mount target that
// holds it), and false when no bind mount covers it.
func HostPath(svc types.ServiceConfig, containerPath string) (string, bool) {
	best, host := -1, ""
	for _, v := range svc.Volumes {
		if v.Type != types.VolumeTypeBind {
			continue
		}
		target := filepath.Clean(v.Target)
		rel, err := filepath.Rel(target, filepath.Clean(containerPath))
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		if len(target) > best {
			best, host = len(target), filepath.Join(v.Source, rel)
		}
	}
	return host, best >= 0
}
