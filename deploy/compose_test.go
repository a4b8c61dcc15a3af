package deploy_test

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
	temporalconfig "go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"

	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/testing/composetest"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
)

// requiredSecrets are the settings of .env.example the compose file cannot
// do without.
var requiredSecrets = []string{"POSTGRES_PASSWORD", "LONGHAUL_PROXY_KEY", "OPENWEBUI_JWT_SECRET", "WEBUI_SECRET_KEY", "NATS_TOKEN"}

// oneShots are the services that run once and exit.
var oneShots = map[string]bool{"temporal-schema": true, "temporal-namespace": true, "longhaul-setup": true, "ollama-pull": true}

// TestComposeStack loads docker-compose.yml with .env.example (its secrets
// set) as `docker compose` does, and checks the whole stack a team
// deploys: every service there, images pinned, every start-up ordered by
// a healthcheck or a finished one-shot, every volume declared or in the
// repository, only Open WebUI and the API published and on the host's
// loopback, and the wiring — Longhaul's API and workers on the Temporal
// server, NATS (with its token) and PostgreSQL of the stack and after the
// model is pulled, Open WebUI on the API with the proxy key, the signing
// secret Longhaul checks and the message id.
func TestComposeStack(t *testing.T) {
	env := secretEnv(t)
	p := composetest.Load(t, env)
	want := []string{"longhaul-api", "longhaul-dev", "longhaul-setup", "longhaul-worker", "nats", "ollama", "ollama-pull",
		"open-webui", "postgresql", "temporal", "temporal-namespace", "temporal-schema", "temporal-ui"}
	if got := slices.Sorted(maps.Keys(p.Services)); !slices.Equal(got, want) {
		t.Fatalf("services %v, want %v", got, want)
	}
	root := proctest.RepoRoot(t)
	for name, svc := range p.Services {
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
			other, ok := p.Services[dep]
			switch {
			case !ok:
				t.Errorf("%s depends on %s, which is not a service", name, dep)
			case oneShots[dep] && d.Condition != types.ServiceConditionCompletedSuccessfully:
				t.Errorf("%s: depends on the one-shot %s with %q, want service_completed_successfully", name, dep, d.Condition)
			case !oneShots[dep] && (d.Condition != types.ServiceConditionHealthy || other.HealthCheck == nil || other.HealthCheck.Disable):
				t.Errorf("%s: depends on %s with %q (healthcheck %v), want service_healthy on a healthcheck", name, dep, d.Condition, other.HealthCheck)
			}
		}
		for _, v := range svc.Volumes {
			switch v.Type {
			case types.VolumeTypeVolume:
				if _, ok := p.Volumes[v.Source]; !ok {
					t.Errorf("%s mounts the volume %q, which is not declared", name, v.Source)
				}
			case types.VolumeTypeBind:
				if rel, err := filepath.Rel(root, v.Source); err != nil || strings.HasPrefix(rel, "..") {
					t.Errorf("%s bind-mounts %s, outside the repository", name, v.Source)
				} else if _, err := os.Stat(v.Source); err != nil {
					t.Errorf("%s bind-mounts %s: %v", name, rel, err)
				}
			default:
				t.Errorf("%s: a %s mount of %s", name, v.Type, v.Target)
			}
		}
		for k, v := range composetest.Env(svc) {
			if strings.Contains(v, "${") {
				t.Errorf("%s: %s=%q is not interpolated", name, k, v)
			}
		}
	}
	checkPublished(t, p)
	for _, name := range []string{"postgresql", "temporal", "nats", "ollama", "longhaul-api"} {
		if p.Services[name].HealthCheck == nil {
			t.Errorf("%s has no healthcheck", name)
		}
	}
	if hc := p.Services["longhaul-api"].HealthCheck; hc != nil && !slices.Contains(hc.Test, "health") {
		t.Errorf("the API's healthcheck %v does not run `longhaul health`", hc.Test)
	}

	// NATS: JetStream, and a token every client must present.
	natsCmd := p.Services["nats"].Command
	if !slices.Contains(natsCmd, "--jetstream") {
		t.Errorf("NATS runs %q, without JetStream", natsCmd)
	}
	if i := slices.Index(natsCmd, "--auth"); i < 0 || i+1 >= len(natsCmd) || natsCmd[i+1] != env["NATS_TOKEN"] {
		t.Errorf("NATS runs %q, not with --auth NATS_TOKEN", natsCmd)
	}

	// The media-agent's Seerr: on the workers (and dev), never on the API.
	for name, want := range map[string]bool{"longhaul-worker": true, "longhaul-dev": true, "longhaul-api": false, "longhaul-setup": false} {
		e := composetest.Env(p.Services[name])
		_, hasURL := e["SEERR_URL"]
		_, hasKey := e["SEERR_API_KEY"]
		if hasURL != want || hasKey != want {
			t.Errorf("%s: SEERR_URL set %v, SEERR_API_KEY set %v; want both %v", name, hasURL, hasKey, want)
		}
	}

	// Longhaul's processes, read with Longhaul's own settings loader.
	api := loadWith(t, composetest.Env(p.Services["longhaul-api"]))
	for _, name := range []string{"longhaul-api", "longhaul-worker", "longhaul-setup"} {
		svc := p.Services[name]
		cfg := loadWith(t, composetest.Env(svc))
		if cfg.TemporalAddress != "temporal:7233" {
			t.Errorf("%s: Temporal %q; want the stack's", name, cfg.TemporalAddress)
		}
		// nats.go reads a URL's user without a password as the token.
		if u, err := url.Parse(cfg.NATSURL); err != nil || u.Host != "nats:4222" || u.User.Username() != env["NATS_TOKEN"] {
			t.Errorf("%s: NATS %q; want the stack's, with NATS_TOKEN", name, cfg.NATSURL)
		} else if _, hasPassword := u.User.Password(); hasPassword {
			t.Errorf("%s: NATS %q has a password: nats.go would send a user, not the token", name, cfg.NATSURL)
		}
		if db := cfg.DatabaseURL; !strings.HasPrefix(db, "postgres://") || !strings.Contains(db, "@postgresql:5432/longhaul") {
			t.Errorf("%s: database %q, want the stack's PostgreSQL", name, db)
		}
		if cfg.LLMBaseURL != "http://ollama:11434/v1" {
			t.Errorf("%s: model endpoint %q, want the stack's Ollama", name, cfg.LLMBaseURL)
		}
		if svc.Build == nil {
			t.Fatalf("%s does not run the image of deploy/Dockerfile", name)
		}
		tag := svc.Image[strings.LastIndex(svc.Image, ":")+1:]
		if v := svc.Build.Args["VERSION"]; v == nil || *v != tag {
			t.Errorf("%s: built with VERSION %v, want the image's tag %q (the workers' build id)", name, v, tag)
		}
		if cfg.WorkerBuildID != "" {
			t.Errorf("%s: LONGHAUL_WORKER_BUILD_ID %q; leave it to the version the image was built with", name, cfg.WorkerBuildID)
		}
		if name != "longhaul-setup" {
			if hostOf(t, cfg.MetricsAddr) != "0.0.0.0" {
				t.Errorf("%s serves its metrics on %s, out of Prometheus's reach on the stack's network", name, cfg.MetricsAddr)
			}
			if d := svc.DependsOn["ollama-pull"]; d.Condition != types.ServiceConditionCompletedSuccessfully {
				t.Errorf("%s does not wait for the model pull (%q)", name, d.Condition)
			}
		}
	}
	if cmd := p.Services["longhaul-setup"].Command; !slices.Equal(cmd, types.ShellCommand{"setup"}) {
		t.Errorf("longhaul-setup runs %v", cmd)
	}
	if host := hostOf(t, api.HTTPAddr); host != "0.0.0.0" {
		t.Errorf("the API listens on %s, want every interface of its container", api.HTTPAddr)
	}
	if len(p.Services["longhaul-worker"].Ports) != 0 {
		t.Error("the worker publishes a port")
	}
	pull := p.Services["ollama-pull"].Entrypoint
	if !slices.Equal(pull, types.ShellCommand{"ollama", "pull", api.LLMModel}) {
		t.Errorf("ollama-pull runs %v, want it to pull %s", pull, api.LLMModel)
	}

	// Open WebUI speaks to the API as the proxy key, signs its users with
	// the secret the API checks and sends the assistant message's id.
	ow := composetest.Env(p.Services["open-webui"])
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
	// Open WebUI v0.11.0 sends an OpenAI connection the message id only as
	// a header of the connection's own config (routers/openai.py
	// get_headers_and_cookies; utils/headers.py get_custom_headers), the
	// connection's config keyed by its index (openai.py: api_configs.get(
	// str(idx), ...)).
	var configs map[string]struct {
		Enable  bool              `json:"enable"`
		Headers map[string]string `json:"headers"`
	}
	if err := json.Unmarshal([]byte(ow["OPENAI_API_CONFIGS"]), &configs); err != nil {
		t.Errorf("OPENAI_API_CONFIGS %q: %v", ow["OPENAI_API_CONFIGS"], err)
	}
	if c := configs["0"]; !c.Enable || c.Headers["X-OpenWebUI-Message-Id"] != "{{MESSAGE_ID}}" {
		t.Errorf("Open WebUI's connection 0 is %+v: it must be on and send X-OpenWebUI-Message-Id: {{MESSAGE_ID}}", c)
	}
	if u := composetest.Env(p.Services["temporal-ui"])["TEMPORAL_ADDRESS"]; u != "temporal:7233" {
		t.Errorf("the Temporal UI reads %q", u)
	}
}

