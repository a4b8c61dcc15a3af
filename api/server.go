// Package api is Longhaul's HTTP layer, on fiber: the server, its routes
// table, authentication, errors in OpenAI's envelope, metrics and traces,
// and the embeddings route, passed on to the model endpoint
// (embeddings.go). Each API is a package of its own, registered here: the
// OpenAI-compatible Chat Completions API that Open WebUI and the OpenAI
// SDKs talk to (api/chatapi), OpenAI's Responses API, whose responses are
// runs too (api/responsesapi), the native runs API for long tasks that
// outlive a request (api/runsapi), the documents and the account routes
// (api/documents, api/account), the schedules of runs
// (api/schedulesapi) and the webhooks (api/webhooksapi). A chat request starts (or attaches to) a
// Temporal workflow and answers with its result, or streams it; a runs
// request starts a run and answers at once, and the run's events are
// followed on a stream of their own, resumable from any event id. Every
// handler reaches runs through internal/runs: runs.Service, which alone
// knows Temporal and follows a run through one feed per run, and
// runs.Gate, the one way the three APIs start or attach to a run
// (chat-turn retakes, the admission queue, each principal's limits, image
// claims), so that they cannot differ in how a run starts or in what they
// refuse; what they share above it (a run read for its owner, input handed
// to it, its audit, the agent a request names, run errors in the API's
// words) is api/runweb, and the streams are written as Server-Sent Events
// by one writer (api/sse). Wire types and pure converters live apart from
// the handlers (internal/wire), the visibility queries in internal/runs;
// errors are translated to OpenAI's envelope in one place (errors.go, with
// runweb.Error), and every route is registered in routes (the schedules
// API's through scheduleRoutes, the webhooks' through webhookRoutes, which
// it calls).
package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/longhaul-dev/longhaul/api/chatapi"
	"github.com/longhaul-dev/longhaul/api/documents"
	"github.com/longhaul-dev/longhaul/api/responsesapi"
	"github.com/longhaul-dev/longhaul/api/runsapi"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/schedulesapi"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/endpoints"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/memory"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/usercreds"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"github.com/longhaul-dev/longhaul/skills"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures the API.
