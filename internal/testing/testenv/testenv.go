// Package testenv starts a whole Longhaul stack for integration tests: the
// real embedded Temporal server on free ports in a temporary directory, a
// worker, the API on a real port, and the scripted model (the one fake).
// Everything is stopped by t.Cleanup, so a test leaves no process behind.
// With Options.Runs it serves the API alone over that runs service (the
// in-memory runsfake), with the same stores, catalog and scripted model:
// for the API's tests whose runs a test scripts rather than a worker.
package testenv

import (
	"cmp"
	"context"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/window"
	"io/fs"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/budget"
	"github.com/longhaul-dev/longhaul/internal/devserver"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/endpoints"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/mcp"
	"github.com/longhaul-dev/longhaul/internal/memory"
	"github.com/longhaul-dev/longhaul/internal/natsbus"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/toolset"
	"github.com/longhaul-dev/longhaul/internal/tracing"
	"github.com/longhaul-dev/longhaul/internal/usercreds"
	"github.com/longhaul-dev/longhaul/skills"
	lhworker "github.com/longhaul-dev/longhaul/worker"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
)

// TaskQueue is the task queue of the test stack.
const TaskQueue = "longhaul-test"

// Options adjust the stack.
type Options struct {
	// Layers are extra agent/skill layers over the built-ins.
	Layers []fs.FS
	// Tools are added to the built-in tools (current_time, web_fetch).
	Tools []tools.Tool
	// Fetch configures web_fetch; its zero value refuses loopback, as in
	// production.
	Fetch tools.WebFetchOptions
	// SearchURL turns web_search on, against that endpoint.
	SearchURL string
	// MCP configures MCP servers for the worker.
	MCP *mcp.Config
	// Env resolves ${VAR} in HTTP tools and MCP settings; nil means the
	// process environment.
	Env map[string]string
	// TokenKey (64 hex digits), when set, turns users' own credentials
	// on: Env.Credentials over the env's store, with the "auth": "oauth"
	// servers of MCP and the API's URL as LONGHAUL_PUBLIC_URL, given to the
	// worker's tools and the API.
	TokenKey string
	// MaxToolOutput caps tool results the model reads (0: the default);
	// longer ones are stored in the env's blob store.
	MaxToolOutput int
	// PlanParallel is the worker's LONGHAUL_PLAN_PARALLEL; zero is
	// activities.DefaultPlanParallel.
	PlanParallel int
	// MaxModelOutput caps one model call's answer in bytes (0: the
	// default).
	MaxModelOutput int
	// ModelIdleTimeout gives up on a silent model stream (0: never).
	ModelIdleTimeout time.Duration
	// ModelSilenceMax is the longest silence waited through while the
	// endpoint answers (0: none, the idle timeout alone decides).
	ModelSilenceMax time.Duration
	// HeartbeatInterval is how often the worker's calls heartbeat (0:
	// every 200 ms, so tests move quickly).
	HeartbeatInterval time.Duration
	// API adjusts the API configuration (TaskQueue is set by the env).
	API api.Config
	// NoWorker starts the stack without a worker.
	NoWorker bool
	// Runs, when set, is the runs service the API runs on (a
	// runsfake.Service): the env then starts no Temporal, NATS or worker,
	// and Client, Server and NATS stay nil. The stores, the catalog and
	// the scripted model (embeddings) are the env's as ever.
	Runs runs.Service
	// Log receives the stack's logs; nil discards them.
	Log *slog.Logger
	// NATSURL makes the stack use that NATS server (an external one)
	// instead of starting an embedded one.
	NATSURL string
	// Tracing gives the client (and so the worker) Temporal's
	// OpenTelemetry interceptor on the global tracer provider.
	Tracing bool
	// OwnTemporal starts a Temporal server for this stack alone, even in a
	// package that shares one (Main): for a test that stops or restarts
	// it, or reads its files.
	OwnTemporal bool
	// Endpoints are named model endpoints beside the scripted model (the
	// default endpoint), as LONGHAUL_LLM_ENDPOINTS configures them: agent
	// and skill model references are checked against them at start, as
	// the commands do, and "name:model" calls go to them.
	Endpoints []endpoints.Endpoint
	// Memory turns long-term memory on: a store on the env's SQLite file,
	// embeddings from the scripted model's /v1/embeddings, and
	// MemoryThreshold (0: memory.DefaultThreshold) and MemoryK.
	Memory          bool
	MemoryThreshold float64
	MemoryK         int
	// MaxBacklog caps each user's backlog (0: store.DefaultMaxBacklogItems).
	MaxBacklog int
	// NoDocVectors ingests documents without an embedder, as a worker
	// without LONGHAUL_EMBED_MODEL does (chunks for full-text search
	// only); otherwise the scripted model's /v1/embeddings embeds them.
	NoDocVectors bool
	// DocEmbedder, when set, wraps the embedder of documents' chunks (a
	// test's gate or counter around the scripted model's).
	DocEmbedder func(memory.Embedder) memory.Embedder
	// EmbedBatch is the workers' LONGHAUL_EMBED_BATCH (0: the default).
	EmbedBatch int
	// Context is the workers' LONGHAUL_LLM_CONTEXT. Nil gives every model
	// a window of NoWindow, as the scripted model has none unless a test
	// sets one; a test of windows sets the window it gave the model.
	Context window.Settings
	// WebhookPrivate lets the worker deliver webhooks to loopback (a
	// test's receiver) and the API take such URLs, as
	// LONGHAUL_WEBHOOK_PRIVATE does.
	WebhookPrivate bool
	// Budgets and ModelPrices are LONGHAUL_BUDGETS and
	// LONGHAUL_MODEL_PRICES of the env's usage ledger, which the workers
	// and APIs share; empty: no limits, no prices (spend is recorded).
	Budgets, ModelPrices string
}

