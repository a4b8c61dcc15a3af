package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/config"
	"github.com/longhaul-dev/longhaul/internal/endpoints"
	"github.com/longhaul-dev/longhaul/internal/mcp"
	"github.com/longhaul-dev/longhaul/internal/memory"
	"github.com/longhaul-dev/longhaul/internal/metrics"
	"github.com/longhaul-dev/longhaul/internal/modelcheck"
	"github.com/longhaul-dev/longhaul/internal/natsbus"
	"github.com/longhaul-dev/longhaul/internal/redact"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/toolset"
	"github.com/longhaul-dev/longhaul/internal/tracing"
	"github.com/longhaul-dev/longhaul/internal/usercreds"
	"github.com/longhaul-dev/longhaul/skills"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// needRemote checks the settings the worker and api commands cannot start
// without: an external Temporal and NATS.
func needRemote(cfg config.Config, command string) error {
	if cfg.TemporalAddress == "" {
		return fmt.Errorf("LONGHAUL_TEMPORAL_ADDRESS is required for longhaul %s (host:port of a Temporal frontend, e.g. one started by longhaul server)", command)
	}
	if cfg.NATSURL == "" {
		return fmt.Errorf("LONGHAUL_NATS_URL is required for longhaul %s (a NATS server, e.g. nats://%s started by longhaul server)", command, config.DefaultServerNATSAddr)
	}
	return nil
}

// remote is what the worker and api commands open before their own part:
// the metrics endpoint, the agent files, a client of the external Temporal,
// the stores. close releases all of it.
type remote struct {
	metrics     *metrics.Metrics
	metricsAddr string
	catalog     *skills.Catalog
	tools       toolset.Options // with the memory tools when memory is on, and the backlog tools
	temporal    client.Client
	blobs       store.Store
	memory      *memory.Service
	close       func()
}

func openRemote(ctx context.Context, cfg config.Config, log *slog.Logger, command string) (*remote, error) {
	if err := needRemote(cfg, command); err != nil {
		return nil, err
	}
	r := &remote{close: func() {}}
	var err error
	if r.metrics, r.metricsAddr, err = startMetrics(ctx, cfg, log, command); err != nil {
		return nil, err
	}
	if r.catalog, r.tools, err = loadCatalog(cfg, log); err != nil {
		return nil, err
	}
	if r.temporal, err = dial(ctx, cfg, cfg.TemporalAddress, log, r.metrics); err != nil {
		return nil, err
	}
	var closeStores func()
	if r.blobs, r.memory, closeStores, err = openStores(ctx, cfg, log); err != nil {
		r.temporal.Close()
		return nil, err
	}
	r.tools.Memory = r.memory
	if r.tools.Credentials, err = openCredentials(cfg, r.tools.MCP, r.blobs, log); err != nil {
		closeStores()
		r.temporal.Close()
		return nil, err
	}
	r.tools.Backlog = r.blobs
	r.close = func() { closeStores(); r.temporal.Close() }
	return r, nil
}

// dial connects to Temporal, failing fast with a clear message when it does
// not answer.
func dial(ctx context.Context, cfg config.Config, addr string, log *slog.Logger, m *metrics.Metrics) (client.Client, error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	opts := client.Options{
		HostPort:  addr,
		Namespace: cfg.TemporalNamespace,
		Logger:    sdklog.NewStructuredLogger(log.With("component", "temporal-sdk")),
	}
	if m != nil {
		opts.MetricsHandler = m.Temporal
	}
	var err error
	if opts.Interceptors, err = tracing.Interceptors(); err != nil {
		return nil, err
	}
	// TLS and the API key are for a real cluster; the embedded server
	// speaks plain gRPC on its loopback.
	if addr == cfg.TemporalAddress {
		tc, err := cfg.TemporalTLSConfig()
		if err != nil {
			return nil, err
		}
		opts.ConnectionOptions.TLS = tc
		if cfg.TemporalAPIKey != "" {
			opts.Credentials = client.NewAPIKeyStaticCredentials(cfg.TemporalAPIKey)
		}
	}
	c, err := client.DialContext(dctx, opts)
	if err != nil {
		return nil, fmt.Errorf("cannot reach Temporal at %s (LONGHAUL_TEMPORAL_ADDRESS): %w", addr, err)
	}
	return c, nil
}