// checkPublished: by the file's own defaults and by .env.example's, only
// Open WebUI and the API publish a port, and on the host's loopback.
func checkPublished(t *testing.T, p *types.Project) {
	t.Helper()
	secrets := map[string]string{}
	for _, name := range requiredSecrets {
		secrets[name] = "s3cret"
	}
	for _, p := range []*types.Project{p, composetest.Load(t, secrets)} {
		for name, svc := range p.Services {
			if len(svc.Profiles) > 0 {
				continue
			}
			for _, port := range svc.Ports {
				if name != "open-webui" && name != "longhaul-api" {
					t.Errorf("%s publishes %s:%d; only Open WebUI and the API may", name, port.Published, port.Target)
				}
				if port.HostIP != "127.0.0.1" {
					t.Errorf("%s publishes port %d on %q by default, want the host's loopback", name, port.Target, port.HostIP)
				}
			}
		}
	}
}

// TestComposeImagesMatchGoMod: the Temporal server, its admin tools and
// the Temporal UI of the stack are the versions `longhaul dev` embeds,
// those go.mod requires.
func TestComposeImagesMatchGoMod(t *testing.T) {
	p := composetest.Load(t, secretEnv(t))
	gomod := readFile(t, "../go.mod")
	required := func(module string) string {
		for _, l := range strings.Split(gomod, "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == module {
				return strings.TrimPrefix(f[1], "v")
			}
		}
		t.Fatalf("go.mod does not require %s", module)
		return ""
	}
	for _, c := range []struct{ service, image, module string }{
		{"temporal", "temporalio/server", "go.temporal.io/server"},
		{"temporal-schema", "temporalio/admin-tools", "go.temporal.io/server"},
		{"temporal-namespace", "temporalio/admin-tools", "go.temporal.io/server"},
		{"temporal-ui", "temporalio/ui", "github.com/temporalio/ui-server/v2"},
	} {
		if got, want := p.Services[c.service].Image, c.image+":"+required(c.module); got != want {
			t.Errorf("%s runs %s, want %s (%s in go.mod)", c.service, got, want, c.module)
		}
	}
}