type Config struct {
	// TaskQueue names the runs' task queue in what /readyz tells a
	// caller with a key.
	TaskQueue string
	// Keys are the API and proxy keys; none serves anyone (development),
	// trusting whatever user the headers name.
	Keys []identity.Key
	// JWTSecret is Open WebUI's FORWARD_USER_INFO_HEADER_JWT_SECRET: with
	// it, end users come only from the signed user header.
	JWTSecret []byte
	// JWTMaxLifetime bounds a signed user token's exp - iat; zero is
	// identity.DefaultMaxTokenLifetime.
	JWTMaxLifetime time.Duration
	// Headers names the headers end users and chats are read from; the zero
	// value is Open WebUI's names.
	Headers        identity.Headers
	MaxBodyBytes   int64
	RequestTimeout time.Duration
	ModelTimeout   time.Duration
	// HistoryLimit is the history events after which a run continues as
	// new; zero is the workflow's default.
	HistoryLimit int
	// ApprovalTimeout bounds the wait for a person's approval of a tool
	// call; zero waits as long as it takes.
	ApprovalTimeout time.Duration
	// ChatMultitask is the chats' multitask strategy (see
	// chatapi.Handlers.Multitask).
	ChatMultitask string
	// Blobs is the store of big tool outputs the runs reference and of the
	// event logs of runs that continued as new; nil serves neither.
	Blobs store.Store
	// Limits bound what one principal holds at once.
	Limits Limits
	// Admission bounds the runs this process starts at once, queueing
	// the rest (see runs.Admission); its zero value admits every start at
	// once.
	Admission runs.Admission
	// Forget, when set, is told of every deleted conversation, so what was
	// derived from it (memories) goes too; nil forgets nothing else.
	Forget ConversationForgetter
	// Memory is users' long-term memory (GET and DELETE /v1/memories); nil
	// when LONGHAUL_EMBED_MODEL is unset: the routes then answer 404.
	Memory *memory.Service
	// Credentials keeps users' own MCP OAuth tokens and HTTP-tool secrets
	// (the /v1/connections and /v1/secrets routes, /oauth/callback); nil
	// when LONGHAUL_TOKEN_KEY is unset: the routes then answer 404.
	Credentials *usercreds.Service
	// MCPApproval reports whether an MCP tool (by its engine name) needs a
	// person's approval, as the MCP configuration says; nil means none.
	MCPApproval func(tool string) bool
	// Images says which image URLs requests may send to the model
	// endpoint; its zero value accepts https: and data: URLs of public
	// hosts only.
	Images ImagePolicy
	// Embeddings is where POST /v1/embeddings is passed on (the model
	// endpoint, or LONGHAUL_EMBED_BASE_URL); with no BaseURL the route
	// answers 404.
	Embeddings Upstream
	// EmbeddingsPolicy bounds what POST /v1/embeddings asks of it.
	EmbeddingsPolicy EmbeddingsPolicy
	// Metrics takes the API's series (requests, durations, time to first
	// token, open streams, runs waiting for a person); nil records none.
	Metrics prometheus.Registerer
	// Docs keeps users' files, vector stores and their chunks (/v1/files,
	// /v1/vector_stores, the Responses API's file_search); nil answers
	// those routes 404.
	Docs docstore.Store
	// MaxFileBytes bounds one uploaded file (POST /v1/files); zero is
	// DefaultMaxFileBytes. Only /v1/files may take bodies over
	// MaxBodyBytes, streamed.
	MaxFileBytes int64
	// DocsEmbedder embeds vector store search queries with the model the
	// chunks were embedded with (LONGHAUL_EMBED_MODEL); nil searches by
	// text only.
	DocsEmbedder memory.Embedder
	// MetricsHandler, when set, serves GET /metrics on the API's own
	// listener (longhaul api's default), without a key as /healthz is:
	// Prometheus scrapes with none, and the series carry counts by route,
	// agent, model and tool, no user's data.
	MetricsHandler http.Handler
	// Schedules keeps the schedules of runs (/v1/schedules); nil answers
	// those routes 404.
	Schedules runs.Schedules
	// ScheduleCatchupWindow is a schedule's catch-up window when its
	// request names none; zero is the engine's default.
	ScheduleCatchupWindow time.Duration
	// Webhooks bounds the webhooks principals keep (/v1/webhooks, a
	// run's own webhook), in the blob store's database.
	Webhooks WebhookPolicy
	// Usage is the usage ledger (GET /v1/usage, and the budgets' check
	// before a run starts); nil answers /v1/usage 404 and checks none.
	Usage UsageLedger
	// DefaultModel is the engine's default model (LONGHAUL_LLM_MODEL) and
	// ModelEndpoints resolves model references (LONGHAUL_LLM_ENDPOINTS;
	// nil compares them as written): a model a request names (a fork's)
	// must be one its user may use (runweb.Models).
	DefaultModel   string
	ModelEndpoints *endpoints.Set
	// UsageOperators are the API keys whose requests read every
	// principal's usage (LONGHAUL_USAGE_OPERATOR_KEYS).
	UsageOperators []string
}

// ImagePolicy says which image URLs requests may send to the model
// endpoint (see runweb.ImagePolicy).
type ImagePolicy = runweb.ImagePolicy

// Server serves the HTTP API.
type Server struct {
	cfg      Config
	identity identity.Resolver
	embeds   streamCounter
	runs     runs.Service
	// runsWeb reads runs for their owner and hands them input, as every
	// API that runs agents does (runweb.Runs).
	runsWeb *runweb.Runs
	// agents finds the agent a request names, for its caller.
	agents  *runweb.Agents
	catalog *skills.Catalog
	metrics *apiMetrics
	streams *sse.Streams
	// gate bounds the runs this process starts and what each principal
	// holds (runs.Gate).
	gate    *runs.Gate
	log     *slog.Logger
	app     *fiber.App
	started time.Time
	// stopping ends when Shutdown begins, and with it every event stream:
	// a stream would otherwise hold the shutdown until its deadline.
	stopping context.Context
	stop     context.CancelFunc
}