// NoWindow is the window the env's workers assume of a model when the
// test sets none: the scripted model's own is unlimited.
const NoWindow = 1 << 24

// Env is a running stack.
type Env struct {
	T testing.TB
	// WorkerKeys, when set, are the keys the next worker started
	// (StartWorker) re-resolves a schedule's owner with, in place of the
	// API's (Options.API.Keys): a key removed or demoted since.
	WorkerKeys []identity.Key
	Model      *llmtest.Server
	// Server is the embedded Temporal server: the package's shared one
	// (see Main) unless Options.OwnTemporal or Options.Runs said otherwise.
	Server *devserver.Server
	// Namespace is the stack's namespace on it.
	Namespace string
	Client    client.Client
	Catalog   *skills.Catalog
	Tools     *tools.Registry
	// Blobs is the claim-check store (SQLite in the test's directory).
	Blobs store.Store
	// Memory is long-term memory when Options.Memory asked for it.
	Memory *memory.Service
	// Docs is the document store (SQLite, on the env's database), given
	// to the worker (ingestion, document_search) and the API; DocsEmbedder
	// embeds its chunks and queries through the scripted model's
	// /v1/embeddings.
	Docs         docstore.Store
	DocsEmbedder memory.Embedder
	// Credentials are users' own credentials when Options.TokenKey is set.
	Credentials *usercreds.Service
	// Ledger is the usage ledger (on the env's database), with
	// Options.Budgets and Options.ModelPrices.
	Ledger *budget.Ledger
	API    *api.Server
	URL    string // the API's base URL, e.g. http://127.0.0.1:1234
	log    *slog.Logger
	opts   Options
	mu     sync.Mutex
	worker sdkworker.Worker

	// apiConfig is the configuration of the env's APIs.
	apiConfig api.Config

	// NATSURL is the NATS the stack's worker and APIs use; NATS is the
	// embedded server behind it, unless Options.NATSURL named another.
	NATSURL  string
	NATS     *natsbus.Server
	natsAddr string
}

// Start brings the stack up.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Env{T: t, Model: llmtest.New(t), log: log, opts: opts}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if opts.Runs == nil {
		e.startTemporal(ctx)
	}
	e.openStores(ctx)
	topts := e.toolOptions()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.URL = "http://" + ln.Addr().String()
	if opts.TokenKey != "" {
		e.Credentials = credentials(t, opts, e.Blobs, e.URL, topts.LookupEnv, log)
		topts.Credentials = e.Credentials
	}
	e.loadCatalog(topts)
	e.buildTools(ctx, topts)
	if opts.Runs == nil {
		e.startEngine()
	}
	e.serveAPI(ln)
	return e
}

// startEngine starts NATS, unless Options.NATSURL names one, and the
// worker, unless Options.NoWorker says not to.
func (e *Env) startEngine() {
	e.NATSURL = e.opts.NATSURL
	if e.NATSURL == "" {
		e.natsAddr = FreeAddr(e.T)
		e.StartNATS()
		e.NATSURL = "nats://" + e.natsAddr
	}
	if !e.opts.NoWorker {
		e.StartWorker()
	}
}