// TestComposeTemporal renders the Temporal server's own configuration
// (go.temporal.io/server/common/config with its embedded template, what
// the temporalio/server image's `temporal-server start` loads) with the
// environment the compose file gives the temporal service: PostgreSQL of
// the stack, the set-up databases, 512 history shards, and a dynamic
// config file that the container finds through its bind mount and that
// the server's own loader accepts. A broken mount or path fails as the
// server would: it does not start without the file.
func TestComposeTemporal(t *testing.T) {
	p := composetest.Load(t, secretEnv(t))
	temporal := p.Services["temporal"]
	cfg := renderTemporal(t, composetest.Env(temporal))
	if n := cfg.Persistence.NumHistoryShards; n != 512 {
		t.Errorf("%d history shards, want 512 (it can never change once the cluster exists)", n)
	}
	pg := composetest.Env(p.Services["postgresql"])
	schema := composetest.Env(p.Services["temporal-schema"])
	for store, db := range map[string]string{"default": "temporal", "visibility": "temporal_visibility"} {
		sql := cfg.Persistence.DataStores[store].SQL
		if sql == nil {
			t.Fatalf("no SQL %s store: %+v", store, cfg.Persistence.DataStores)
		}
		if sql.PluginName != schema["SQL_PLUGIN"] || sql.ConnectAddr != schema["SQL_HOST"]+":"+schema["SQL_PORT"] || sql.DatabaseName != db ||
			sql.User != pg["POSTGRES_USER"] || sql.Password != pg["POSTGRES_PASSWORD"] || sql.User != schema["SQL_USER"] || sql.Password != schema["SQL_PASSWORD"] {
			t.Errorf("the %s store %s@%s/%s (%s) is not the database temporal-schema sets up on the stack's PostgreSQL", store, sql.User, sql.ConnectAddr, sql.DatabaseName, sql.PluginName)
		}
		if !strings.Contains(strings.Join(p.Services["temporal-schema"].Command, " "), "--db "+db+" update-schema") {
			t.Errorf("temporal-schema does not bring %s up to date", db)
		}
	}
	if err := dynamicConfigOf(t, temporal); err != "" {
		t.Error(err)
	}

	// The same checks catch a broken mount.
	for _, c := range []struct {
		name    string
		breakIt func(*types.ServiceConfig)
	}{
		{"mount removed", func(s *types.ServiceConfig) { s.Volumes = nil }},
		{"path elsewhere", func(s *types.ServiceConfig) {
			other := "/etc/temporal/config/other.yaml"
			s.Environment["DYNAMIC_CONFIG_FILE_PATH"] = &other
		}},
		{"file not in the mounted directory", func(s *types.ServiceConfig) {
			other := "/etc/temporal/config/dynamicconfig/development-sql.yaml"
			s.Environment["DYNAMIC_CONFIG_FILE_PATH"] = &other
		}},
		{"file missing", func(s *types.ServiceConfig) { s.Volumes[0].Source = filepath.Join(t.TempDir(), "dynamicconfig") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := composetest.Load(t, secretEnv(t)).Services["temporal"]
			c.breakIt(&s)
			if err := dynamicConfigOf(t, s); err == "" {
				t.Error("a broken dynamic-config mount went unnoticed")
			}
		})
	}
}