// New builds the server and its routes, on the runs of svc.
func New(cfg Config, svc runs.Service, catalog *skills.Catalog, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 10 << 20
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Minute
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = DefaultMaxFileBytes
	}
	if cfg.Headers == (identity.Headers{}) {
		cfg.Headers = identity.OpenWebUIHeaders
	}
	s := &Server{cfg: cfg, identity: identity.Resolver{Keys: cfg.Keys, JWTSecret: cfg.JWTSecret, MaxTokenLifetime: cfg.JWTMaxLifetime, Headers: cfg.Headers}, runs: svc, catalog: catalog, log: log, started: time.Now()}
	s.stopping, s.stop = context.WithCancel(context.Background())
	s.runsWeb = &runweb.Runs{Service: svc, Log: log}
	s.agents = &runweb.Agents{Catalog: catalog}
	if cfg.Metrics != nil {
		s.metrics = s.newAPIMetrics(cfg.Metrics)
	}
	s.streams = &sse.Streams{Log: log, Opened: s.metrics.streamOpened, Stopping: s.stopping}
	s.gate = runs.NewGate(svc, runs.GateConfig{
		Limits:    runs.Limits{Runs: cfg.Limits.Runs, Streams: cfg.Limits.Streams},
		Admission: cfg.Admission, Blobs: cfg.Blobs, Log: log, Budget: s.budgetCheck,
		// The gate, the one author of runs, resolves every request's agent
		// and puts the operator's settings into every run's input.
		Agents:   s.agents,
		Settings: runs.Settings{ModelTimeout: cfg.ModelTimeout, HistoryLimit: cfg.HistoryLimit, ApprovalTimeout: cfg.ApprovalTimeout},
	})
	if s.metrics != nil {
		s.gate.Observe(s.metrics.admissionWait, s.metrics.admissionDepth)
	}
	s.app = fiber.New(fiber.Config{
		AppName:   "longhaul",
		BodyLimit: int(cfg.MaxBodyBytes),
		// Bodies are streams, read by bodyLimit (see there why both).
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		DisableStartupMessage:        true,
		ErrorHandler:                 s.handleError,
		ReadTimeout:                  time.Minute,
		// Headers up to 16 KiB (fasthttp's default is 4 KiB): a proxy's
		// signed user, its user and chat headers and cookies fit.
		ReadBufferSize: 16 << 10,
		IdleTimeout:    2 * time.Minute,
	})
	s.routes()
	return s
}

// DefaultMaxFileBytes is Config.MaxFileBytes when none is set: 50 MiB.
const DefaultMaxFileBytes = 50 << 20

// App is the fiber application, for tests (app.Test) and for serving.
func (s *Server) App() *fiber.App { return s.app }

// Listen serves on addr until Shutdown.
func (s *Server) Listen(addr string) error { return s.app.Listen(addr) }

// Shutdown stops accepting requests, ends the event streams (a runs API
// client resumes from its Last-Event-ID on another server or this one
// restarted) and waits for the other open requests up to ctx's deadline.
// Runs go on in Temporal.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stop()
	return s.app.ShutdownWithContext(ctx)
}

