// Package config holds Longhaul's settings. They are read once from the
// environment at start-up, validated, and passed down as one typed struct, so
// no other package reads the environment for its own configuration.
package config

import (
	"crypto/tls"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
	"github.com/longhaul-dev/longhaul/internal/endpoints"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/redact"
	"github.com/longhaul-dev/longhaul/internal/tlsfiles"
)

// Prefix is the prefix of every Longhaul environment variable.
const Prefix = "LONGHAUL"

// UIOff is the value of LONGHAUL_EMBEDDED_UI_ADDR that disables the Temporal Web UI.
const UIOff = "off"

// Config is every Longhaul setting. Field tags name the environment variable
// in full, its default and a one-line description that `longhaul --help`
// prints.
//
// The tags carry the LONGHAUL_ prefix themselves and Load passes envconfig
// no prefix, because envconfig falls back to a tag's bare name: its
// Process (kelseyhightower/envconfig v1.4.0, envconfig.go lines 99-100,
// 121-126 and 193-196) reads PREFIX_TAG and, when that is unset, TAG
// itself. With a prefix given, a TEMPORAL_ADDRESS exported for the
// Temporal CLI, or an HTTP_ADDR or DATABASE_URL of another program, would
// silently become Longhaul's setting. With the whole name as the tag, the
// name read and its fallback are one and the same.
type Config struct {
	HTTPAddr string `envconfig:"LONGHAUL_HTTP_ADDR" default:"127.0.0.1:8080" desc:"API listen address"`
	DataDir  string `envconfig:"LONGHAUL_DATA_DIR" default:"./.longhaul" desc:"embedded Temporal database (temporal.db), its log (temporal.log), local stores and logs"`

	TemporalAddress       string `envconfig:"LONGHAUL_TEMPORAL_ADDRESS" desc:"a real Temporal frontend host:port; empty = embedded (dev); required for worker and api; when set, dev embeds nothing"`
	EmbeddedTemporalAddr  string `envconfig:"LONGHAUL_EMBEDDED_TEMPORAL_ADDR" default:"127.0.0.1:7233" desc:"where dev and server serve the embedded Temporal frontend (gRPC)"`
	EmbeddedUIAddr        string `envconfig:"LONGHAUL_EMBEDDED_UI_ADDR" default:"127.0.0.1:8233" desc:"where dev and server serve the Temporal Web UI; off disables it"`
	EmbeddedMetricsAddr   string `envconfig:"LONGHAUL_EMBEDDED_METRICS_ADDR" desc:"where dev and server serve the embedded Temporal server's own Prometheus metrics at /metrics (its persistence requests by operation, task latencies: what make bench counts writes per turn with); empty = none"`
	EmbeddedDatabaseURL   string `envconfig:"LONGHAUL_EMBEDDED_DATABASE_URL" desc:"postgres://user:password@host:port/temporal: dev and server keep the embedded Temporal's data in this PostgreSQL database (and its visibility in temporal_visibility beside it) instead of temporal.db in the data directory; both are created when missing (the user needs CREATEDB) and their schemas set up on start; past what one SQLite file takes (see docs/performance.md); empty = temporal.db"`
	EmbeddedUIWrite       bool   `envconfig:"LONGHAUL_EMBEDDED_UI_WRITE" default:"false" desc:"let the embedded Temporal Web UI terminate, cancel, signal, reset and start runs; false = read-only (it has no login): Longhaul's own allow-list passes reads and workflow queries only, however the path is encoded, and answers anything else 403 (the UI's own read-only switch lets crafted paths through)"`
	TemporalNamespace     string `envconfig:"LONGHAUL_TEMPORAL_NAMESPACE" default:"default" desc:"Temporal namespace"`
	TaskQueue             string `envconfig:"LONGHAUL_TASK_QUEUE" default:"longhaul" desc:"Temporal task queue of the workers"`
	TemporalTLS           bool   `envconfig:"LONGHAUL_TEMPORAL_TLS" default:"false" desc:"connect to LONGHAUL_TEMPORAL_ADDRESS over TLS (implied by TEMPORAL_TLS_CA, TEMPORAL_TLS_CERT, TEMPORAL_TLS_SERVER_NAME and TEMPORAL_API_KEY)"`
	TemporalTLSCA         string `envconfig:"LONGHAUL_TEMPORAL_TLS_CA" desc:"PEM file of the CA that signed the Temporal frontend's certificate; empty = the system's roots"`
	TemporalTLSCert       string `envconfig:"LONGHAUL_TEMPORAL_TLS_CERT" desc:"PEM client certificate for Temporal's mutual TLS (with TEMPORAL_TLS_KEY), as Temporal Cloud's mTLS namespaces want"`
	TemporalTLSKey        string `envconfig:"LONGHAUL_TEMPORAL_TLS_KEY" desc:"PEM key of TEMPORAL_TLS_CERT"`
	TemporalTLSServerName string `envconfig:"LONGHAUL_TEMPORAL_TLS_SERVER_NAME" desc:"the name the frontend's certificate must carry, when not the host of TEMPORAL_ADDRESS; empty = the host dialled"`
	TemporalAPIKey        string `envconfig:"LONGHAUL_TEMPORAL_API_KEY" desc:"API key for the Temporal frontend (Temporal Cloud's API-key auth), sent as a bearer token over TLS (never logged)"`

	MetricsAddr string `envconfig:"LONGHAUL_METRICS_ADDR" desc:"where Prometheus scrapes /metrics (see docs/deploy.md, Metrics): empty = dev and worker 127.0.0.1:9464 (a free port, printed at start, when that is taken), api GET /metrics on its own listener, server none; an address set here is used by dev, worker and api alike, and when taken stops start-up (127.0.0.1:0 takes a free port, printed at start); off serves none"`

	PprofAddr string `envconfig:"LONGHAUL_PPROF_ADDR" desc:"where Go's profiles (net/http/pprof, /debug/pprof/: profile, block, mutex, heap, …) are served, unauthenticated, with block and mutex profiling on, by every command but setup: empty = off; keep it a loopback address (127.0.0.1:6060): another one logs a warning; make bench sets it with LONGHAUL_BENCH_PROFILE"`

	WorkerActivitySlots int `envconfig:"LONGHAUL_WORKER_ACTIVITY_SLOTS" default:"1000" desc:"model, tool and store calls one worker runs at once (most of them wait on the network, so many fit one core)"`
	WorkerWorkflowSlots int `envconfig:"LONGHAUL_WORKER_WORKFLOW_SLOTS" default:"200" desc:"workflow tasks one worker runs at once"`
	WorkerPollers       int `envconfig:"LONGHAUL_WORKER_POLLERS" default:"8" desc:"pollers one worker keeps on each of its activity and workflow task queues (at most the slots)"`
	WorkerStickyCache   int `envconfig:"LONGHAUL_WORKER_STICKY_CACHE" default:"0" desc:"runs a worker process keeps cached between their tasks; 0 = the SDK's 10000; lower it on a small host with long runs"`

	WorkerDeployment string `envconfig:"LONGHAUL_WORKER_DEPLOYMENT" default:"longhaul" desc:"Temporal worker deployment the workers join, each build a version of it (Worker Versioning, Temporal server 1.29.1 or later; see docs/deploy.md); off = unversioned workers; dev's worker is always unversioned"`
	WorkerBuildID    string `envconfig:"LONGHAUL_WORKER_BUILD_ID" desc:"this build's id in the worker deployment; empty = what longhaul version prints; set it (image tag, commit) when builds carry no version"`
	WorkerVersioning string `envconfig:"LONGHAUL_WORKER_VERSIONING" default:"auto-upgrade" desc:"auto-upgrade: a run's next task goes to the deployment's current version, so runs outlive the workers that started them; pinned: a run stays on the version it started on, whose workers must outlive it"`
	WorkerPromote    bool   `envconfig:"LONGHAUL_WORKER_PROMOTE" default:"true" desc:"a worker makes its version the deployment's current version once it polls; false = an operator does (temporal worker deployment set-current-version) or the Temporal Worker Controller"`

	NATSURL           string `envconfig:"LONGHAUL_NATS_URL" desc:"a NATS server or cluster (comma-separated nats:// or tls:// URLs) for live token streams; empty = embedded (dev); required for worker and api; when set, dev embeds none"`
	EmbeddedNATSAddr  string `envconfig:"LONGHAUL_EMBEDDED_NATS_ADDR" desc:"where the embedded NATS listens: empty = dev none (in-process), server 127.0.0.1:4223"`
	NATSSubjectPrefix string `envconfig:"LONGHAUL_NATS_SUBJECT_PREFIX" default:"longhaul" desc:"first token of Longhaul's NATS subjects (the namespace follows), so deployments can share a cluster"`
	NATSCreds         string `envconfig:"LONGHAUL_NATS_CREDS" desc:"NATS credentials file (JWT and seed) for a secured cluster"`
	NATSTLSCA         string `envconfig:"LONGHAUL_NATS_TLS_CA" desc:"PEM file of the CA that signed the NATS servers' certificates"`
	NATSTLSCert       string `envconfig:"LONGHAUL_NATS_TLS_CERT" desc:"PEM client certificate for NATS (with NATS_TLS_KEY), for mutual TLS"`
	NATSTLSKey        string `envconfig:"LONGHAUL_NATS_TLS_KEY" desc:"PEM key of NATS_TLS_CERT"`

	LLMBaseURL string `envconfig:"LONGHAUL_LLM_BASE_URL" default:"http://localhost:11434/v1" desc:"any OpenAI-compatible endpoint (Ollama, LiteLLM, vLLM, OpenAI)"`
	LLMAPIKey  string `envconfig:"LONGHAUL_LLM_API_KEY" desc:"bearer key for the model endpoint (never logged)"`
	LLMModel   string `envconfig:"LONGHAUL_LLM_MODEL" default:"llama3.1:8b" desc:"default model, or a fallback list model,model,… whose next model answers when the one before fails (429, 5xx, timeouts, a refused connection, context_length_exceeded; see README, Model fallbacks); agents and skills may name their own"`
	// LLMEndpoints names more model endpoints beside LLMBaseURL, and
	// LLMKeys their keys (see internal/endpoints).
	LLMEndpoints string        `envconfig:"LONGHAUL_LLM_ENDPOINTS" desc:"more OpenAI-compatible endpoints beside LLM_BASE_URL, name=url,… (e.g. remote=https://openrouter.ai/api/v1); a model reference name:model uses one (see docs/agents.md, A model for each role)"`
	LLMKeys      string        `envconfig:"LONGHAUL_LLM_KEYS" desc:"bearer keys of LLM_ENDPOINTS, name=key,… (never logged); a key for a name LLM_ENDPOINTS does not list stops start-up"`
	LLMContext   string        `envconfig:"LONGHAUL_LLM_CONTEXT" desc:"context windows in tokens by model reference, model=tokens,… (e.g. llama3.1:8b=16384,remote:gpt-4o=128000); they stand over an agent's context: and what the endpoint reports (Ollama /api/ps and /api/show, vLLM max_model_len); a model with neither is assumed to have 4096, Ollama's default (see docs/agents.md, Context windows)"`
	LLMTimeout   time.Duration `envconfig:"LONGHAUL_LLM_TIMEOUT" default:"5m" desc:"time limit of one model call (one attempt)"`
	// ModelIdleTimeout gives up on a model stream that went silent.
	ModelIdleTimeout time.Duration `envconfig:"LONGHAUL_MODEL_IDLE_TIMEOUT" default:"2m" desc:"how long a model call waits for the next chunk of its stream, the first included, before it asks the endpoint whether it still answers (GET <base>/models, at most 10 s): if it does (Ollama loading a model, or writing a tool call, sends nothing meanwhile) the call waits on up to MODEL_SILENCE_MAX, asking again every MODEL_IDLE_TIMEOUT; if not, the attempt fails and is retried; 0 = as long as LLM_TIMEOUT"`
	// ModelSilenceMax bounds a silence the endpoint explains by answering.
	ModelSilenceMax time.Duration `envconfig:"LONGHAUL_MODEL_SILENCE_MAX" default:"10m" desc:"the longest silence of a model stream waited through while its endpoint still answers (a model loading, a long tool call being written); LLM_TIMEOUT bounds the call all the same; 0 = never past MODEL_IDLE_TIMEOUT, without asking"`
	// ModelBreakerFailures and ModelBreakerCooldown are each worker's
	// breaker of model endpoints that keep failing (activities/breaker.go).
	ModelBreakerFailures int           `envconfig:"LONGHAUL_MODEL_BREAKER_FAILURES" default:"3" desc:"consecutive failed calls (429, 5xx, timeouts, refused connections) after which a worker skips a model endpoint for MODEL_BREAKER_COOLDOWN: a call with a fallback model goes to it at once; 0 = never skip"`
	ModelBreakerCooldown time.Duration `envconfig:"LONGHAUL_MODEL_BREAKER_COOLDOWN" default:"30s" desc:"how long a worker skips a model endpoint that failed MODEL_BREAKER_FAILURES times in a row; the first call after it tries the endpoint again"`
	MaxModelOutput       int           `envconfig:"LONGHAUL_MAX_MODEL_OUTPUT_BYTES" default:"1048576" desc:"largest answer one model call may give (text and tool-call arguments together, at most 1.5 MiB); past it the run fails with an error, not retried"`

	SkillsDir string   `envconfig:"LONGHAUL_SKILLS_DIR" desc:"extra agent and skill files, loaded over the built-ins"`
	APIKeys   []string `envconfig:"LONGHAUL_API_KEYS" desc:"comma-separated bearer keys for /v1, each name:key or name:key:role=<role> (or a bare key, named by a short hash); each is its own principal, the role what allow: rules judge it by (see docs/security.md, Who may use what); empty with no PROXY_KEYS = no auth (dev only; warned at start)"`
	ProxyKeys []string `envconfig:"LONGHAUL_PROXY_KEYS" desc:"comma-separated name:key bearer keys that may speak for end users (Open WebUI's connection): only their requests' user headers are read, and the user is <name>/<user id>"`
	// OpenWebUIJWTSecret is Open WebUI's FORWARD_USER_INFO_HEADER_JWT_SECRET.
	OpenWebUIJWTSecret string `envconfig:"LONGHAUL_OPENWEBUI_JWT_SECRET" desc:"Open WebUI's FORWARD_USER_INFO_HEADER_JWT_SECRET, at least 32 bytes (openssl rand -hex 32): end users come only from its signed X-OpenWebUI-User-Jwt header (never logged)"`
	// OpenWebUIJWTMaxLifetime bounds a signed user token's exp - iat.
	OpenWebUIJWTMaxLifetime time.Duration `envconfig:"LONGHAUL_OPENWEBUI_JWT_MAX_LIFETIME" default:"1h" desc:"the longest lifetime (exp - iat) of a signed user token that is accepted (a token without iat is refused); Open WebUI signs for FORWARD_USER_INFO_HEADER_JWT_EXPIRES_SECONDS, 300 s by default"`
	UserIDHeader            string        `envconfig:"LONGHAUL_USER_ID_HEADER" default:"X-OpenWebUI-User-Id" desc:"header naming the end user's id (Open WebUI's FORWARD_USER_INFO_HEADER_USER_ID), read from a proxy key's requests"`
	UserEmailHeader         string        `envconfig:"LONGHAUL_USER_EMAIL_HEADER" default:"X-OpenWebUI-User-Email" desc:"header naming the end user's e-mail"`
	UserNameHeader          string        `envconfig:"LONGHAUL_USER_NAME_HEADER" default:"X-OpenWebUI-User-Name" desc:"header naming the end user's name"`
	UserRoleHeader          string        `envconfig:"LONGHAUL_USER_ROLE_HEADER" default:"X-OpenWebUI-User-Role" desc:"header naming the end user's role"`
	UserJWTHeader           string        `envconfig:"LONGHAUL_USER_JWT_HEADER" default:"X-OpenWebUI-User-Jwt" desc:"header carrying Open WebUI's signed user (FORWARD_USER_INFO_HEADER_JWT)"`
	ChatIDHeader            string        `envconfig:"LONGHAUL_CHAT_ID_HEADER" default:"X-OpenWebUI-Chat-Id" desc:"header naming the chat (Open WebUI's FORWARD_SESSION_INFO_HEADER_CHAT_ID)"`
	MessageIDHeader         string        `envconfig:"LONGHAUL_MESSAGE_ID_HEADER" default:"X-OpenWebUI-Message-Id" desc:"header naming the message being answered (FORWARD_SESSION_INFO_HEADER_MESSAGE_ID)"`
	// UserGroupsHeader names the header of the user's groups (allow: groups).
	UserGroupsHeader string `envconfig:"LONGHAUL_USER_GROUPS_HEADER" desc:"header carrying the end user's groups, comma-separated, for allow: groups; read only from proxy-key requests (or, with no keys and no signed header, from anyone; see docs/security.md); empty = no groups"`
	DatabaseURL      string `envconfig:"LONGHAUL_DATABASE_URL" desc:"sqlite://PATH or postgres://… (postgres for scale), shared by workers and API: the claim-check store of big tool outputs, long conversations and the archived events of continued runs, the conversation store of chat turns, long-term memory (pgvector when the server has it) and documents; empty = sqlite://<data dir>/longhaul.db"`

	EmbedModel      string  `envconfig:"LONGHAUL_EMBED_MODEL" desc:"embedding model of long-term memory and documents (e.g. nomic-embed-text on Ollama), through the model endpoint's OpenAI-compatible /v1/embeddings; empty = memory off, which start-up says once (agents' memory: and remember: do nothing, the memory tools are offered to no agent, /v1/memories answers 404) and documents are searched by full text only"`
	EmbedBaseURL    string  `envconfig:"LONGHAUL_EMBED_BASE_URL" desc:"an OpenAI-compatible endpoint (ending in /v1) for embeddings when it is not LLM_BASE_URL; empty = LLM_BASE_URL"`
	EmbedAPIKey     string  `envconfig:"LONGHAUL_EMBED_API_KEY" desc:"bearer key of EMBED_BASE_URL (never logged); empty and EMBED_BASE_URL empty = LLM_API_KEY"`
	MemoryK         int     `envconfig:"LONGHAUL_MEMORY_K" default:"5" desc:"most memories recalled into a turn (memory: recall) or returned by a search (tool, plan step, GET /v1/memories?q=); 1 to 50"`
	MemoryThreshold float64 `envconfig:"LONGHAUL_MEMORY_THRESHOLD" default:"0.6" desc:"cosine similarity (-1 to 1) a memory needs to be recalled into a turn; searches return the closest whatever their score, with it"`
	SearchURL       string  `envconfig:"LONGHAUL_SEARCH_URL" desc:"SearXNG-compatible search endpoint for web_search (format=json enabled in its search.formats); empty = web_search is offered to no agent, and the worker logs which agents run without it"`
	MCPConfig       string  `envconfig:"LONGHAUL_MCP_CONFIG" desc:"JSON file of MCP servers in the usual {\"mcpServers\": {...}} shape (see docs/tools.md); empty = none"`
	// TokenKey seals users' OAuth tokens and HTTP-tool secrets at rest.
	TokenKey        string        `envconfig:"LONGHAUL_TOKEN_KEY" desc:"32 bytes as 64 hex digits (openssl rand -hex 32) sealing users' MCP OAuth tokens and HTTP-tool secrets, and webhook secrets and URLs, in the store with AES-256-GCM; the same on every API and worker; a change-me… placeholder or a malformed key stops start-up; empty = users' own credentials are off: auth: oauth servers and ${user.secret:NAME} (see docs/tools.md; never logged)"`
	PublicURL       string        `envconfig:"LONGHAUL_PUBLIC_URL" desc:"the API's URL as users' browsers reach it, e.g. https://longhaul.example.com; the OAuth redirect URI is <it>/oauth/callback; required when an MCP server has auth: oauth"`
	FetchPorts      []int         `envconfig:"LONGHAUL_FETCH_PORTS" default:"80,443" desc:"the only ports web_fetch connects to"`
	MaxToolChars    int           `envconfig:"LONGHAUL_MAX_TOOL_CHARS" default:"16000" desc:"characters of a tool result the model reads; longer results are stored whole and referenced"`
	PlanParallel    int           `envconfig:"LONGHAUL_PLAN_PARALLEL" default:"4" desc:"plan steps of one agentic run that run at once (each a child workflow) when its plan says which steps need which (depends_on); an agent's parallel: overrides it"`
	RestoreChars    int           `envconfig:"LONGHAUL_RESTORE_CHARS" default:"32000" desc:"characters of earlier chat turns' tool results given back to the model on a later turn (conversation restore); the newest restored turn's are kept whole, older ones are cut, oldest first, with a note saying so and naming the stored whole; 0 = the default"`
	HistoryLimit    int           `envconfig:"LONGHAUL_HISTORY_LIMIT" default:"5000" desc:"history events after which a run continues as new (Temporal's own suggestion may come first); at least 100"`
	ApprovalTimeout time.Duration `envconfig:"LONGHAUL_APPROVAL_TIMEOUT" default:"1h" desc:"how long a run waits for a person to approve a tool call before denying it (a waiting run holds one of its principal's MAX_RUNS); 0 = no limit"`
	ChatMultitask   string        `envconfig:"LONGHAUL_CHAT_MULTITASK" default:"interrupt" desc:"what a chat's new message does while a run of an earlier message of the chat still goes (docs/api.md, A message while a run is going): interrupt (stop it, keeping its partial work, then answer the new message), enqueue (answer after it), steer (hand the message to it for its next model call), rollback (stop and forget it) or reject (409); Open WebUI sends again only once a user pressed Stop"`
	Retention       time.Duration `envconfig:"LONGHAUL_RETENTION" default:"0" desc:"how long the stored data of a finished run (big tool outputs, stored conversation and chat turns, archived events, its own webhook) and of webhook delivery records is kept; an hourly Temporal schedule, longhaul-retention-<task queue>, deletes older data, and a chat whose every stored turn went; 0 = the namespace's workflow retention (24h embedded); longhaul dev also keeps closed runs' histories in its embedded Temporal this long (at least 1h), so its database holds one retention's runs"`

	EmbedModels         []string `envconfig:"LONGHAUL_EMBED_MODELS" desc:"embedding models POST /v1/embeddings may name (comma-separated; * = any); empty = LONGHAUL_EMBED_MODEL alone, and with that empty too the route answers 404, so the operator's key never embeds for a model nobody named"`
	MaxEmbeddings       int      `envconfig:"LONGHAUL_MAX_EMBEDDINGS" default:"4" desc:"most /v1/embeddings requests one principal may have in flight on one API process (429 with Retry-After beyond); 0 = no limit"`
	MaxEmbeddingsAnswer int      `envconfig:"LONGHAUL_MAX_EMBEDDINGS_BYTES" default:"33554432" desc:"largest answer of the embeddings endpoint to one /v1/embeddings request, in bytes (32 MiB), read whole before it is passed on (502 beyond; no more is read); a float vector of 1536 dimensions is about 30 KB of JSON, 8 KB in base64"`

	ImageURLHTTP    bool `envconfig:"LONGHAUL_IMAGE_URL_HTTP" default:"false" desc:"accept http: image URLs besides https: and data: ones (the model endpoint fetches them itself)"`
	ImageURLPrivate bool `envconfig:"LONGHAUL_IMAGE_URL_PRIVATE" default:"false" desc:"accept image URLs whose host is localhost or a loopback, link-local, private or other non-public address (an image server on the operator's own network)"`

	MaxRuns     int `envconfig:"LONGHAUL_MAX_RUNS" default:"20" desc:"most runs one principal may have running or waiting at once, background Responses included (429 with Retry-After beyond); 0 = no limit"`
	MaxStreams  int `envconfig:"LONGHAUL_MAX_STREAMS" default:"20" desc:"most event streams one principal may hold open on one API process (429 with Retry-After beyond); 0 = no limit"`
	MaxChats    int `envconfig:"LONGHAUL_MAX_CONVERSATIONS" default:"1000" desc:"most chats one user keeps in the conversation store: a turn of a new chat beyond it removes the stored turns of the user's least recently updated chat (its runs' blobs go with the retention); 0 = no limit"`
	EmbedBatch  int `envconfig:"LONGHAUL_EMBED_BATCH" default:"64" desc:"most chunks of a document one embeddings call sends (EMBED_MODEL) when a file is ingested into a vector store, and so the most a killed worker embeds again; 1 to 2048, OpenAI's limit of inputs per request"`
	MaxMemories int `envconfig:"LONGHAUL_MAX_MEMORIES" default:"1000" desc:"most long-term memories one user keeps: a save beyond it deletes the least recently saved or updated; 0 = no limit"`
	MaxBacklog  int `envconfig:"LONGHAUL_MAX_BACKLOG_ITEMS" default:"200" desc:"most active (open or in progress) items one user's backlog holds (backlog_add beyond it is refused to the model), and most closed items it keeps (the least recently closed go first; see docs/agents.md, Backlog); 1 to 100000"`

	MaxFiles       int   `envconfig:"LONGHAUL_MAX_FILES" default:"1000" desc:"most files one principal may store (uploads and chat file parts; 403 quota_exceeded beyond, until files are deleted); 0 = no limit"`
	MaxFileStorage int64 `envconfig:"LONGHAUL_MAX_FILE_STORAGE" default:"1073741824" desc:"most bytes of files one principal may store, 1 GiB by default (403 quota_exceeded for a file that would pass it; nothing kept); 0 = no limit"`
	MaxIngestions  int   `envconfig:"LONGHAUL_MAX_INGESTIONS" default:"100" desc:"most files one principal may have being ingested into vector stores at once, the 100 files of one batch by default (429 with Retry-After for an attach or batch that would pass it); 0 = no limit"`

	MaxSchedules          int           `envconfig:"LONGHAUL_MAX_SCHEDULES" default:"50" desc:"most schedules (/v1/schedules) one principal may have (403 quota_exceeded beyond, until one is deleted); 0 = no limit"`
	MinScheduleInterval   time.Duration `envconfig:"LONGHAUL_MIN_SCHEDULE_INTERVAL" default:"1m" desc:"least time between two runs of a schedule: an every shorter than it, or a cron expression with two fires closer than it, is a 400; at least 1s"`
	ScheduleCatchupWindow time.Duration `envconfig:"LONGHAUL_SCHEDULE_CATCHUP_WINDOW" default:"1h" desc:"how late a schedule's run missed while Temporal or its workers were down may still start (after it, that run is skipped), for a schedule whose request names no catchup_window; at least 10s, at most 24h (more is taken as 24h)"`

	MaxWebhooks    int  `envconfig:"LONGHAUL_MAX_WEBHOOKS" default:"20" desc:"most webhook subscriptions (/v1/webhooks) one principal may keep (403 beyond, until one is deleted); a run's own webhook (the webhook field of POST /v1/runs, of a background response) is not one; 0 = no limit"`
	WebhookPrivate bool `envconfig:"LONGHAUL_WEBHOOK_PRIVATE" default:"false" desc:"deliver webhooks to hosts that are localhost or a loopback, link-local, private or other non-public address, and to any port (a receiver on the operator's own network); otherwise webhook URLs pass the same SSRF guard as the tools: public addresses, ports 80 and 443"`

	ModelPrices        string   `envconfig:"LONGHAUL_MODEL_PRICES" desc:"prices of models, comma-separated model=input/output in US dollars per million tokens, the model as requests and agents name it (e.g. llama3.1:8b=0/0,remote:gpt-4o=2.50/10.00); *=in/out prices every model not named; a model without a price costs nothing, its tokens still count (see README.md, Budgets)"`
	UsageOperatorKeys  []string `envconfig:"LONGHAUL_USAGE_OPERATOR_KEYS" desc:"comma-separated names of API keys (LONGHAUL_API_KEYS, not proxy keys) whose requests read every principal's usage, of every key, on GET /v1/usage; a principal of role admin reads its own key's principals only, anyone else their own (see docs/security.md)"`
	Budgets            string   `envconfig:"LONGHAUL_BUDGETS" desc:"limits of model spend, comma-separated scope:name=amount/period: scope principal, agent or key (an API key's name), name or * (each one separately), amount <n>tokens or <dollars>usd, period day, month (UTC) or total (e.g. principal:*=200000tokens/day,key:openwebui=50usd/month); a run past one fails with insufficient_quota, a new request gets 429 (see README.md, Budgets); empty = no limits (spend is still recorded for GET /v1/usage)"`
	BudgetOutputTokens int      `envconfig:"LONGHAUL_BUDGET_OUTPUT_TOKENS" default:"4096" desc:"completion tokens a model call reserves against the budgets when its request sets no max_tokens (its input is estimated); what it really spent replaces the reservation when it ends; at least 1"`
	MetricsPrincipal   bool     `envconfig:"LONGHAUL_METRICS_PRINCIPAL" default:"false" desc:"label the spend counters (longhaul_spend_tokens, longhaul_spend_microdollars) by principal too: one series per user, so only where principals are few (API keys, not Open WebUI's users); otherwise by agent and model only"`

	ExtractMemory      int64         `envconfig:"LONGHAUL_EXTRACT_MEMORY" default:"536870912" desc:"hard memory limit of the child process a worker extracts one file's text in (512 MiB; its address space beyond what it holds once started, RLIMIT_AS on Linux): a file that needs more fails as invalid_file, not retried; at least 64 MiB"`
	ExtractTimeout     time.Duration `envconfig:"LONGHAUL_EXTRACT_TIMEOUT" default:"5m" desc:"longest the child process extracting one file's text may run (and its CPU time limit): past it the file fails as invalid_file, not retried; 10s to 14m (the extraction activity's own limit is 15m)"`
	ExtractConcurrency int           `envconfig:"LONGHAUL_EXTRACT_CONCURRENCY" default:"2" desc:"most extraction child processes one worker runs at once (so at most this times EXTRACT_MEMORY of the worker's memory); more ingestions wait their turn"`

	AdmissionConcurrency int           `envconfig:"LONGHAUL_ADMISSION_CONCURRENCY" default:"32" desc:"run starts (the Temporal calls that start a run: chat, runs API, Responses) one API process makes at once; more wait in its admission queue, first come first served (see docs/performance.md); 0 = no limit (no queue)"`
	AdmissionQueue       int           `envconfig:"LONGHAUL_ADMISSION_QUEUE" default:"2000" desc:"run starts that may wait in one API process's admission queue; past it a request gets 429 with Retry-After: 2 at once"`
	AdmissionWait        time.Duration `envconfig:"LONGHAUL_ADMISSION_WAIT" default:"60s" desc:"longest a run start waits in the admission queue before its request gets 429 with Retry-After: 2; 0 = as long as the request lasts"`

	MaxBodyBytes    int64         `envconfig:"LONGHAUL_MAX_BODY_BYTES" default:"10485760" desc:"largest request body the API accepts (413 above it)"`
	MaxFileBytes    int64         `envconfig:"LONGHAUL_MAX_FILE_BYTES" default:"52428800" desc:"largest file POST /v1/files accepts, 50 MiB by default (the only route whose body may be larger than MAX_BODY_BYTES: it is streamed to the document store, not held in memory; 413 above it, nothing kept)"`
	RequestTimeout  time.Duration `envconfig:"LONGHAUL_REQUEST_TIMEOUT" default:"10m" desc:"how long a non-streaming request waits for its run (504 after, with the run id; the run goes on, except a Responses request with store: false, whose run is stopped and deleted)"`
	TemporalTimeout time.Duration `envconfig:"LONGHAUL_TEMPORAL_TIMEOUT" default:"10s" desc:"time limit of each call the API makes to Temporal for a request: an unreachable Temporal is a 503 with Retry-After after it, not a hanging request"`
	LogLevel        string        `envconfig:"LONGHAUL_LOG_LEVEL" default:"info" desc:"debug, info, warn or error"`
}

