package deploy_test

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/identity"
)

// TestComposeStack reads docker-compose.yml with .env.example as
// docker-compose resolves it and checks the whole stack a team deploys:
// every service there, images pinned, start-up ordered by healthchecks and
// finished one-shots, only Open WebUI and the API published and on the
// host's loopback, and the wiring — Longhaul's API and workers on the
// Temporal server, NATS and PostgreSQL of the stack, Open WebUI on the API
// with the proxy key and the signing secret Longhaul checks.
func TestComposeStack(t *testing.T) {
	// With .env.example's secrets chosen, as an operator must: Longhaul
	// refuses its change-me placeholders at start (internal/config,
	// TestPlaceholderSecrets).
	services := composeConfig(t, chosenSecrets(exampleEnv(t)))
	want := []string{"longhaul-api", "longhaul-dev", "longhaul-setup", "longhaul-worker", "nats", "ollama", "ollama-pull",
		"open-webui", "postgresql", "temporal", "temporal-namespace", "temporal-schema", "temporal-ui"}
	if got := slices.Sorted(maps.Keys(services)); !slices.Equal(got, want) {
		t.Fatalf("services %v, want %v", got, want)
	}
	oneShot := map[string]bool{"temporal-schema": true, "temporal-namespace": true, "longhaul-setup": true, "ollama-pull": true}
	for name, svc := range services {
		if svc.Build == nil {
			if _, tag, ok := strings.Cut(svc.Image, ":"); !ok || tag == "" || tag == "latest" {
				t.Errorf("%s: image %q is not pinned to a version", name, svc.Image)
			}
		}
		if svc.ContainerName != "" {
			t.Errorf("%s: a container_name keeps it from scaling", name)
		}
		if svc.Restart == "" {
			t.Errorf("%s: no restart policy", name)
		}
		for dep, d := range svc.DependsOn {
			other, ok := services[dep]
			switch {
			case !ok:
				t.Errorf("%s depends on %s, which is not a service", name, dep)
			case oneShot[dep] && d.Condition != "service_completed_successfully":
				t.Errorf("%s: depends on the one-shot %s with %q, want service_completed_successfully", name, dep, d.Condition)
			case !oneShot[dep] && (d.Condition != "service_healthy" || other.Healthcheck == nil):
				t.Errorf("%s: depends on %s with %q (healthcheck %v), want service_healthy on a healthcheck", name, dep, d.Condition, other.Healthcheck)
			}
		}
	}
	// Published ports, by the file's own defaults and by .env.example's.
	for _, services := range []map[string]service{services, composeConfig(t, secretsOf(t))} {
		for name, svc := range services {
			if len(svc.Profiles) > 0 {
				continue
			}
			for _, p := range publishedPorts(t, svc) {
				if name != "open-webui" && name != "longhaul-api" {
					t.Errorf("%s publishes %s:%s; only Open WebUI and the API may", name, p.published, p.target)
				}
				if p.hostIP != "127.0.0.1" {
					t.Errorf("%s publishes port %s on %q by default, want the host's loopback", name, p.target, p.hostIP)
				}
			}
		}
	}
	if p := services["longhaul-dev"].Profiles; !slices.Equal(p, []string{"dev"}) {
		t.Errorf("longhaul-dev has profiles %v, want [dev]: it must not start with the stack", p)
	}
	for _, name := range []string{"postgresql", "temporal", "nats", "ollama", "longhaul-api"} {
		if services[name].Healthcheck == nil {
			t.Errorf("%s has no healthcheck", name)
		}
	}
	if hc := services["longhaul-api"].Healthcheck; hc != nil && !slices.Contains(hc.Test, "health") {
		t.Errorf("the API's healthcheck %v does not run `longhaul health`", hc.Test)
	}
	if c := strings.Join(services["nats"].Command, " "); !strings.Contains(c, "--jetstream") {
		t.Errorf("NATS runs %q, without JetStream", c)
	}

	// Longhaul's processes, read with Longhaul's own settings loader.
	api := loadWith(t, services["longhaul-api"].Environment)
	for _, name := range []string{"longhaul-api", "longhaul-worker", "longhaul-setup"} {
		svc := services[name]
		cfg := loadWith(t, svc.Environment)
		if cfg.TemporalAddress != "temporal:7233" || cfg.NATSURL != "nats://nats:4222" {
			t.Errorf("%s: Temporal %q, NATS %q; want the stack's", name, cfg.TemporalAddress, cfg.NATSURL)
		}
		if db := cfg.DatabaseURL; !strings.HasPrefix(db, "postgres://") || !strings.Contains(db, "@postgresql:5432/longhaul") {
			t.Errorf("%s: database %q, want the stack's PostgreSQL", name, db)
		}
		if cfg.LLMBaseURL != "http://ollama:11434/v1" {
			t.Errorf("%s: model endpoint %q, want the stack's Ollama", name, cfg.LLMBaseURL)
		}
		if svc.Build == nil {
			t.Errorf("%s does not run the image of deploy/Dockerfile", name)
		}
		if cfg.WorkerBuildID == "" || cfg.WorkerBuildID != svc.Image[strings.LastIndex(svc.Image, ":")+1:] {
			t.Errorf("%s: worker build id %q, want the image's tag (%s)", name, cfg.WorkerBuildID, svc.Image)
		}
		if name != "longhaul-setup" && hostOf(t, cfg.MetricsAddr) != "0.0.0.0" {
			t.Errorf("%s serves its metrics on %s, out of Prometheus's reach on the stack's network", name, cfg.MetricsAddr)
		}
	}
	if cmd := services["longhaul-setup"].Command; !slices.Equal(cmd, []string{"setup"}) {
		t.Errorf("longhaul-setup runs %v", cmd)
	}
	if host := hostOf(t, api.HTTPAddr); host != "0.0.0.0" {
		t.Errorf("the API listens on %s, want every interface of its container", api.HTTPAddr)
	}
	if len(services["longhaul-worker"].Ports) != 0 {
		t.Error("the worker publishes a port")
	}

	// Open WebUI speaks to the API as the proxy key and signs its users
	// with the secret the API checks.
	ow := services["open-webui"].Environment
	if ow["OPENAI_API_BASE_URL"] != "http://longhaul-api:8080/v1" {
		t.Errorf("Open WebUI's OpenAI connection is %q", ow["OPENAI_API_BASE_URL"])
	}
	keys, err := api.Keys()
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(keys, func(k identity.Key) bool { return k.Secret == ow["OPENAI_API_KEY"] }); i < 0 || !keys[i].Proxy || ow["OPENAI_API_KEY"] == "" {
		t.Error("Open WebUI's key is not one of the API's proxy keys")
	}
	if ow["ENABLE_FORWARD_USER_INFO_HEADERS"] != "true" || ow["FORWARD_USER_INFO_HEADER_JWT_SECRET"] == "" || ow["FORWARD_USER_INFO_HEADER_JWT_SECRET"] != api.OpenWebUIJWTSecret {
		t.Error("Open WebUI does not sign its users with the secret the API checks")
	}

	// The Temporal server on the stack's PostgreSQL.
	tenv := services["temporal"].Environment
	if tenv["DB"] != "postgres12" || tenv["POSTGRES_SEEDS"] != "postgresql" {
		t.Errorf("the Temporal server's persistence: %v", tenv)
	}
	if u := services["temporal-ui"].Environment["TEMPORAL_ADDRESS"]; u != "temporal:7233" {
		t.Errorf("the Temporal UI reads %q", u)
	}
}