func (s *Server) routes() {
	s.app.Use(s.bodyLimit)
	s.app.Use(s.observe)
	// A handler that panics fails its request (500), not the process.
	s.app.Use(recover.New(recover.Config{EnableStackTrace: true, StackTraceHandler: s.panicked}))
	s.app.Get("/healthz", s.healthz)
	s.app.Get("/readyz", s.readyz)
	if s.cfg.MetricsHandler != nil {
		s.app.Get("/metrics", adaptor.HTTPHandler(s.cfg.MetricsHandler))
	}
	acct, docs, runsAPI, resp := s.account(), s.documents(), s.runsAPI(), s.responsesAPI()
	s.app.Get(usercreds.CallbackPath, acct.OAuthCallback)
	s.app.Get(usercreds.ConnectPath+":id", acct.ConnectPage)
	s.app.Post(usercreds.ConnectPath+":id", acct.ConfirmConnect)
	v1 := s.app.Group("/v1", s.auth)
	s.usageRoutes(v1)
	v1.Get("/models", s.listModels)
	v1.Post("/chat/completions", s.chat().Completions)
	v1.Post("/embeddings", s.embeddings)
	v1.Post("/runs", runsAPI.CreateRun)
	v1.Get("/runs", runsAPI.ListRuns)
	v1.Get("/runs/:id", runsAPI.GetRun)
	v1.Get("/runs/:id/events", runsAPI.Events)
	v1.Post("/runs/:id/cancel", runsAPI.Cancel)
	v1.Post("/runs/:id/input", runsAPI.Input)
	v1.Post("/runs/:id/fork", runsAPI.Fork)
	v1.Get("/runs/:id/outputs/:ref", runsAPI.Output)
	v1.Get("/runs/:id/audit", runsAPI.Audit)
	s.scheduleRoutes(v1)
	s.webhookRoutes(v1)
	s.mcpRoutes()
	s.a2aRoutes()
	v1.Post("/responses", resp.Create)
	v1.Get("/responses/:id", resp.Get)
	v1.Post("/responses/:id/cancel", resp.Cancel)
	v1.Delete("/responses/:id", resp.Delete)
	v1.Get("/responses/:id/input_items", resp.InputItems)
	v1.Get("/conversations", acct.ListConversations)
	v1.Get("/conversations/:id", acct.GetConversation)
	v1.Delete("/conversations/:id", acct.DeleteConversation)
	v1.Get("/memories", acct.ListMemories)
	v1.Delete("/memories/:id", acct.DeleteMemory)
	v1.Get("/connections", acct.ListConnections)
	v1.Get("/connections/:server/authorize", acct.AuthorizeConnection)
	v1.Delete("/connections/:server", acct.DeleteConnection)
	v1.Get("/secrets", acct.ListSecrets)
	v1.Put("/secrets/:name", acct.PutSecret)
	v1.Delete("/secrets/:name", acct.DeleteSecret)
	v1.Get("/backlog", acct.ListBacklog)
	// The documents' routes answer 404 on a server without a document store.
	v1.Post("/files", docs.Require, docs.UploadFile)
	v1.Get("/files", docs.Require, docs.ListFiles)
	v1.Get("/files/:id", docs.Require, docs.GetFile)
	v1.Get("/files/:id/content", docs.Require, docs.FileContent)
	v1.Delete("/files/:id", docs.Require, docs.DeleteFile)
	v1.Post("/vector_stores", docs.Require, docs.CreateVectorStore)
	v1.Get("/vector_stores", docs.Require, docs.ListVectorStores)
	v1.Get("/vector_stores/:id", docs.Require, docs.GetVectorStore)
	v1.Post("/vector_stores/:id", docs.Require, docs.UpdateVectorStore)
	v1.Delete("/vector_stores/:id", docs.Require, docs.DeleteVectorStore)
	v1.Post("/vector_stores/:id/search", docs.Require, docs.SearchVectorStore)
	v1.Post("/vector_stores/:id/files", docs.Require, docs.AttachVectorStoreFile)
	v1.Get("/vector_stores/:id/files", docs.Require, docs.ListVectorStoreFiles)
	v1.Get("/vector_stores/:id/files/:file_id", docs.Require, docs.GetVectorStoreFile)
	v1.Post("/vector_stores/:id/files/:file_id", docs.Require, docs.UpdateVectorStoreFile)
	v1.Delete("/vector_stores/:id/files/:file_id", docs.Require, docs.DetachVectorStoreFile)
	v1.Get("/vector_stores/:id/files/:file_id/content", docs.Require, docs.VectorStoreFileContent)
	v1.Post("/vector_stores/:id/file_batches", docs.Require, docs.CreateFileBatch)
	v1.Get("/vector_stores/:id/file_batches/:batch_id", docs.Require, docs.GetFileBatch)
	v1.Get("/vector_stores/:id/file_batches/:batch_id/files", docs.Require, docs.ListVectorStoreFiles)
	v1.Post("/vector_stores/:id/file_batches/:batch_id/cancel", docs.Require, docs.CancelFileBatch)
	v1.Delete("/me", acct.DeleteMe)
	s.app.Use(func(c *fiber.Ctx) error {
		c.Locals(unmatchedKey{}, true)
		return errNotFound("no route for " + c.Method() + " " + c.Path())
	})
}

