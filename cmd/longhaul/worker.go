package main

import (
	"context"
	"fmt"
	"github.com/longhaul-dev/longhaul/internal/window"
	"io"
	"log/slog"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/config"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/endpoints"
	"github.com/longhaul-dev/longhaul/internal/extract"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/memory"
	"github.com/longhaul-dev/longhaul/internal/modelcheck"
	"github.com/longhaul-dev/longhaul/internal/natsbus"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/usercreds"
	"github.com/longhaul-dev/longhaul/skills"
	"github.com/longhaul-dev/longhaul/worker"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
)

func runWorker(ctx context.Context, cfg config.Config, log *slog.Logger, out io.Writer) error {
	r, err := openRemote(ctx, cfg, log, "worker")
	if err != nil {
		return err
	}
	defer r.close()
	model := checkModel(ctx, cfg, r.catalog)
	maddr, cat, topts, c, blobs, mem := r.metricsAddr, r.catalog, r.tools, r.temporal, r.blobs, r.memory
	docs, set, closeTools, err := openTools(ctx, cfg, cat, &topts, log)
	if err != nil {
		return err
	}
	defer closeTools()
	bus, closeBus, err := openBus(cfg, nil, "longhaul worker", log)
	if err != nil {
		return err
	}
	defer closeBus()
	v := versioning(cfg, log)
	acts := newActivities(cfg, cat, set.Registry, blobs, mem, docs, bus, c, log)
	ledger, err := spendOn(ctx, acts, cfg, log)
	if err != nil {
		return err
	}
	defer ledger.Close()
	w := worker.New(c, cfg.TaskQueue, acts, tuning(cfg), v)
	scheduleRetention(ctx, cfg, c, log)
	tellThinkers(acts, model)
	fmt.Fprintf(out, "Longhaul %s — worker on task queue %s at %s (version %s), model %s%s, memory %s%s\n", version(), cfg.TaskQueue, cfg.TemporalAddress, v, checkedLine(cfg, model, log), windowNote(ctx, cfg, acts.Windows), memoryLine(cfg, mem), metricsNote(maddr))
	return runWorkerVersion(ctx, w, c, v, cfg.WorkerPromote, log)
}

// runWorkerVersion runs w until ctx ends and, when promote is set, makes
// its version current once it polls. A worker whose version cannot become
// current stops with the reason, so a rollout that cannot finish shows as
// failing new workers while the old ones keep serving.
func runWorkerVersion(ctx context.Context, w sdkworker.Worker, c client.Client, v worker.Versioning, promote bool, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- w.Run(interruptOn(ctx)) }()
	promoted := make(chan error, 1)
	if promote {
		go func() { promoted <- promoteWorker(ctx, c, v, log) }()
	}
	select {
	case err := <-ran:
		return err
	case err := <-promoted:
		if err != nil && ctx.Err() == nil {
			cancel()
			<-ran
			return err
		}
		return <-ran
	}
}

// versioning is the worker deployment version this process's worker polls
// as: LONGHAUL_WORKER_DEPLOYMENT, with LONGHAUL_WORKER_BUILD_ID or else
// the version this binary reports.
func versioning(cfg config.Config, log *slog.Logger) worker.Versioning {
	v := worker.Versioning{Deployment: cfg.WorkerDeployment, BuildID: cfg.WorkerBuildID, Pinned: cfg.WorkerVersioning == config.VersioningPinned}
	if v.BuildID == "" {
		v.BuildID = version()
	}
	if v.Enabled() && v.BuildID == develVersion {
		log.Warn("this build has no version: every such build is one worker version, so a deploy of one moves no run; set LONGHAUL_WORKER_BUILD_ID (e.g. the image tag or commit)", "deployment", v.Deployment, "versioning", cfg.WorkerVersioning)
	}
	return v
}