// secretsOf is the settings of .env.example that the compose file cannot
// do without, and nothing else.
func secretsOf(t *testing.T) []string {
	var env []string
	for _, kv := range exampleEnv(t) {
		for _, name := range requiredSecrets {
			if strings.HasPrefix(kv, name+"=") {
				env = append(env, kv)
			}
		}
	}
	return env
}

// chosenSecrets is env with every change-me placeholder replaced by a
// secret of 64 hex digits, one per variable, as `openssl rand -hex 32`
// makes.
func chosenSecrets(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(strings.ToLower(v), "change-me") {
			sum := sha256.Sum256([]byte(k))
			kv = k + "=" + hex.EncodeToString(sum[:])
		}
		out = append(out, kv)
	}
	return out
}

var requiredSecrets = []string{"POSTGRES_PASSWORD", "LONGHAUL_PROXY_KEY", "OPENWEBUI_JWT_SECRET", "WEBUI_SECRET_KEY"}

// TestComposeNeedsSecrets: without the secrets set, docker-compose refuses
// the file and names what is missing, rather than starting a stack with
// empty passwords and keys.
func TestComposeNeedsSecrets(t *testing.T) {
	for _, name := range requiredSecrets {
		var env []string
		for _, kv := range secretsOf(t) {
			if !strings.HasPrefix(kv, name+"=") {
				env = append(env, kv)
			}
		}
		if out := composeFails(t, env); !strings.Contains(out, "set "+name+" in .env") {
			t.Errorf("without %s: %s", name, out)
		}
	}
}