// loadCatalog loads the agents and skills and the MCP configuration, and
// checks the skills' tool names against the tools a worker can have.
func loadCatalog(cfg config.Config, log *slog.Logger) (*skills.Catalog, toolset.Options, error) {
	opts := toolset.Options{
		SearchURL: cfg.SearchURL,
		Fetch:     tools.WebFetchOptions{AllowedPorts: cfg.FetchPorts},
	}
	if cfg.MCPConfig != "" {
		mc, err := mcp.LoadConfig(cfg.MCPConfig)
		if err != nil {
			return nil, opts, fmt.Errorf("LONGHAUL_MCP_CONFIG: %w", err)
		}
		opts.MCP = &mc
	}
	cat, err := skills.LoadDefault(cfg.SkillsDir)
	if err != nil {
		return nil, opts, err
	}
	if err := cat.Validate(toolset.Known(opts)); err != nil {
		return nil, opts, err
	}
	ends, err := cfg.ModelEndpoints()
	if err != nil {
		return nil, opts, err
	}
	// A model reference to an endpoint that is not configured stops
	// start-up, naming the file: a typo never sends a request elsewhere.
	if err := cat.CheckModels(ends.Check); err != nil {
		return nil, opts, err
	}
	if named := ends.Named(); len(named) > 0 {
		list := make([]string, len(named))
		for i, e := range named {
			list[i] = e.Name + "=" + redact.URLs(e.BaseURL)
		}
		log.Info("model endpoints", "default", redact.URLs(cfg.LLMBaseURL), "named", list)
	}
	ids := []string{}
	for _, a := range cat.Agents() {
		ids = append(ids, a.ID)
	}
	log.Info("agents loaded", "agents", ids, "skills_dir", cfg.SkillsDir)
	return cat, opts, nil
}

// openBus connects to NATS — the embedded server in-process, or
// LONGHAUL_NATS_URL — for the live deltas of running calls. A NATS that is
// down is retried in the background: streams then carry durable events only.
func openBus(cfg config.Config, embedded *natsbus.Server, name string, log *slog.Logger) (*natsbus.Bus, func(), error) {
	nc, err := natsbus.Connect(natsbus.ClientOptions{
		URL: cfg.NATSURL, Name: name, InProcess: embedded,
		CredsFile: cfg.NATSCreds, TLSCA: cfg.NATSTLSCA, TLSCert: cfg.NATSTLSCert, TLSKey: cfg.NATSTLSKey,
	}, log.With("component", "nats"))
	if err != nil {
		return nil, nil, fmt.Errorf("LONGHAUL_NATS_URL: %w", err)
	}
	if !nc.IsConnected() {
		log.Warn("NATS is not reachable yet; retrying in the background (streams carry whole answers until it is)", "url", redact.URLs(cfg.NATSURL))
	}
	return natsbus.New(nc, natsbus.NewSubjects(cfg.NATSSubjectPrefix, cfg.TemporalNamespace), log), func() { nc.Close() }, nil
}

// openStores opens what a worker and an API keep beside Temporal: the blob
// and conversation store, and long-term memory when it is on. The returned
// func closes both.
func openStores(ctx context.Context, cfg config.Config, log *slog.Logger) (store.Store, *memory.Service, func(), error) {
	blobs, err := store.Open(ctx, cfg.DatabaseURL, store.WithMaxConversations(cfg.MaxChats), store.WithMaxBacklogItems(cfg.MaxBacklog))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("LONGHAUL_DATABASE_URL: %w", err)
	}
	mem, closeMem, err := openMemory(ctx, cfg, log)
	if err != nil {
		blobs.Close()
		return nil, nil, nil, err
	}
	return blobs, mem, func() { closeMem(); blobs.Close() }, nil
}