// scheduleRoutes registers the schedules API's routes under v1 (routes'
// part); they answer 404 on a server without schedules.
func (s *Server) scheduleRoutes(v1 fiber.Router) {
	sch := s.schedulesAPI()
	v1.Post("/schedules", sch.Require, sch.Create)
	v1.Get("/schedules", sch.Require, sch.List)
	v1.Get("/schedules/:id", sch.Require, sch.Get)
	v1.Patch("/schedules/:id", sch.Require, sch.Update)
	v1.Delete("/schedules/:id", sch.Require, sch.Delete)
	v1.Post("/schedules/:id/pause", sch.Require, sch.Pause)
	v1.Post("/schedules/:id/resume", sch.Require, sch.Resume)
	v1.Post("/schedules/:id/trigger", sch.Require, sch.Trigger)
}

// chat is the Chat Completions handlers, over the server's runs and
// document store.
func (s *Server) chat() *chatapi.Handlers {
	return &chatapi.Handlers{
		Runs: s.runsWeb, Gate: s.gate, Agents: s.agents, Streams: s.streams, Docs: s.documents(),
		Headers: s.cfg.Headers, Images: s.cfg.Images, MCPApproval: s.cfg.MCPApproval,
		RequestTimeout: s.cfg.RequestTimeout, FirstText: s.metrics.firstText,
		Multitask: s.cfg.ChatMultitask,
	}
}

// Headers Longhaul reads and writes.
const (
	// HeaderRunID names the run that answers (see web.HeaderRunID).
	HeaderRunID = web.HeaderRunID
	// HeaderAudit asks for a chat's audit trail (see chatapi.HeaderAudit).
	HeaderAudit = chatapi.HeaderAudit
)

// runsAPI is the runs API's handlers, over the server's runs.
func (s *Server) runsAPI() *runsapi.Handlers {
	return &runsapi.Handlers{
		Runs: s.runsWeb, Gate: s.gate, Streams: s.streams,
		Models: runweb.Models{Catalog: s.catalog, Endpoints: s.cfg.ModelEndpoints, Default: s.cfg.DefaultModel},
		Blobs:  s.cfg.Blobs, Images: s.cfg.Images, Webhooks: s.webhooks(),
	}
}

// schedulesAPI is the schedules API's handlers, over the server's
// schedules.
func (s *Server) schedulesAPI() *schedulesapi.Handlers {
	return &schedulesapi.Handlers{
		Schedules: s.cfg.Schedules, Images: s.cfg.Images, Log: s.log, Gate: s.gate,
		Limits: schedulesapi.Limits{
			Schedules: s.cfg.Limits.Schedules, MinInterval: s.cfg.Limits.MinScheduleInterval,
			CatchupWindow: s.cfg.ScheduleCatchupWindow,
		},
	}
}

// responsesAPI is the Responses API's handlers, over the server's runs.
func (s *Server) responsesAPI() *responsesapi.Handlers {
	return &responsesapi.Handlers{
		Runs: s.runsWeb, Gate: s.gate, Agents: s.agents, Streams: s.streams,
		Blobs: s.cfg.Blobs, VectorStores: s.documents(), Ranking: documents.CheckRanking, Images: s.cfg.Images, Webhooks: s.webhooks(),
		RequestTimeout: s.cfg.RequestTimeout,
	}
}

