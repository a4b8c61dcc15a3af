//go:build unix

package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/jackc/pgx/v5"
	"github.com/longhaul-dev/longhaul/internal/testing/owuitest"
	"github.com/nats-io/nats.go"

	"github.com/longhaul-dev/longhaul/internal/testing/composetest"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
	"github.com/longhaul-dev/longhaul/internal/testing/storetest"
)

// serverDefaultDynamicConfig is where the server's embedded config
// template looks for the dynamic config when DYNAMIC_CONFIG_FILE_PATH is
// not set (common/config/config_template_embedded.yaml:393 at v1.32.1).
// The binaries, built from the go.temporal.io/server of go.mod, are
// proctest.TemporalBinaries'.
const serverDefaultDynamicConfig = "/etc/temporal/config/dynamicconfig/docker.yaml"

// serverEnv is the environment the temporal service's container gives
// temporal-server, on the test's host: the compose file's, with only its
// addresses changed (the database's host and port; the interface to bind,
// the container's every interface, becomes the loopback; each of the
// server's ports, a container's own, a free one) and the dynamic-config
// file's path inside the container mapped to where the container would
// find it: the bind mount's source, or nothing (the image holds no
// dynamic config: server.Dockerfile copies only the binary and
// entrypoint.sh).
//
// The image runs docker/scripts/sh/entrypoint.sh, which only defaults
// BIND_ON_IP to the container's address (line 7) and, when it binds every
// interface, TEMPORAL_BROADCAST_ADDRESS to the same (lines 11-14), then
// `temporal-server start` (line 16) with no config flags: the server then
// renders its embedded template from the environment (cmd/server/main.go:
// 164-177, common/config/loader.go:145-147).
func serverEnv(t *testing.T, c container, pg *url.URL, ps *ports) (env map[string]string, frontend string) {
	t.Helper()
	env = environment(c.svc)
	expect := func(key, want string) {
		t.Helper()
		if env[key] != want {
			t.Fatalf("the temporal service's %s is %q; the test maps %q", key, env[key], want)
		}
	}
	expect("POSTGRES_SEEDS", "postgresql")
	expect("DB_PORT", "5432")
	env["POSTGRES_SEEDS"], env["DB_PORT"] = pg.Hostname(), pg.Port()
	if ip := env["BIND_ON_IP"]; ip == "0.0.0.0" || ip == "" {
		env["BIND_ON_IP"] = "127.0.0.1"
	}
	// Every port the template reads (config_template_embedded.yaml:303-340).
	for _, k := range []string{
		"FRONTEND_GRPC_PORT", "FRONTEND_HTTP_PORT", "FRONTEND_MEMBERSHIP_PORT", "INTERNAL_FRONTEND_HTTP_PORT",
		"INTERNAL_FRONTEND_GRPC_PORT", "INTERNAL_FRONTEND_MEMBERSHIP_PORT",
		"HISTORY_GRPC_PORT", "HISTORY_MEMBERSHIP_PORT", "MATCHING_GRPC_PORT", "MATCHING_MEMBERSHIP_PORT",
		"WORKER_GRPC_PORT", "WORKER_MEMBERSHIP_PORT",
	} {
		if _, set := env[k]; set {
			t.Fatalf("the temporal service sets %s; the test gives each port a free one and would change it", k)
		}
		env[k] = strconv.Itoa(ps.next())
	}
	dc := env["DYNAMIC_CONFIG_FILE_PATH"]
	if dc == "" {
		dc = serverDefaultDynamicConfig
	}
	env["DYNAMIC_CONFIG_FILE_PATH"] = c.path(dc)
	return env, "127.0.0.1:" + env["FRONTEND_GRPC_PORT"]
}