// renderTemporal loads the Temporal server's configuration from its
// embedded template with exactly env among the variables it reads
// (common/config/config_template_embedded.yaml reads them with sprig's
// env, empty as unset).
func renderTemporal(t *testing.T, env map[string]string) *temporalconfig.Config {
	t.Helper()
	for _, k := range []string{"DB", "DB_PORT", "DBNAME", "VISIBILITY_DBNAME", "POSTGRES_SEEDS", "POSTGRES_USER", "POSTGRES_PWD",
		"NUM_HISTORY_SHARDS", "DYNAMIC_CONFIG_FILE_PATH", "BIND_ON_IP", "TEMPORAL_BROADCAST_ADDRESS", "ENABLE_ES"} {
		t.Setenv(k, "")
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	// The loader says what it loads on the standard logger.
	log.SetOutput(io.Discard)
	defer log.SetOutput(os.Stderr)
	cfg, err := temporalconfig.Load(temporalconfig.WithEmbedded())
	if err != nil {
		t.Fatalf("the Temporal server's configuration: %v", err)
	}
	return cfg
}

// dynamicConfigOf returns what keeps the temporal service from starting
// for its dynamic config ("" when nothing): the file the rendered
// configuration names must be in the container through a bind mount and
// pass the server's own validation (`temporal-server
// validate-dynamic-config` runs dynamicconfig.LoadYamlFile).
func dynamicConfigOf(t *testing.T, svc types.ServiceConfig) string {
	t.Helper()
	cfg := renderTemporal(t, composetest.Env(svc))
	if cfg.DynamicConfigClient == nil || cfg.DynamicConfigClient.Filepath == "" {
		return "the server has no dynamic config file"
	}
	path := cfg.DynamicConfigClient.Filepath
	host, ok := composetest.HostPath(svc, path)
	if !ok {
		return "nothing is mounted at " + path + ", and the image has no such file: the server would not start"
	}
	b, err := os.ReadFile(host)
	if err != nil {
		return path + " (" + host + "): " + err.Error()
	}
	lr := dynamicconfig.LoadYamlFile(b)
	if err := lr.Err(); err != nil {
		return host + ": " + err.Error()
	}
	if len(lr.Warnings) > 0 {
		return host + ": warnings " + strconv.Quote(strings.Join(func() []string {
			var s []string
			for _, w := range lr.Warnings {
				s = append(s, w.Error())
			}
			return s
		}(), "; "))
	}
	return ""
}

// TestComposeNeedsSecrets: without a secret set, Compose refuses the file
// and names what is missing, rather than starting a stack with empty
// passwords and keys; .env.example's own values are placeholders Longhaul
// refuses (change-me…, the JWT secret too short).
func TestComposeNeedsSecrets(t *testing.T) {
	example := composetest.ExampleEnv(t)
	for _, name := range requiredSecrets {
		t.Run(name, func(t *testing.T) {
			if v := example[name]; !strings.HasPrefix(v, "change-me") {
				t.Errorf(".env.example's %s is %q, want a change-me… placeholder", name, v)
			}
			_, err := composetest.LoadErr(context.Background(), proctest.RepoRoot(t), composetest.Without(secretEnv(t), name))
			if err == nil || !strings.Contains(err.Error(), "set "+name+" in .env") {
				t.Errorf("without %s: %v", name, err)
			}
		})
	}
	if n := len(example["OPENWEBUI_JWT_SECRET"]); n >= 32 {
		t.Errorf(".env.example's JWT secret placeholder is %d bytes: Longhaul refuses only shorter ones", n)
	}
}

// TestComposeModelEndpoint: .env.example leaves each service its own
// model endpoint (the stack's Ollama; the Docker host's for the dev
// profile, which is not on the stack's network), and an endpoint set for
// the stack does not leak into the dev profile.
func TestComposeModelEndpoint(t *testing.T) {
	for _, c := range []struct {
		name          string
		env           map[string]string
		stack, devURL string
	}{
		{".env.example", secretEnv(t), "http://ollama:11434/v1", "http://host.docker.internal:11434/v1"},
		{"stack elsewhere", composetest.With(secretEnv(t), "LONGHAUL_LLM_BASE_URL=https://llm.example/v1"), "https://llm.example/v1", "http://host.docker.internal:11434/v1"},
		{"dev elsewhere", composetest.With(secretEnv(t), "LONGHAUL_DEV_LLM_BASE_URL=http://10.0.0.2:11434/v1"), "http://ollama:11434/v1", "http://10.0.0.2:11434/v1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := composetest.Load(t, c.env)
			for _, name := range []string{"longhaul-api", "longhaul-worker"} {
				if got := composetest.Env(p.Services[name])["LONGHAUL_LLM_BASE_URL"]; got != c.stack {
					t.Errorf("%s: model endpoint %q, want %q", name, got, c.stack)
				}
			}
			if got := composetest.Env(p.Services["longhaul-dev"])["LONGHAUL_LLM_BASE_URL"]; got != c.devURL {
				t.Errorf("longhaul-dev: model endpoint %q, want %q", got, c.devURL)
			}
		})
	}
}