// panicked logs a handler's panic with its stack and marks the request, so
// that handleError answers it as an internal error without logging it again.
func (s *Server) panicked(c *fiber.Ctx, v any) {
	s.log.ErrorContext(c.UserContext(), "handler panicked", "method", c.Method(), "path", c.Path(), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	c.Locals(panickedKey{}, true)
}

type panickedKey struct{}

// auth resolves the request's principal from its credential (see
// internal/identity) and keeps it for the handlers.
func (s *Server) auth(c *fiber.Ctx) error {
	p, err := s.identity.Resolve(c.Get(fiber.HeaderAuthorization), func(name string) string { return c.Get(name) })
	if err != nil {
		return errUnauthorized(err.Error())
	}
	if p.NoUser && !keyOnlyRoute(c) {
		return errUnauthorized(s.noUser())
	}
	web.SetPrincipal(c, p)
	return c.Next()
}

// noUser says why a proxy key's request that names no user is refused,
// which headers would name one here, and what it may still do.
func (s *Server) noUser() string {
	h := s.cfg.Headers.UserJWT + " (the signed user; LONGHAUL_OPENWEBUI_JWT_SECRET is set)"
	if len(s.cfg.JWTSecret) == 0 {
		h = s.cfg.Headers.UserID + " or " + s.cfg.Headers.UserEmail
	}
	return identity.ErrNoUser.Error() + ". The user is read from " + h + "; without one only " + strings.Join(keyOnlyRoutes, " and ") + " answer"
}

// keyOnlyRoutes are the routes a proxy key's request that names no user
// may use (see identity.Principal.NoUser): they read or write no user's data. Open WebUI
// v0.10.2 lists a connection's models without a user when it fills its
// model cache at start-up (main.py:355-375 calls utils/models.py's
// get_all_models with user None; routers/openai.py:96-104 and 173-174 add
// user headers only "if ENABLE_FORWARD_USER_INFO_HEADERS and user"), and
// asks for embeddings without one when no user is at hand
// (retrieval/utils.py:845-863). Every other route is refused, a new one
// too: the list is of what is allowed.
var keyOnlyRoutes = []string{"GET /v1/models", "POST /v1/embeddings"}

// keyOnlyRoute reports whether c's request is of keyOnlyRoutes.
func keyOnlyRoute(c *fiber.Ctx) bool {
	route := c.Method() + " " + strings.TrimSuffix(c.Path(), "/")
	return slices.Contains(keyOnlyRoutes, route)
}

// principal is who the request acts for; auth put it there.
var principal = web.Principal

func (s *Server) healthz(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"status": "ok", "uptime_seconds": int(time.Since(s.started).Seconds())})
}

// readyz asks Temporal whether it answers and whether a worker polls the
// task queue. Anyone learns whether the API is ready and which part is not;
// what went wrong (Temporal's errors, addresses, the task queue) only a
// caller with a valid key does.
func (s *Server) readyz(c *fiber.Ctx) error {
	detail := s.keyed(c)
	ctx, cancel := context.WithTimeout(c.UserContext(), 3*time.Second)
	defer cancel()
	body := fiber.Map{"status": "unavailable"}
	unready := func(why string) error {
		s.log.Debug("not ready", "reason", why)
		if detail {
			body["error"] = why
			body["task_queue"] = s.cfg.TaskQueue
		}
		return c.Status(fiber.StatusServiceUnavailable).JSON(body)
	}
	if err := s.runs.Health(ctx); err != nil {
		body["temporal"] = "unavailable"
		return unready("temporal: " + err.Error())
	}
	body["temporal"] = "ok"
	recent, err := s.runs.Pollers(ctx)
	if err != nil {
		body["workers"] = "unknown"
		return unready("workers: " + err.Error())
	}
	if recent == 0 {
		body["workers"] = 0
		return unready("no worker polls task queue " + s.cfg.TaskQueue)
	}
	body = fiber.Map{"status": "ready", "temporal": "ok", "workers": recent}
	if detail {
		body["task_queue"] = s.cfg.TaskQueue
	}
	return c.JSON(body)
}

// keyed reports whether the request carries a valid key (with no keys
// configured, none does).
func (s *Server) keyed(c *fiber.Ctx) bool {
	if s.identity.Open() {
		return false
	}
	p, err := s.identity.Resolve(c.Get(fiber.HeaderAuthorization), func(name string) string { return c.Get(name) })
	return err == nil && p.Key != ""
}

func (s *Server) listModels(c *fiber.Ctx) error {
	list := wire.ModelList{Object: "list", Data: []wire.ModelInfo{}}
	// Only the agents whose allow: admits the principal (see runweb.Agents.AgentFor).
	for _, a := range s.catalog.AgentsFor(principal(c).User) {
		list.Data = append(list.Data, wire.ModelInfo{
			ID: a.ID, Object: "model", Created: s.started.Unix(), OwnedBy: "longhaul", Description: a.Description,
		})
	}
	return c.JSON(list)
}