// TestComposeStack runs the stack docker-compose.yml describes, as the
// containers would, without Docker: the schema setup of temporal-schema,
// the temporal service's server, temporal-namespace's namespace, then
// `longhaul setup`, two workers and the API with the compose file's
// LONGHAUL_* settings, NATS with its token, and a streamed chat as Open
// WebUI sends it (its proxy key, its signed user). Every environment comes
// from docker-compose.yml and .env.example, loaded with the Compose v2
// loader; only addresses are changed (see network.rewrite), and the model
// is the scripted one.
func TestComposeStack(t *testing.T) {
	storetest.Ready(t)
	p := composetest.Load(t, composetest.UserEnv(t))
	pg, err := url.Parse(storetest.PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	ps := &ports{t: t, used: map[int]bool{}}
	// The builds first (a cold one takes minutes), then the stack's time.
	bindir, schema := proctest.TemporalBinaries(t)
	bin := proctest.Binary(t, "LONGHAUL_STACK_BIN")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	logs := t.TempDir()
	emptyRoot := t.TempDir()
	volumes := map[string]string{}
	for name := range p.Volumes {
		volumes[name] = filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(volumes[name], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	box := func(name string) container {
		return container{svc: service(t, p, name), root: emptyRoot, volumes: volumes}
	}
	failed := func() {
		if t.Failed() {
			entries, _ := os.ReadDir(logs)
			for _, e := range entries {
				t.Logf("----- %s (last 40 lines) -----\n%s", e.Name(), proctest.Tail(filepath.Join(logs, e.Name()), 40))
			}
		}
	}
	t.Cleanup(failed)

	// PostgreSQL as the pgvector/postgres image makes it from the postgresql
	// service's environment (docker-library/postgres, docker-entrypoint.sh):
	// POSTGRES_USER the superuser, with POSTGRES_PASSWORD (initdb
	// --username in docker_init_database_dir), and the database POSTGRES_DB
	// (docker_setup_db).
	pgEnv := environment(service(t, p, "postgresql"))
	prepareDatabase(t, pgEnv["POSTGRES_USER"], pgEnv["POSTGRES_PASSWORD"], pgEnv["POSTGRES_DB"])

	// temporal-schema: its entrypoint and command, run by sh as in the
	// admin-tools image, with temporal-sql-tool on PATH and the image's
	// /etc/temporal/schema where the module holds it.
	schemaSvc := box("temporal-schema")
	schemaSvc.image = map[string]string{"/etc/temporal/schema": schema}
	runOneShot(t, ctx, schemaSvc, logs, bindir, func(env map[string]string) {
		expectEnv(t, env, "SQL_HOST", "postgresql")
		expectEnv(t, env, "SQL_PORT", "5432")
		env["SQL_HOST"], env["SQL_PORT"] = pg.Hostname(), pg.Port()
	})

	// Without the dynamic-config file the real image gets (its mount
	// removed), on a database ready for it, the server exits at start, as
	// the image does (temporal/fx.go:228-236 at v1.32.1: a file-based
	// dynamic config client that cannot read its file fails the start).
	t.Run("without the dynamic-config mount the server exits", func(t *testing.T) {
		c := box("temporal")
		c.svc.Volumes = nil
		env, _ := serverEnv(t, c, pg, ps)
		log := filepath.Join(logs, "temporal-unmounted.log")
		srv := proctest.StartIn(t, t.TempDir(), "temporal (no dynamic config)", filepath.Join(bindir, "temporal-server"), log,
			envList(env, bindir+":/usr/bin:/bin", t.TempDir()), "start")
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := srv.Wait(wctx); err == nil {
			t.Fatal("temporal-server exited with status 0 without its dynamic config")
		} else if strings.Contains(err.Error(), "waiting for it to exit") {
			t.Fatalf("temporal-server runs without its dynamic config: %v", err)
		}
		// fx.go:232-234 wraps the file-based client's error, which names
		// the file (common/dynamicconfig/file_based_client.go:126, 209).
		if !proctest.LogContains(log, 0, "unable to create dynamic config client") || !proctest.LogContains(log, 0, env["DYNAMIC_CONFIG_FILE_PATH"]) {
			t.Fatalf("temporal-server exited, but not for want of its dynamic config:\n%s", proctest.Tail(log, 20))
		}
		t.Logf("temporal-server exited (%v): %s", srv.Cmd.ProcessState, lastLine(log, "unable to create dynamic config client"))
	})
	if t.Failed() {
		return
	}

	// temporal: temporal-server start, as entrypoint.sh runs it.
	tc := box("temporal")
	env, frontend := serverEnv(t, tc, pg, ps)
	t.Logf("temporal-server: dynamic config %s, %s history shards, frontend %s", env["DYNAMIC_CONFIG_FILE_PATH"], env["NUM_HISTORY_SHARDS"], frontend)
	if _, err := os.Stat(env["DYNAMIC_CONFIG_FILE_PATH"]); err != nil {
		t.Errorf("the temporal container has no dynamic-config file: %v", err)
	}
	serverLog := filepath.Join(logs, "temporal.log")
	srv := proctest.StartIn(t, t.TempDir(), "temporal", filepath.Join(bindir, "temporal-server"), serverLog,
		envList(env, bindir+":/usr/bin:/bin", t.TempDir()), "start")
	// Its healthcheck: nc -z localhost 7233.
	must(t, srv.WaitFor(ctx, "the frontend to listen", func() bool {
		c, err := net.DialTimeout("tcp", frontend, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}))

	// temporal-namespace: `temporal operator cluster health`, then the
	// namespace NAMESPACE with retention RETENTION unless it exists. The
	// Temporal CLI is not a module of go.mod; the SDK's client makes the
	// same calls (CheckHealth, DescribeNamespace, RegisterNamespace).
	nsSvc := service(t, p, "temporal-namespace")
	nsCmd := strings.Join(nsSvc.Command, " ")
	for _, want := range []string{"operator cluster health", "namespace create", `"$NAMESPACE"`, `"$RETENTION"`} {
		if !strings.Contains(nsCmd, want) {
			t.Fatalf("temporal-namespace's command no longer says %q; the test does what it did:\n%s", want, nsCmd)
		}
	}
	nsEnv := environment(nsSvc)
	createNamespace(t, ctx, frontend, nsEnv["NAMESPACE"], nsEnv["RETENTION"])

	// NATS: the nats service's command on Debian's nats-server, on loopback
	// ports, its store in the test's nats-data volume.
	natsAddr, natsMon := ps.addr(), ps.addr()
	startNATS(t, ctx, box("nats"), logs, natsAddr, natsMon)
	if nc, err := nats.Connect("nats://"+natsAddr, nats.Timeout(5*time.Second)); err == nil {
		nc.Close()
		t.Error("NATS accepts a client without the token")
	}

	model := llmtest.New(t)
	const answer = "The stack answers, through Temporal on PostgreSQL and NATS."
	model.SetDefault(llmtest.Text(answer))
	hosts := network{
		"temporal:7233":          frontend,
		"nats:4222":              natsAddr,
		"postgresql:5432":        pg.Host,
		"http://ollama:11434/v1": model.URL(),
	}
	longhaul := func(name string, args ...string) (*proctest.Proc, map[string]string, string) {
		t.Helper()
		svc := service(t, p, name)
		env := map[string]string{}
		for k, v := range environment(svc) {
			env[k] = hosts.rewrite(t, p, ps, k, v)
		}
		log := filepath.Join(logs, name+".log")
		if len(args) == 0 {
			args = svc.Command
		}
		return proctest.StartIn(t, t.TempDir(), name, bin, log, envList(env, "/usr/bin:/bin", t.TempDir()), args...), env, log
	}
	// longhaul setup waits itself for a namespace created a moment ago
	// (the frontend's namespace cache lags; cmd/longhaul/ops.go): its first
	// run succeeds, without the restarts Docker would give it.
	setup, _, setupLog := longhaul("longhaul-setup")
	if err := setup.Wait(ctx); err != nil {
		t.Fatalf("longhaul setup, right after the namespace was created: %v\n%s", err, proctest.Tail(setupLog, 30))
	}

	for i := range 2 {
		w, _, log := longhaul("longhaul-worker")
		w.Name = fmt.Sprintf("longhaul-worker-%d", i+1)
		must(t, w.WaitFor(ctx, "the worker", func() bool { return proctest.LogContains(log, 0, "worker on task queue") }))
	}
	api, apiEnv, _ := longhaul("longhaul-api")
	base := "http://" + apiEnv["LONGHAUL_HTTP_ADDR"]
	must(t, api.WaitFor(ctx, "the API to be ready", func() bool { return proctest.Ready(base + "/readyz") }))

	// Open WebUI, as the open-webui service configures it: its key, and the
	// user signed with its secret.
	ow := environment(service(t, p, "open-webui"))
	if got, want := ow["OPENAI_API_BASE_URL"], "http://longhaul-api:8080/v1"; got != want {
		t.Fatalf("open-webui's OPENAI_API_BASE_URL is %q, the test calls the API as %q", got, want)
	}
	conn := openWebUI(t, ow, base+"/v1")
	ann := owuitest.User{ID: "user-ann", Email: "ann@example.com", Name: "Ann", Role: "user"}
	agent := firstModel(t, ctx, conn, ann)
	ch := conn.NewChat(ann, agent)
	ask := ch.Ask("Is the stack up?")
	first := streamChat(t, ctx, ask)
	t.Logf("model %s streamed %q in run %s", agent, first.Content, first.RunID)
	if first.Content != answer {
		t.Errorf("streamed answer %q, want %q", first.Content, answer)
	}
	if status := runStatus(t, ctx, conn, ann, first.RunID); status != "completed" {
		t.Errorf("run %s is %q, want completed", first.RunID, status)
	}
	// The connection's custom header carries the message id (the
	// open-webui service's OPENAI_API_CONFIGS): a network retry of the same
	// message attaches to its run, the model not asked again; Regenerate (a
	// new message id) is a new run.
	calls := len(model.Requests())
	if again := streamChat(t, ctx, ask); again.RunID != first.RunID || again.Content != answer {
		t.Errorf("the retried request got run %s %q, want %s %q", again.RunID, again.Content, first.RunID, answer)
	}
	if n := len(model.Requests()); n != calls {
		t.Errorf("a retried message called the model again (%d calls, was %d)", n, calls)
	}
	ch.Answer(first.Content)
	if regen := streamChat(t, ctx, ch.Regenerate()); regen.RunID == first.RunID {
		t.Errorf("Regenerate got the first answer's run %s back", regen.RunID)
	}
	for _, pr := range []*proctest.Proc{srv, api} {
		if !pr.Alive() {
			t.Errorf("%s exited: %v", pr.Name, pr.Cmd.ProcessState)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func expectEnv(t *testing.T, env map[string]string, key, want string) {
	t.Helper()
	if env[key] != want {
		t.Fatalf("%s is %q; the test maps %q", key, env[key], want)
	}
}

// prepareDatabase creates the role and the database the postgresql
// service's image would, on the test PostgreSQL, and drops them and
// Temporal's databases when the test ends. It refuses a server that has
// them already: the compose file names them, so the test needs a
// PostgreSQL of its own (make test gives it a throwaway one).
func prepareDatabase(t *testing.T, user, password, db string) {
	t.Helper()
	dbs := []string{db, "temporal", "temporal_visibility"}
	admin := func(sql string, args ...any) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, storetest.PostgresURL())
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql, args...)
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, storetest.PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	var taken []string
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE datname = ANY($1)`, dbs)
	if err == nil {
		for rows.Next() {
			var n string
			_ = rows.Scan(&n)
			taken = append(taken, n)
		}
		rows.Close()
	}
	conn.Close(ctx)
	if len(taken) > 0 {
		t.Fatalf("the test PostgreSQL already has the databases %v that docker-compose.yml names; run the test on a throwaway PostgreSQL (make test does: test/postgres/with-postgres.sh)", taken)
	}
	ident := pgx.Identifier{user}.Sanitize()
	// A role that exists already (the test server's own user) is used as
	// it is, and kept.
	newRole := admin("CREATE ROLE "+ident+" SUPERUSER LOGIN PASSWORD "+quote(password)) == nil
	must(t, admin("CREATE DATABASE "+pgx.Identifier{db}.Sanitize()+" OWNER "+ident))
	t.Cleanup(func() {
		for _, d := range dbs {
			if err := admin("DROP DATABASE IF EXISTS " + pgx.Identifier{d}.Sanitize() + " WITH (FORCE)"); err != nil {
				t.Errorf("drop database %s: %v", d, err)
			}
		}
		if newRole {
			if err := admin("DROP ROLE IF EXISTS " + ident); err != nil {
				t.Errorf("drop role %s: %v", user, err)
			}
		}
	})
}

// quote is a SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// runOneShot runs a one-shot service's entrypoint and command (a shell
// script, as temporal-schema's) with its environment, edited by fix, with
// the paths of the image mapped onto the host, and waits for it to succeed.
func runOneShot(t *testing.T, ctx context.Context, c container, logs, bindir string, fix func(map[string]string)) {
	t.Helper()
	env := environment(c.svc)
	fix(env)
	args := append(append([]string(nil), c.svc.Entrypoint...), c.svc.Command...)
	if len(args) < 3 || args[0] != "/bin/sh" {
		t.Fatalf("%s: the test runs an entrypoint of /bin/sh with a script; it is %q", c.svc.Name, args)
	}
	for target := range c.image {
		for i := 2; i < len(args); i++ {
			args[i] = strings.ReplaceAll(args[i], target, c.path(target))
		}
	}
	log := filepath.Join(logs, c.svc.Name+".log")
	untilDone(t, ctx, c.svc, log, func() *proctest.Proc {
		return proctest.StartIn(t, t.TempDir(), c.svc.Name, args[0], log, envList(env, bindir+":/usr/bin:/bin", t.TempDir()), args[1:]...)
	})
}

// untilDone runs a one-shot service until it succeeds, as Docker does with
// its restart policy: on-failure:N restarts a failed container up to N
// times, after 100 ms, then twice as long each time, at most a minute
// (moby restartmanager/restartmanager.go: backoffMultiplier 2,
// defaultTimeout 100 ms, maxRestartTimeout 1 min; on-failure's
// MaximumRetryCount). The test fails when the last run fails.
func untilDone(t *testing.T, ctx context.Context, svc types.ServiceConfig, log string, start func() *proctest.Proc) {
	t.Helper()
	retries := 0
	if n, ok := strings.CutPrefix(svc.Restart, "on-failure:"); ok {
		var err error
		if retries, err = strconv.Atoi(n); err != nil {
			t.Fatalf("%s: restart %q: %v", svc.Name, svc.Restart, err)
		}
	} else if svc.Restart != "" && svc.Restart != "no" {
		t.Fatalf("%s: the test runs one-shot services with restart: no or on-failure:N, not %q", svc.Name, svc.Restart)
	}
	delay := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := start().Wait(ctx)
		if err == nil {
			return
		}
		if attempt == retries || ctx.Err() != nil {
			t.Fatalf("%v (after %d restarts):\n%s", err, attempt, proctest.Tail(log, 30))
		}
		t.Logf("%v; Docker restarts it in %v (restart: %s)", err, delay, svc.Restart)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
		}
		delay = min(2*delay, time.Minute)
	}
}

// createNamespace does what temporal-namespace's command does, with the
// SDK: waits for the cluster's health, then registers the namespace with
// the retention unless it exists.
func createNamespace(t *testing.T, ctx context.Context, frontend, namespace, retention string) {
	t.Helper()
	if namespace == "" || retention == "" {
		t.Fatalf("temporal-namespace's NAMESPACE=%q RETENTION=%q", namespace, retention)
	}
	keep, err := time.ParseDuration(retention)
	if err != nil {
		t.Fatalf("RETENTION: %v", err)
	}
	// The CLI fails while the frontend is not serving yet, and compose
	// runs it again (restart: on-failure); here the call retries.
	must(t, proctest.CreateNamespace(ctx, frontend, namespace, keep))
}

// startNATS runs the nats service's command on Debian's nats-server, on
// loopback ports (-a, -p, and --http_port's value changed), with the
// container's paths (its store) mapped onto the host.
func startNATS(t *testing.T, ctx context.Context, c container, logs, addr, mon string) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	_, monPort, _ := net.SplitHostPort(mon)
	args := append([]string(nil), c.svc.Command...)
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--http_port", "-m":
			args[i+1] = monPort
		case "--store_dir", "-sd":
			args[i+1] = c.path(args[i+1])
		case "-a", "--addr", "-p", "--port":
			t.Fatalf("the nats service sets %s; the test sets the address itself", args[i])
		}
	}
	args = append(args, "-a", host, "-p", port)
	pr := proctest.Start(t, "nats", proctest.NATSBinary(t), filepath.Join(logs, "nats.log"), []string{"PATH=/usr/bin:/bin"}, args...)
	must(t, pr.WaitFor(ctx, "NATS to accept connections", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}))
}

// openWebUI is the connection the open-webui service makes to the API,
// read from its environment as Open WebUI v0.10.2 and later read it
// (backend/open_webui/env.py:878-896: ENABLE_FORWARD_USER_INFO_HEADERS,
// FORWARD_USER_INFO_HEADER_JWT_SECRET, ..._EXPIRES_SECONDS; config.py:339-349:
// OPENAI_API_CONFIGS, the connection's custom headers by index), so
// the test's requests are those the compose file makes Open WebUI send.
func openWebUI(t *testing.T, env map[string]string, baseURL string) *owuitest.Connection {
	t.Helper()
	conn := &owuitest.Connection{
		BaseURL:         baseURL,
		Key:             env["OPENAI_API_KEY"],
		ForwardUserInfo: strings.EqualFold(env["ENABLE_FORWARD_USER_INFO_HEADERS"], "true"),
		JWTSecret:       env["FORWARD_USER_INFO_HEADER_JWT_SECRET"],
	}
	if !conn.ForwardUserInfo || conn.JWTSecret == "" {
		t.Fatal("open-webui does not forward its users signed (ENABLE_FORWARD_USER_INFO_HEADERS, FORWARD_USER_INFO_HEADER_JWT_SECRET): they would be one principal")
	}
	if v := env["FORWARD_USER_INFO_HEADER_JWT_EXPIRES_SECONDS"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("FORWARD_USER_INFO_HEADER_JWT_EXPIRES_SECONDS=%q: %v", v, err)
		}
		conn.JWTExpiry = time.Duration(n) * time.Second
	}
	var configs map[string]struct {
		Headers map[string]string `json:"headers"`
	}
	if err := json.Unmarshal([]byte(env["OPENAI_API_CONFIGS"]), &configs); err != nil {
		t.Fatalf("open-webui's OPENAI_API_CONFIGS: %v", err)
	}
	conn.Headers = configs["0"].Headers
	return conn
}

// bearer is a GET of the API as Open WebUI's user u.
func bearer(t *testing.T, ctx context.Context, conn *owuitest.Connection, u owuitest.User, path string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, conn.BaseURL+path, nil)
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+conn.Key)
	req.Header.Set(owuitest.HeaderUserJWT, conn.Token(u))
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	return resp
}

// firstModel lists the models (Longhaul's agents) and returns the first.
func firstModel(t *testing.T, ctx context.Context, conn *owuitest.Connection, u owuitest.User) string {
	t.Helper()
	resp := bearer(t, ctx, conn, u, "/models")
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&list) != nil || len(list.Data) == 0 {
		t.Fatalf("GET /v1/models: %s, %d models", resp.Status, len(list.Data))
	}
	return list.Data[0].ID
}

// streamChat sends req and reads the streamed answer as Open WebUI does.
func streamChat(t *testing.T, ctx context.Context, req *owuitest.Request) owuitest.Answer {
	t.Helper()
	resp, err := req.Send(ctx)
	must(t, err)
	a, err := owuitest.Read(resp)
	must(t, err)
	if a.Status != http.StatusOK || a.Error != "" || a.RunID == "" {
		t.Fatalf("POST /v1/chat/completions: status %d, error %q, run %q", a.Status, a.Error, a.RunID)
	}
	return a
}

// runStatus reads the run as the same user.
func runStatus(t *testing.T, ctx context.Context, conn *owuitest.Connection, u owuitest.User, id string) string {
	t.Helper()
	resp := bearer(t, ctx, conn, u, "/runs/"+url.PathEscape(id))
	defer resp.Body.Close()
	var run struct {
		Status string `json:"status"`
	}
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&run) != nil {
		t.Fatalf("GET /v1/runs/%s: %s", id, resp.Status)
	}
	return run.Status
}

// lastLine is the last line of the log that holds s, from s on.
func lastLine(path, s string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(string(b), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if j := strings.Index(lines[i], s); j >= 0 {
			return strings.TrimSpace(lines[i][j:])
		}
	}
	return ""
}