// startTemporal starts the embedded Temporal server in the test's
// directory and dials it, with Temporal's tracing interceptor when
// Options.Tracing asks for it.
func (e *Env) startTemporal(ctx context.Context) {
	t := e.T
	t.Helper()
	srv, ns, ok := (*devserver.Server)(nil), "", false
	if !e.opts.OwnTemporal {
		srv, ns, ok = sharedNamespace(t, ctx)
	}
	if !ok {
		var err error
		srv, err = devserver.Start(ctx, devserver.Options{
			DataDir:          t.TempDir(),
			FrontendAddr:     FreeAddr(t),
			Namespaces:       []string{"default"},
			SearchAttributes: contract.SearchAttributes(),
			Logger:           e.log,
		})
		if err != nil {
			t.Fatalf("testenv: start temporal: %v", err)
		}
		t.Cleanup(srv.Stop)
		ns = "default"
	}
	e.Server, e.Namespace = srv, ns
	copts := client.Options{HostPort: srv.FrontendAddr(), Namespace: ns, Logger: quiet{}}
	if e.opts.Tracing {
		var err error
		if copts.Interceptors, err = tracing.Interceptors(); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.DialContext(ctx, copts)
	if err != nil {
		t.Fatalf("testenv: dial: %v", err)
	}
	e.Client = c
	t.Cleanup(c.Close)
	if e.Server != nil && ns != "default" {
		// The shared server outlives the stack: what the stack left
		// running there (a schedule firing every second, a run waiting
		// for a worker gone) would load it for the tests after.
		t.Cleanup(func() { quiesce(c) })
	}
}

// openStores opens the env's stores on one SQLite file in the test's
// directory: long-term memory (when Options.Memory asks for it), the
// claim-check store and the document store, with the documents' embedder.
func (e *Env) openStores(ctx context.Context) {
	t, opts := e.T, e.opts
	t.Helper()
	dbURL := "sqlite://" + filepath.Join(t.TempDir(), "longhaul.db")
	if opts.Memory {
		ms, err := memory.Open(ctx, dbURL)
		if err != nil {
			t.Fatalf("testenv: memory: %v", err)
		}
		t.Cleanup(func() { _ = ms.Close() })
		threshold := opts.MemoryThreshold
		if threshold == 0 {
			threshold = memory.DefaultThreshold
		}
		e.Memory = &memory.Service{Store: ms, Embedder: memory.NewOpenAIEmbedder(e.Model.URL(), "", "llmtest-embed", nil),
			K: opts.MemoryK, Threshold: threshold}
	}
	var err error
	e.Blobs, err = store.Open(ctx, dbURL, store.WithMaxBacklogItems(opts.MaxBacklog))
	if err != nil {
		t.Fatalf("testenv: store: %v", err)
	}
	t.Cleanup(func() { _ = e.Blobs.Close() })
	e.openLedger(ctx, dbURL)
	e.Docs, err = docstore.Open(ctx, dbURL)
	if err != nil {
		t.Fatalf("testenv: document store: %v", err)
	}
	t.Cleanup(func() { _ = e.Docs.Close() })
	if !opts.NoDocVectors {
		// Queries are embedded with the chunks' model, or not at all.
		e.DocsEmbedder = memory.NewOpenAIEmbedder(e.Model.URL(), "", "llmtest-embed", nil)
	}
}

// openLedger opens the env's usage ledger on dbURL.
func (e *Env) openLedger(ctx context.Context, dbURL string) {
	t := e.T
	t.Helper()
	limits, err := budget.ParseBudgets(e.opts.Budgets)
	if err != nil {
		t.Fatalf("testenv: budgets: %v", err)
	}
	prices, err := budget.ParsePrices(e.opts.ModelPrices)
	if err != nil {
		t.Fatalf("testenv: model prices: %v", err)
	}
	if e.Ledger, err = budget.Open(ctx, dbURL, limits, prices); err != nil {
		t.Fatalf("testenv: usage ledger: %v", err)
	}
	t.Cleanup(func() { _ = e.Ledger.Close() })
}

// toolOptions are the options of the env's tool set, over its stores.
func (e *Env) toolOptions() toolset.Options {
	opts := e.opts
	topts := toolset.Options{SearchURL: opts.SearchURL, MCP: opts.MCP, Fetch: opts.Fetch, Extra: opts.Tools, Memory: e.Memory, Backlog: e.Blobs,
		Docs: e.Docs, DocsEmbedder: e.DocsEmbedder}
	if opts.Env != nil {
		topts.LookupEnv = func(k string) (string, bool) { v, ok := opts.Env[k]; return v, ok }
	}
	return topts
}

// loadCatalog loads the built-in agents and skills under Options.Layers and
// checks them, as the commands do: their tools against topts and their
// model references against the scripted model and Options.Endpoints.
func (e *Env) loadCatalog(topts toolset.Options) {
	e.T.Helper()
	layers := append([]fs.FS{skills.Builtin()}, e.opts.Layers...)
	var err error
	e.Catalog, err = skills.Load(layers...)
	if err == nil {
		err = e.Catalog.Validate(toolset.Known(topts))
	}
	if err == nil {
		err = e.Catalog.CheckModels(endpoints.NewSet(endpoints.Endpoint{BaseURL: e.Model.URL()}, e.opts.Endpoints).Check)
	}
	if err != nil {
		e.T.Fatalf("testenv: skills: %v", err)
	}
}

// buildTools builds the env's tool registry; t.Cleanup closes the tool set.
func (e *Env) buildTools(ctx context.Context, topts toolset.Options) {
	e.T.Helper()
	set, err := toolset.Build(ctx, e.Catalog, topts, e.log)
	if err != nil {
		e.T.Fatalf("testenv: tools: %v", err)
	}
	e.T.Cleanup(func() { _ = set.Close() })
	e.Tools = set.Registry
}

// apiConfigFor is the configuration of the env's APIs: Options.API over
// the env's task queue, stores and scripted model.
func (e *Env) apiConfigFor() api.Config {
	cfg := e.opts.API
	cfg.TaskQueue = TaskQueue
	cfg.Blobs = e.Blobs
	cfg.Memory = e.Memory
	cfg.Credentials = e.Credentials
	cfg.Docs = e.Docs
	cfg.DocsEmbedder = e.DocsEmbedder
	if cfg.Usage == nil {
		cfg.Usage = e.Ledger
	}
	if e.Memory != nil {
		cfg.Forget = e.Memory.Store
	}
	if cfg.ModelTimeout == 0 {
		cfg.ModelTimeout = 30 * time.Second
	}
	cfg.Webhooks.AllowPrivate = cfg.Webhooks.AllowPrivate || e.opts.WebhookPrivate
	if cfg.Embeddings.BaseURL == "" {
		cfg.Embeddings.BaseURL = e.Model.URL()
	}
	if cfg.Schedules == nil && e.Client != nil {
		cfg.Schedules = runs.NewTemporalSchedules(e.Client, runs.Config{TaskQueue: TaskQueue, Namespace: e.Namespace})
	}
	return cfg
}

// serveAPI starts the env's API on ln, on a NATS connection of its own;
// t.Cleanup shuts it down.
func (e *Env) serveAPI(ln net.Listener) {
	e.apiConfig = e.apiConfigFor()
	e.API = api.New(e.apiConfig, e.apiRuns(), e.Catalog, e.log)
	go func() { _ = e.API.App().Listener(ln) }()
	e.T.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.API.Shutdown(sctx)
	})
}