// MaxModelOutput is the largest LONGHAUL_MAX_MODEL_OUTPUT_BYTES: a model
// call's answer is one Temporal payload, which Temporal refuses above 2 MB.
const MaxModelOutput = 3 << 19

// MinHistoryLimit is the smallest LONGHAUL_HISTORY_LIMIT: below it a run
// would spend its history on handing itself over.
const MinHistoryLimit = 100

// Load reads the settings from the environment and validates them. An error
// names the variable at fault.
func Load() (Config, error) {
	var c Config
	// No prefix: the tags carry it (see Config).
	if err := envconfig.Process("", &c); err != nil {
		return Config{}, fmt.Errorf("settings: %w", err)
	}
	c.normalise()
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

func (c *Config) normalise() {
	c.APIKeys = nonEmpty(c.APIKeys)
	c.ProxyKeys = nonEmpty(c.ProxyKeys)
	c.UsageOperatorKeys = nonEmpty(c.UsageOperatorKeys)
	if c.DatabaseURL == "" {
		c.DatabaseURL = "sqlite://" + filepath.Join(c.DataDir, "longhaul.db")
	}
	c.LogLevel = strings.ToLower(c.LogLevel)
	c.WorkerVersioning = strings.ToLower(c.WorkerVersioning)
	if c.WorkerDeployment == WorkerDeploymentOff {
		c.WorkerDeployment = ""
	}
}

// WorkerDeploymentOff is the value of LONGHAUL_WORKER_DEPLOYMENT that runs
// unversioned workers (as does an empty one).
const WorkerDeploymentOff = "off"

// Worker versioning behaviors (LONGHAUL_WORKER_VERSIONING).
const (
	VersioningAutoUpgrade = "auto-upgrade"
	VersioningPinned      = "pinned"
)

func nonEmpty(list []string) []string {
	var out []string
	for _, v := range list {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// Keys are the API and proxy keys.
func (c Config) Keys() ([]identity.Key, error) { return identity.ParseKeys(c.APIKeys, c.ProxyKeys) }

// Headers are the request headers end users and chats are read from.
func (c Config) Headers() identity.Headers {
	return identity.Headers{
		UserID: c.UserIDHeader, UserEmail: c.UserEmailHeader, UserName: c.UserNameHeader, UserRole: c.UserRoleHeader,
		UserJWT: c.UserJWTHeader, ChatID: c.ChatIDHeader, MessageID: c.MessageIDHeader, UserGroups: c.UserGroupsHeader,
	}
}

var headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")

// UIDisabled reports whether the embedded Temporal Web UI is switched off.
func (c Config) UIDisabled() bool {
	return strings.EqualFold(c.EmbeddedUIAddr, UIOff) || c.EmbeddedUIAddr == ""
}

// MetricsOff is the value of LONGHAUL_METRICS_ADDR that serves no metrics.
const MetricsOff = "off"

// DefaultMetricsAddr is where dev and worker serve /metrics when
// LONGHAUL_METRICS_ADDR is empty. When it is taken (another worker on the
// host) they serve on a free port instead and print it; the API serves
// /metrics on its own listener instead, so API and worker never collide.
const DefaultMetricsAddr = "127.0.0.1:9464"

// DefaultServerNATSAddr is where `longhaul server` serves its embedded NATS
// when LONGHAUL_EMBEDDED_NATS_ADDR is empty (4222 is often taken by a NATS
// of the machine's own).
const DefaultServerNATSAddr = "127.0.0.1:4223"

// Embedded reports whether Longhaul runs its own Temporal server, that is
// whether no external Temporal address is configured.
func (c Config) Embedded() bool { return c.TemporalAddress == "" }

// Database is the parsed LONGHAUL_DATABASE_URL.
type Database struct {
	Driver string // "sqlite" or "postgres"
	DSN    string // a file path for sqlite, the URL for postgres
}

// Embedder returns where embeddings are asked for: EMBED_BASE_URL and
// EMBED_API_KEY, or the model endpoint's URL and key.
func (c Config) Embedder() (baseURL, apiKey string) {
	if c.EmbedBaseURL != "" {
		return c.EmbedBaseURL, c.EmbedAPIKey
	}
	if c.EmbedAPIKey != "" {
		return c.LLMBaseURL, c.EmbedAPIKey
	}
	return c.LLMBaseURL, c.LLMAPIKey
}

// ModelEndpoints is the default model endpoint (LLM_BASE_URL, LLM_API_KEY)
// and the named ones (LLM_ENDPOINTS, LLM_KEYS); an error names the setting
// and never quotes a key.
func (c Config) ModelEndpoints() (*endpoints.Set, error) {
	named, err := endpoints.Parse(c.LLMEndpoints, c.LLMKeys)
	if err != nil {
		return nil, err
	}
	return endpoints.NewSet(endpoints.Endpoint{BaseURL: c.LLMBaseURL, APIKey: c.LLMAPIKey}, named), nil
}

// EmbeddingModels returns the models POST /v1/embeddings may name:
// EMBED_MODELS, or else EMBED_MODEL alone, or none.
func (c Config) EmbeddingModels() []string {
	var models []string
	for _, m := range c.EmbedModels {
		if m = strings.TrimSpace(m); m != "" {
			models = append(models, m)
		}
	}
	switch {
	case len(models) > 0:
		return models
	case c.EmbedModel != "":
		return []string{c.EmbedModel}
	}
	return nil
}

// Database parses DatabaseURL.
func (c Config) Database() (Database, error) {
	u := c.DatabaseURL
	switch {
	case strings.HasPrefix(u, "sqlite://"):
		p := strings.TrimPrefix(u, "sqlite://")
		if p == "" {
			return Database{}, fmt.Errorf("%q has no file path", u)
		}
		return Database{Driver: "sqlite", DSN: p}, nil
	case strings.HasPrefix(u, "postgres://"), strings.HasPrefix(u, "postgresql://"):
		if _, err := url.Parse(u); err != nil {
			return Database{}, fmt.Errorf("not a valid URL")
		}
		return Database{Driver: "postgres", DSN: u}, nil
	}
	return Database{}, fmt.Errorf("%q must start with sqlite:// or postgres://", redact.URLs(u))
}

// TemporalTLSConfig is the TLS configuration of the connection to
// TEMPORAL_ADDRESS, or nil for plain gRPC.
func (c Config) TemporalTLSConfig() (*tls.Config, error) {
	if !c.TemporalTLS && c.TemporalTLSCA == "" && c.TemporalTLSCert == "" && c.TemporalAPIKey == "" && c.TemporalTLSServerName == "" {
		return nil, nil
	}
	return tlsfiles.Files{CA: c.TemporalTLSCA, Cert: c.TemporalTLSCert, Key: c.TemporalTLSKey, ServerName: c.TemporalTLSServerName}.Config("Temporal")
}