// promoteWorker makes v current (see worker.Promote) and says so.
func promoteWorker(ctx context.Context, c client.Client, v worker.Versioning, log *slog.Logger) error {
	if !v.Enabled() {
		return nil
	}
	start := time.Now()
	if err := worker.Promote(ctx, c, v); err != nil {
		return fmt.Errorf("LONGHAUL_WORKER_DEPLOYMENT: %w (set LONGHAUL_WORKER_PROMOTE=false when an operator or the Temporal Worker Controller promotes versions, or LONGHAUL_WORKER_DEPLOYMENT=off for unversioned workers)", err)
	}
	log.Info("worker version is current", "deployment", v.Deployment, "build_id", v.BuildID, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// tuning sizes the worker from the settings.
func tuning(cfg config.Config) worker.Tuning {
	return worker.Tuning{ActivitySlots: cfg.WorkerActivitySlots, WorkflowSlots: cfg.WorkerWorkflowSlots, Pollers: cfg.WorkerPollers, StickyCache: cfg.WorkerStickyCache}
}

// tellThinkers tells acts which models the start-up check found thinking
// on each endpoint (thinkingModels), so that their first call keeps room
// to think instead of only calls after one that thought. It waits for the
// check's answers, as the banner does: call it before the worker polls.
func tellThinkers(acts *activities.Activities, check func() (modelcheck.Result, []endpointCheck)) {
	for name, models := range thinkingModels(check) {
		activities.KnownThinkers(acts, name, models...)
	}
}

func newActivities(cfg config.Config, cat *skills.Catalog, reg *tools.Registry, blobs store.Store, mem *memory.Service, docs docstore.Store, bus *natsbus.Bus, c client.Client, log *slog.Logger) *activities.Activities {
	// The endpoints parsed when the settings were checked (config.Validate).
	var named []endpoints.Endpoint
	if set, err := cfg.ModelEndpoints(); err == nil {
		named = set.Named()
	}
	a := activities.New(activities.LLMConfig{BaseURL: cfg.LLMBaseURL, APIKey: cfg.LLMAPIKey, Model: cfg.LLMModel, Endpoints: named}, cat, reg, log)
	a.MaxToolOutput = cfg.MaxToolChars
	a.PlanParallel = cfg.PlanParallel
	a.Windows = windows(cfg)
	a.RestoreChars = cfg.RestoreChars
	a.MaxOutputBytes = cfg.MaxModelOutput
	a.IdleTimeout = cfg.ModelIdleTimeout
	a.SilenceMax = cfg.ModelSilenceMax
	if a.SilenceMax == 0 {
		a.SilenceMax = -1 // never past the idle timeout
	}
	a.Breaker = activities.NewBreaker(cfg.ModelBreakerFailures, cfg.ModelBreakerCooldown)
	a.Blobs = blobs
	a.Webhooks = webhookStore(cfg, blobs)
	a.WebhookPrivate = cfg.WebhookPrivate
	a.Memory = mem
	a.Docs = docs
	a.Embedder = docEmbedder(cfg)
	a.EmbedBatch = cfg.EmbedBatch
	a.Extractor = &extract.Child{Memory: cfg.ExtractMemory, Timeout: cfg.ExtractTimeout, Concurrency: cfg.ExtractConcurrency}
	a.Bus = bus
	a.Runs = c
	a.Updates = c
	a.Forks = c
	// A schedule's run acts for its owner as the keys say now (AdmitFire):
	// the worker reads the API's keys for it.
	if keys, err := cfg.Keys(); err == nil {
		a.Owners = &identity.Resolver{Keys: keys}
	}
	a.MaxRuns = cfg.MaxRuns
	rcfg := runs.Config{TaskQueue: cfg.TaskQueue, Namespace: cfg.TemporalNamespace, Timeout: cfg.TemporalTimeout, Log: log}
	fires := runs.Fires{Runs: runs.NewTemporal(c, rcfg), Schedules: runs.NewTemporalSchedules(c, rcfg)}
	a.Fires, a.Schedules = fires, fires
	return a
}

// scheduleRetention makes sure the retention job is scheduled (see
// worker.ScheduleRetention), with LONGHAUL_RETENTION or, when that is 0,
// the namespace's workflow retention. A failure is logged, not fatal: the
// worker serves runs without it, and the next worker to start tries again.
func scheduleRetention(ctx context.Context, cfg config.Config, c client.Client, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	retention, from := cfg.Retention, "LONGHAUL_RETENTION"
	if retention == 0 {
		var err error
		if retention, err = worker.NamespaceRetention(ctx, c, cfg.TemporalNamespace); err != nil {
			log.Warn("stored run data (blobs, chat turns) is not cleaned up: cannot read the namespace's retention", "error", err)
			return
		}
		from = "the namespace's workflow retention"
	}
	if retention <= 0 {
		log.Info("stored run data (blobs, chat turns) is kept: the namespace keeps closed runs without a limit and LONGHAUL_RETENTION is 0")
		return
	}
	if err := worker.ScheduleRetention(ctx, c, cfg.TaskQueue, retention); err != nil {
		log.Warn("stored run data (blobs, chat turns) is not cleaned up: cannot schedule the retention job", "error", err)
		return
	}
	log.Info("stored data (blobs, chat turns) of closed runs is deleted after the retention", "retention", retention, "from", from,
		"schedule", contract.RetentionScheduleID(cfg.TaskQueue))
}

// windows is the worker's model windows: LONGHAUL_LLM_CONTEXT (checked
// with the other settings), else what the endpoints report.
func windows(cfg config.Config) *window.Resolver {
	settings, _ := window.ParseSettings(cfg.LLMContext)
	return window.NewResolver(settings, window.Discover(nil))
}

// windowNote is what the start banner says of the default model's window:
// its size and where it came from and, when it is Ollama's small default
// (or a guess), the setting that raises it and what that costs.
func windowNote(ctx context.Context, cfg config.Config, w *window.Resolver) string {
	// Of a fallback list, the first model, which answers when all is well.
	first := longhaul.PrimaryModel(cfg.LLMModel)
	t := window.Target{Ref: first, Canonical: first, BaseURL: cfg.LLMBaseURL, APIKey: cfg.LLMAPIKey, Model: first}
	if set, err := cfg.ModelEndpoints(); err == nil {
		if e, model, err := set.Resolve(first); err == nil {
			t.BaseURL, t.APIKey, t.Model = e.BaseURL, e.APIKey, model
		}
	}
	win := w.Window(ctx, t, 0)
	note := fmt.Sprintf("; window %d tokens (%s)", win.Tokens, win.Source)
	switch {
	case win.Source == window.SourceOllamaDefault && win.Tokens <= window.Default:
		note += "; that holds an agent's prompt and about one web page, and Ollama cuts silently past it: " +
			"set OLLAMA_CONTEXT_LENGTH=16384 on the Ollama server (llama3.1:8b's KV cache grows from 0.5 to 2 GiB in f16, 1 GiB with OLLAMA_KV_CACHE_TYPE=q8_0) " +
			"and LONGHAUL_LLM_CONTEXT=" + first + "=16384"
	case win.Source == window.SourceDefault:
		// An endpoint that does not say (OpenAI's own, LiteLLM): its
		// model may read far more than Ollama's default assumed here.
		note += "; the endpoint does not say, so Ollama's default is assumed: set LONGHAUL_LLM_CONTEXT=" + first + "=<the model's window in tokens>"
	}
	return note
}

// webhookStore is the worker's webhook store, over the blob store's
// database (nil without one), its secrets and URLs opened with LONGHAUL_TOKEN_KEY
// when it is set (config.Validate checked it).
func webhookStore(cfg config.Config, blobs store.Store) store.Webhooks {
	ws, ok := blobs.(store.Webhooks)
	if !ok {
		return nil
	}
	if cfg.TokenKey == "" {
		return ws
	}
	box, err := usercreds.NewBox(cfg.TokenKey)
	if err != nil {
		return ws
	}
	return usercreds.SealedWebhooks{Webhooks: ws, Box: box}
}