// openMemory opens long-term memory on LONGHAUL_DATABASE_URL with the
// embedder LONGHAUL_EMBED_MODEL names; with none, memory is off (nil) and
// start-up says so once.
func openMemory(ctx context.Context, cfg config.Config, log *slog.Logger) (*memory.Service, func(), error) {
	if cfg.EmbedModel == "" {
		log.Info("long-term memory is off: LONGHAUL_EMBED_MODEL is not set (agents' memory: and remember: do nothing, the memory tools are not offered, /v1/memories answers 404)")
		return nil, func() {}, nil
	}
	st, err := memory.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, nil, fmt.Errorf("LONGHAUL_DATABASE_URL (memory): %w", err)
	}
	base, key := cfg.Embedder()
	svc := &memory.Service{
		Store: st, Embedder: memory.NewOpenAIEmbedder(base, key, cfg.EmbedModel, nil),
		K: cfg.MemoryK, Threshold: cfg.MemoryThreshold, Max: cfg.MaxMemories,
	}
	backend := ""
	if b, ok := st.(memory.Backend); ok {
		backend = b.Backend()
	}
	log.Info("long-term memory is on", "embed_model", cfg.EmbedModel, "embed_url", redact.URLs(base), "store", backend,
		"k", cfg.MemoryK, "threshold", cfg.MemoryThreshold, "max_per_user", cfg.MaxMemories)
	return svc, func() { st.Close() }, nil
}

// memoryLine is the start-up line of long-term memory.
func memoryLine(cfg config.Config, mem *memory.Service) string {
	if mem == nil {
		return "off (LONGHAUL_EMBED_MODEL is not set)"
	}
	base, _ := cfg.Embedder()
	line := cfg.EmbedModel + " at " + redact.URLs(base)
	if b, ok := mem.Store.(memory.Backend); ok {
		line += ", " + b.Backend()
	}
	return line
}

// checkModel asks each model endpoint, beside the rest of start-up,
// whether it answers, has the models this worker sends it and takes tools
// (see modelcheck.Probe): the default endpoint is asked of the default
// model and of every model cat's agents and skills name on it, and each
// endpoint of LONGHAUL_LLM_ENDPOINTS of the models named on it. The
// endpoints are asked at once; the returned func waits for the answers,
// at most modelcheck.Timeout from now, and gives the same answers to
// every caller (the banner, and the activities told which models think).
// Start-up goes on whatever they find: an endpoint may come up later.
func checkModel(ctx context.Context, cfg config.Config, cat *skills.Catalog) func() (modelcheck.Result, []endpointCheck) {
	named, byEndpoint := endpointModels(cfg, cat)
	def := make(chan modelcheck.Result, 1)
	go func() {
		def <- modelcheck.Probe(ctx, &http.Client{}, cfg.LLMBaseURL, cfg.LLMAPIKey, byEndpoint[""])
	}()
	checks := make([]endpointCheck, len(named))
	var wg sync.WaitGroup
	for i, e := range named {
		checks[i] = endpointCheck{name: e.Name, url: e.BaseURL, models: byEndpoint[e.Name]}
		if len(checks[i].models) == 0 {
			continue // no agent uses it: nothing to ask
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			checks[i].result = modelcheck.Probe(ctx, &http.Client{}, e.BaseURL, e.APIKey, checks[i].models)
		}()
	}
	return sync.OnceValues(func() (modelcheck.Result, []endpointCheck) {
		r := <-def
		wg.Wait()
		return r, checks
	})
}

// endpointCheck is what the start-up check found of one named endpoint.
type endpointCheck struct {
	name, url string
	// models are the models this worker sends it; none: it was not asked.
	models []string
	result modelcheck.Result
}

// endpointModels are the named endpoints and the models each is sent
// (by endpoint name, "" the default): the default model first, then every
// model of the catalog's agents (model: and models:) and skills, in the
// order found. A reference that does not resolve is left out: the
// catalog's own check reports it.
func endpointModels(cfg config.Config, cat *skills.Catalog) ([]endpoints.Endpoint, map[string][]string) {
	set, err := cfg.ModelEndpoints()
	if err != nil {
		set = endpoints.NewSet(endpoints.Endpoint{BaseURL: cfg.LLMBaseURL, APIKey: cfg.LLMAPIKey}, nil)
	}
	by := map[string][]string{}
	add := func(ref string) {
		for _, m := range longhaul.ModelList(ref) {
			if e, model, err := set.Resolve(m); err == nil && model != "" && !slices.Contains(by[e.Name], model) {
				by[e.Name] = append(by[e.Name], model)
			}
		}
	}
	add(cfg.LLMModel)
	if cat != nil {
		for _, a := range cat.Agents() {
			add(a.Model)
			for _, r := range a.Models.Refs() {
				add(r[1])
			}
		}
		for _, s := range cat.Skills() {
			add(s.Model)
		}
	}
	return set.Named(), by
}