// apiRuns is the runs service of one more API: Options.Runs, or one on
// the env's Temporal with a NATS connection of its own.
func (e *Env) apiRuns() runs.Service {
	if e.opts.Runs != nil {
		return e.opts.Runs
	}
	return e.Runs(e.Bus("testenv api"))
}

// Runs is a runs service on the env's Temporal, its store and deltas (nil:
// none), as an API process has one.
func (e *Env) Runs(deltas *natsbus.Bus) *runs.Temporal {
	return runs.NewTemporal(e.Client, runs.Config{TaskQueue: TaskQueue, Namespace: e.Namespace, Deltas: deltas, Blobs: e.Blobs, Log: e.log})
}

// credentials builds the users' credentials service of the env.
func credentials(t testing.TB, opts Options, blobs store.Store, publicURL string, lookup func(string) (string, bool), log *slog.Logger) *usercreds.Service {
	box, err := usercreds.NewBox(opts.TokenKey)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	servers := map[string]usercreds.Server{}
	if opts.MCP != nil {
		for name, sc := range opts.MCP.Servers {
			if !sc.OAuth() {
				continue
			}
			u, err := tools.ExpandEnv(sc.URL, lookup)
			if err != nil {
				t.Fatalf("testenv: mcp server %s: %v", name, err)
			}
			servers[name] = usercreds.Server{URL: u, ClientID: sc.ClientID, ClientSecret: sc.ClientSecret, Scopes: sc.Scopes}
		}
	}
	return &usercreds.Service{Store: blobs.(store.Credentials), Box: box, PublicURL: publicURL, Servers: servers, Log: log}
}

