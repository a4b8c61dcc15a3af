package main

import (
	"context"
	"fmt"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/budget"
	"github.com/longhaul-dev/longhaul/internal/config"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/endpoints"
	"github.com/longhaul-dev/longhaul/internal/mcp"
	"github.com/longhaul-dev/longhaul/internal/memory"
	"github.com/longhaul-dev/longhaul/internal/metrics"
	"github.com/longhaul-dev/longhaul/internal/natsbus"
	"github.com/longhaul-dev/longhaul/internal/redact"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/toolset"
	"github.com/longhaul-dev/longhaul/skills"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
)

func runAPI(ctx context.Context, cfg config.Config, log *slog.Logger, out io.Writer) error {
	r, err := openRemote(ctx, cfg, log, "api")
	if err != nil {
		return err
	}
	defer r.close()
	m, maddr, cat, topts, c, blobs, mem := r.metrics, r.metricsAddr, r.catalog, r.tools, r.temporal, r.blobs, r.memory
	forget, closeForget, err := forgetter(ctx, cfg, mem)
	if err != nil {
		return err
	}
	defer closeForget()
	bus, closeBus, err := openBus(cfg, nil, "longhaul api", log)
	if err != nil {
		return err
	}
	defer closeBus()
	docs, err := openDocs(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer docs.Close()
	ledger, err := openLedger(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer ledger.Close()
	// With LONGHAUL_METRICS_ADDR empty the API serves /metrics on its own
	// listener, so an API and a worker on one host never collide on a
	// metrics port.
	onAPI := m != nil && maddr == ""
	if onAPI {
		maddr = cfg.HTTPAddr
	}
	fmt.Fprintf(out, "Longhaul %s — API on http://%s/v1 against %s, NATS %s%s\n", version(), cfg.HTTPAddr, cfg.TemporalAddress, redact.URLs(cfg.NATSURL), metricsNote(maddr))
	return serveAPI(ctx, newAPI(cfg, c, cat, topts, blobs, docs, bus, log, false, m, onAPI, forget, ledger), cfg.HTTPAddr, log)
}

// forgetter is what deleting a conversation also deletes: the memories
// extracted from it. With memory off it is still the memory store, so a
// chat deleted now takes the memories it left while memory was on.
func forgetter(ctx context.Context, cfg config.Config, mem *memory.Service) (api.ConversationForgetter, func(), error) {
	if mem != nil {
		return mem.Store, func() {}, nil
	}
	st, err := memory.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, nil, fmt.Errorf("LONGHAUL_DATABASE_URL (memory): %w", err)
	}
	return st, func() { st.Close() }, nil
}

func newAPI(cfg config.Config, c client.Client, cat *skills.Catalog, topts toolset.Options, blobs store.Store, docs docstore.Store, bus *natsbus.Bus, log *slog.Logger, eager bool, m *metrics.Metrics, metricsOnAPI bool, forget api.ConversationForgetter, ledger *budget.Ledger) *api.Server {
	keys, _ := cfg.Keys() // checked by Validate
	if len(keys) == 0 {
		log.Warn("NO API KEYS: LONGHAUL_API_KEYS and LONGHAUL_PROXY_KEYS are empty, so the API serves every caller and trusts the user headers of anyone who sends them; every caller can read every user's runs. Fine for local development only.")
	}
	names := make([]string, 0, len(keys))
	for _, k := range keys {
		if k.Proxy {
			names = append(names, k.Name+" (proxy)")
		} else {
			names = append(names, k.Name)
		}
	}
	if len(keys) > 0 {
		log.Info("API keys", "keys", names, "signed_user_header", cfg.OpenWebUIJWTSecret != "")
	}
	var reg prometheus.Registerer
	var metricsHandler http.Handler
	if m != nil {
		reg = m.Registry
		if metricsOnAPI {
			metricsHandler = m.Handler()
		}
	}
	embedURL, embedKey := cfg.Embedder()
	rcfg := runs.Config{
		TaskQueue: cfg.TaskQueue, Namespace: cfg.TemporalNamespace, Timeout: cfg.TemporalTimeout,
		EagerStart: eager, Deltas: bus, Blobs: blobs, Log: log,
	}
	return api.New(api.Config{
		Metrics:        reg,
		MetricsHandler: metricsHandler,
		TaskQueue:      cfg.TaskQueue,
		Keys:           keys,
		JWTSecret:      []byte(cfg.OpenWebUIJWTSecret),
		JWTMaxLifetime: cfg.OpenWebUIJWTMaxLifetime,
		Headers:        cfg.Headers(),
		Limits: api.Limits{Runs: cfg.MaxRuns, Streams: cfg.MaxStreams, Files: cfg.MaxFiles, FileBytes: cfg.MaxFileStorage, Ingestions: cfg.MaxIngestions,
			Schedules: cfg.MaxSchedules, MinScheduleInterval: cfg.MinScheduleInterval},
		Schedules:             runs.NewTemporalSchedules(c, rcfg),
		ScheduleCatchupWindow: cfg.ScheduleCatchupWindow,
		Admission:             runs.Admission{Concurrency: cfg.AdmissionConcurrency, Queue: cfg.AdmissionQueue, MaxWait: cfg.AdmissionWait},
		MaxBodyBytes:          cfg.MaxBodyBytes,
		MaxFileBytes:          cfg.MaxFileBytes,
		RequestTimeout:        cfg.RequestTimeout,
		ModelTimeout:          cfg.LLMTimeout,
		HistoryLimit:          cfg.HistoryLimit,
		ApprovalTimeout:       cfg.ApprovalTimeout,
		ChatMultitask:         cfg.ChatMultitask,
		Blobs:                 blobs,
		Docs:                  docs,
		DocsEmbedder:          docEmbedder(cfg),
		MCPApproval:           mcpApproval(topts.MCP),
		Memory:                topts.Memory,
		Credentials:           topts.Credentials,
		Forget:                forget,
		Embeddings:            api.Upstream{BaseURL: embedURL, APIKey: embedKey},
		EmbeddingsPolicy: api.EmbeddingsPolicy{
			Models:       cfg.EmbeddingModels(),
			PerPrincipal: cfg.MaxEmbeddings,
			MaxAnswer:    cfg.MaxEmbeddingsAnswer,
		},
		Images:   api.ImagePolicy{AllowHTTP: cfg.ImageURLHTTP, AllowPrivate: cfg.ImageURLPrivate},
		Webhooks: api.WebhookPolicy{Max: webhookCap(cfg.MaxWebhooks), AllowPrivate: cfg.WebhookPrivate},
		Usage:    ledger,

		UsageOperators: cfg.UsageOperatorKeys,
		DefaultModel:   cfg.LLMModel,
		ModelEndpoints: modelEndpoints(cfg),
	}, runs.NewTemporal(c, rcfg), cat, log)
}

// mcpApproval is api.Config.MCPApproval for an MCP configuration.
func mcpApproval(mc *mcp.Config) func(string) bool {
	if mc == nil {
		return nil
	}
	return mc.RequiresApproval
}

// serveAPI serves until ctx ends, then shuts down gracefully: open requests
// get a few seconds, runs go on in Temporal.
func serveAPI(ctx context.Context, s *api.Server, addr string, log *slog.Logger) error {
	errc := make(chan error, 1)
	go func() { errc <- s.Listen(addr) }()
	select {
	case err := <-errc:
		return fmt.Errorf("API on %s: %w", addr, err)
	case <-ctx.Done():
	}
	log.Info("shutting down: runs in flight stay in Temporal")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(sctx); err != nil {
		log.Warn("API shutdown", "error", err)
	}
	return nil
}

// webhookCap is api.WebhookPolicy.Max for LONGHAUL_MAX_WEBHOOKS, whose 0
// is no limit.
func webhookCap(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// modelEndpoints is the model endpoints' set (checked by config.Validate),
// nil when it does not parse.
func modelEndpoints(cfg config.Config) *endpoints.Set {
	set, err := cfg.ModelEndpoints()
	if err != nil {
		return nil
	}
	return set
}