// TestComposeGPU: deploy/compose.gpu.yml, added to the stack's file, gives
// Ollama the NVIDIA GPUs the way Compose reserves devices (what `docker
// run --gpus=all` does in Ollama's docs/docker.mdx); without it Ollama
// runs on the CPU.
func TestComposeGPU(t *testing.T) {
	gpus := func(p *types.Project) []types.DeviceRequest {
		d := p.Services["ollama"].Deploy
		if d == nil || d.Resources.Reservations == nil {
			return nil
		}
		return d.Resources.Reservations.Devices
	}
	if d := gpus(composetest.Load(t, secretEnv(t))); len(d) != 0 {
		t.Errorf("Ollama reserves %v without the GPU override", d)
	}
	d := gpus(composetest.Load(t, secretEnv(t), composetest.File, "deploy/compose.gpu.yml"))
	if len(d) != 1 || d[0].Driver != "nvidia" || d[0].Count != -1 || !slices.Equal(d[0].Capabilities, []string{"gpu"}) {
		t.Errorf("with the GPU override Ollama reserves %+v, want all NVIDIA GPUs", d)
	}
}

// TestComposeDevPublishesOnLoopback reads the single-container `dev`
// profile as Compose resolves it, over the image's own settings: by
// default every published port is bound to the host's loopback, the
// Temporal frontend is not published and the UI is read-only; an
// operator's LONGHAUL_UI_PUBLISH publishes the UI elsewhere.
func TestComposeDevPublishesOnLoopback(t *testing.T) {
	image := readDockerfile(t)
	svc := composetest.Load(t, secretEnv(t)).Services["longhaul-dev"]
	if !slices.Equal(svc.Profiles, []string{"dev"}) {
		t.Errorf("longhaul-dev has profiles %v, want [dev]: it must not start with the stack", svc.Profiles)
	}
	if len(svc.Ports) == 0 {
		t.Fatal("the dev profile publishes no port; want the API's at least")
	}
	for _, p := range svc.Ports {
		if p.HostIP != "127.0.0.1" {
			t.Errorf("port %d is published on %q, want 127.0.0.1", p.Target, p.HostIP)
		}
	}
	env := maps.Clone(image.env)
	maps.Copy(env, composetest.Env(svc))
	cfg := loadWith(t, env)
	_, frontendPort, _ := strings.Cut(cfg.EmbeddedTemporalAddr, ":")
	for _, p := range svc.Ports {
		if strconv.Itoa(int(p.Target)) == frontendPort {
			t.Errorf("the Temporal frontend's port %d is published", p.Target)
		}
	}
	if !loopback(t, cfg.EmbeddedTemporalAddr) {
		t.Errorf("the Temporal frontend listens on %s in the container, want its loopback", cfg.EmbeddedTemporalAddr)
	}
	if cfg.EmbeddedUIWrite {
		t.Error("the compose file lets the Temporal UI change runs by default")
	}

	// The operator says otherwise.
	svc = composetest.Load(t, composetest.With(secretEnv(t), "LONGHAUL_UI_PUBLISH=0.0.0.0:8233", "LONGHAUL_EMBEDDED_UI_WRITE=true")).Services["longhaul-dev"]
	i := slices.IndexFunc(svc.Ports, func(p types.ServicePortConfig) bool { return p.Target == 8233 })
	if i < 0 || svc.Ports[i].HostIP != "0.0.0.0" {
		t.Errorf("with LONGHAUL_UI_PUBLISH=0.0.0.0:8233 the UI is published as %+v, want on 0.0.0.0", svc.Ports)
	}
	if composetest.Env(svc)["LONGHAUL_EMBEDDED_UI_WRITE"] != "true" {
		t.Errorf("LONGHAUL_EMBEDDED_UI_WRITE did not reach the container: %v", composetest.Env(svc))
	}
}