// modelLine is the start-up line of the model endpoint: its URL, the
// default model and what the check found; a problem is logged as a
// warning too, with its fix.
func modelLine(cfg config.Config, r modelcheck.Result, log *slog.Logger) string {
	if !r.OK() {
		log.Warn("the model endpoint is not ready: "+r.Problem, "fix", r.Fix, "url", redact.URLs(cfg.LLMBaseURL), "model", cfg.LLMModel)
	}
	return fmt.Sprintf("%s (default %s): %s", redact.URLs(cfg.LLMBaseURL), cfg.LLMModel, r.Status(longhaul.PrimaryModel(cfg.LLMModel)))
}

// checkedLine is the banner's model line and the named endpoints' note
// once the check's answers are in.
func checkedLine(cfg config.Config, check func() (modelcheck.Result, []endpointCheck), log *slog.Logger) string {
	r, named := check()
	return modelLine(cfg, r, log) + endpointsNote(named, log)
}

// thinkingModels are the models the check found thinking (Ollama's
// capabilities, modelcheck.Result.Thinking), by endpoint name ("" the
// default), as the ids each endpoint is sent: what
// activities.KnownThinkers takes.
func thinkingModels(check func() (modelcheck.Result, []endpointCheck)) map[string][]string {
	r, named := check()
	out := map[string][]string{}
	if len(r.Thinking) > 0 {
		out[""] = r.Thinking
	}
	for _, c := range named {
		if len(c.result.Thinking) > 0 {
			out[c.name] = c.result.Thinking
		}
	}
	return out
}

// endpointsNote is what the check found of the named endpoints, for the
// start-up banner after modelLine: "; endpoint <name> <url>: <status>"
// each; a problem is logged as a warning too, with its fix.
func endpointsNote(checks []endpointCheck, log *slog.Logger) string {
	var b strings.Builder
	for _, c := range checks {
		status := "not used by any agent"
		if len(c.models) > 0 {
			status = c.result.Status(c.models[0])
			if !c.result.OK() {
				log.Warn("model endpoint "+c.name+" is not ready: "+c.result.Problem, "fix", c.result.Fix, "url", redact.URLs(c.url))
			}
		}
		fmt.Fprintf(&b, "; endpoint %s %s: %s", c.name, redact.URLs(c.url), status)
	}
	return b.String()
}

// openCredentials is the users' own credentials (MCP OAuth tokens,
// HTTP-tool secrets) sealed with LONGHAUL_TOKEN_KEY in the store, or nil
// when the key is not set. An "auth": "oauth" server then stays off, and
// says so, as do the routes.
func openCredentials(cfg config.Config, mc *mcp.Config, blobs store.Store, log *slog.Logger) (*usercreds.Service, error) {
	servers := map[string]usercreds.Server{}
	if mc != nil {
		for name, sc := range mc.Servers {
			if !sc.OAuth() {
				continue
			}
			var problems []error
			expand := func(s string) string {
				v, err := tools.ExpandEnv(s, nil)
				if err != nil {
					problems = append(problems, err)
				}
				return v
			}
			srv := usercreds.Server{URL: expand(sc.URL), ClientID: expand(sc.ClientID), ClientSecret: expand(sc.ClientSecret), Scopes: sc.Scopes}
			if len(problems) > 0 {
				return nil, fmt.Errorf("LONGHAUL_MCP_CONFIG: mcp server %q: %w", name, errors.Join(problems...))
			}
			servers[name] = srv
		}
	}
	if cfg.TokenKey == "" {
		if len(servers) > 0 {
			log.Error(`MCP servers with "auth": "oauth" are off: LONGHAUL_TOKEN_KEY is not set`, "servers", slices.Sorted(maps.Keys(servers)))
		}
		return nil, nil
	}
	if len(servers) > 0 && cfg.PublicURL == "" {
		return nil, errors.New(`LONGHAUL_PUBLIC_URL is required by the MCP servers with "auth": "oauth": it makes the redirect URI <it>/oauth/callback`)
	}
	box, err := usercreds.NewBox(cfg.TokenKey)
	if err != nil {
		return nil, fmt.Errorf("LONGHAUL_TOKEN_KEY: %w", err)
	}
	cs, ok := blobs.(store.Credentials)
	if !ok {
		return nil, fmt.Errorf("LONGHAUL_DATABASE_URL: the store keeps no credentials")
	}
	return &usercreds.Service{Store: cs, Box: box, PublicURL: cfg.PublicURL, Servers: servers, Log: log.With("component", "usercreds")}, nil
}