// Activities builds the activities the env's workers run, with fast
// heartbeats so tests move quickly, on a NATS connection of their own.
func (e *Env) Activities() *activities.Activities {
	a := activities.New(activities.LLMConfig{BaseURL: e.Model.URL(), Model: "llmtest", Endpoints: e.opts.Endpoints}, e.Catalog, e.Tools, e.log)
	a.Bus = e.Bus("testenv worker")
	a.HeartbeatInterval = cmp.Or(e.opts.HeartbeatInterval, 200*time.Millisecond)
	a.Blobs = e.Blobs
	a.Memory = e.Memory
	a.Runs = e.Client
	a.Updates = e.Client
	a.Forks = e.Client
	a.Owners = &identity.Resolver{Keys: e.opts.API.Keys}
	if e.WorkerKeys != nil {
		a.Owners = &identity.Resolver{Keys: e.WorkerKeys}
	}
	a.MaxRuns = e.opts.API.Limits.Runs
	rcfg := runs.Config{TaskQueue: TaskQueue, Namespace: e.Namespace, Log: e.log}
	a.Fires = runs.Fires{Runs: runs.NewTemporal(e.Client, rcfg), Schedules: runs.NewTemporalSchedules(e.Client, rcfg)}
	if e.opts.MaxToolOutput > 0 {
		a.MaxToolOutput = e.opts.MaxToolOutput
	}
	a.PlanParallel = e.opts.PlanParallel
	a.MaxOutputBytes = e.opts.MaxModelOutput
	a.IdleTimeout = e.opts.ModelIdleTimeout
	a.SilenceMax = e.opts.ModelSilenceMax
	if a.SilenceMax == 0 {
		a.SilenceMax = -1 // as LONGHAUL_MODEL_SILENCE_MAX=0
	}
	a.Docs = e.Docs
	a.Spend = e.Ledger
	a.Webhooks, _ = e.Blobs.(store.Webhooks)
	if e.Credentials != nil && a.Webhooks != nil {
		a.Webhooks = usercreds.SealedWebhooks{Webhooks: a.Webhooks, Box: e.Credentials.Box}
	}
	a.WebhookPrivate = e.opts.WebhookPrivate
	a.EmbedBatch = e.opts.EmbedBatch
	a.Windows = window.NewResolver(e.opts.Context, nil)
	if e.opts.Context == nil {
		a.Windows = window.NewResolver(window.Settings{"llmtest": NoWindow}, func(context.Context, string, string, string) (window.Window, bool) {
			return window.Window{Tokens: NoWindow, Source: "test"}, true
		})
	}
	if !e.opts.NoDocVectors {
		a.Embedder = memory.NewOpenAIEmbedder(e.Model.URL(), "", "llmtest-embed", nil)
		if e.opts.DocEmbedder != nil {
			a.Embedder = e.opts.DocEmbedder(a.Embedder)
		}
	}
	return a
}

// StartWorker starts a worker (stopping the current one, if any).
func (e *Env) StartWorker() {
	e.T.Helper()
	e.StopWorker()
	// No drain time: stopping the worker cuts its calls off as a crash would.
	w := sdkworker.New(e.Client, TaskQueue, lhworker.Options(0))
	lhworker.Register(w, e.Activities())
	if err := w.Start(); err != nil {
		e.T.Fatalf("testenv: start worker: %v", err)
	}
	e.mu.Lock()
	e.worker = w
	e.mu.Unlock()
	e.T.Cleanup(e.StopWorker)
}

// StartVersionedWorker starts one more worker, beside the env's own (if
// any), polling as the deployment version v, as a `longhaul worker` of that
// build would; it does not make v current (see lhworker.Promote). Stop
// stops it as a crash or a deploy would; t.Cleanup does too.
func (e *Env) StartVersionedWorker(v lhworker.Versioning) sdkworker.Worker {
	e.T.Helper()
	o := lhworker.Options(0)
	v.Apply(&o)
	w := sdkworker.New(e.Client, TaskQueue, o)
	lhworker.Register(w, e.Activities())
	if err := w.Start(); err != nil {
		e.T.Fatalf("testenv: start worker %s: %v", v, err)
	}
	e.T.Cleanup(w.Stop)
	return w
}

// StopWorker stops the running worker, as a crash or a deploy would.
func (e *Env) StopWorker() {
	e.mu.Lock()
	w := e.worker
	e.worker = nil
	e.mu.Unlock()
	if w != nil {
		w.Stop()
	}
}

// FreeAddr returns a free loopback host:port for a server to bind a moment
// later: one outside the kernel's ephemeral range (devserver.FreePort), so
// an outgoing connection or another test's port 0 does not take it first.
func FreeAddr(t testing.TB) string {
	t.Helper()
	port, err := devserver.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(port)
}

type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
