// Package activities holds every side effect of a Longhaul run: model calls
// (whose text streams to the API over NATS while it arrives), tool calls and
// the store's claim checks. Each is a method on
// Activities, which holds the dependencies (model client, tool registry,
// agent catalog, Temporal client) and is registered once per worker. The
// activities' requests and responses are package contract's, which the
// workflows that schedule them import too; what stays here is how the
// activities do their work.
//
// Retrying a failed activity is Temporal's job, by the retry policies of
// workflows/options.go: no activity sends a failed model, tool, store or
// NATS call again, and the model client (go-openai) does not retry either;
// errors are classified into retryable and non-retryable instead. What does
// repeat inside an attempt:
//
//   - a structured model call (Classify, Plan, the reviews, Translate,
//     ExtractMemories) and a ChatCompletion with a JSON response_format
//     send an invalid answer back to the model once, with its problems
//     (structured.go, answer.go); a second invalid answer fails the attempt;
//   - long calls heartbeat (model calls on a ticker, ExtractChunks and
//     EmbedChunks with their progress, DeleteExpiredBlobs once a run), so a
//     dead worker is noticed within the heartbeat timeout; a model stream
//     silent for IdleTimeout ends its attempt early, for Temporal to retry
//     at once;
//   - EmbedChunks loops over its batches, skipping chunks an earlier
//     attempt wrote, so a retry resumes instead of starting over;
//   - an MCP tool's server reconnects before a call when its session has
//     ended (internal/mcp), but a call whose connection fails is not sent
//     again here;
//   - live deltas are published to NATS once, fire and forget: a lost
//     delta is not resent (the workflow keeps the final text).
//
// The activities, by file (options and retry policies: workflows/options.go):
//
//	activities.go    ResolveAgent: the agent's spec from the catalog (local)
//	model.go         ChatCompletion: one model call of a tool loop, streamed
//	budget.go        ChatCompletion's reservation and settlement of its spend
//	tool.go          CallTool: one tool call, checked against the catalog and approvals
//	plan.go          Classify, Plan, SupervisePlan, ReviewStep: the agentic pipeline
//	translate.go     Translate: the user's message into the language the agent reasons in
//	memory.go        RecallMemories, ExtractMemories, SaveMemories: long-term memory
//	conversation.go  RestoreConversation, RecordTurn: a chat's stored turns (local)
//	claim.go         ArchiveEvents: a stretch of the event log, before continue-as-new
//	forget.go        MarkDeleted: a run not to be kept, marked deleted at its end
//	retention.go     DeleteExpiredBlobs: the retention job's one activity
//	ingest.go        ExtractChunks, EmbedChunks, FinishIngest: a file into a vector store
//	webhook.go       WebhookTargets (local), DeliverWebhook: a run's events to its webhooks
//	eval.go          GradeCase: an evaluation's graders and comparisons of one replayed case
package activities

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/access"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/endpoints"
	"github.com/longhaul-dev/longhaul/internal/extract"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/memory"
	"github.com/longhaul-dev/longhaul/internal/natsbus"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/window"
	"github.com/longhaul-dev/longhaul/skills"
	"github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"
)

// Activities are Longhaul's activities. Workflows reference them through a
// nil pointer: var a *Activities.
type Activities struct {
	// ends resolves model references to endpoints, and clients holds a
	// client per endpoint, by name ("" the default).
	ends         *endpoints.Set
	clients      map[string]*openai.Client
	defaultModel string
	catalog      *skills.Catalog
	// thinkers are the models seen thinking (thinkroom.go).
	thinkers thinkers
	tools    *tools.Registry
	log      *slog.Logger

	// Bus carries the ephemeral deltas of running calls (streamed text,
	// tool progress) to the API; nil streams nothing live.
	Bus *natsbus.Bus
	// HeartbeatInterval is how often a running call heartbeats. Each
	// heartbeat is a write to Temporal's persistence; a model call hears a
	// cancelled run over the Bus at once, so the heartbeat only has to say
	// that the worker is alive (well within the activity's heartbeat
	// timeout) and to carry a cancellation Temporal took from elsewhere
	// (the Temporal UI, a client of its own).
	HeartbeatInterval time.Duration
	// MaxToolOutput caps the characters of a tool result given to the model.
	MaxToolOutput int
	// PlanParallel bounds the plan steps of one run that run at once for
	// an agent that names no parallel:; DefaultPlanParallel when zero.
	PlanParallel int
	// Blobs, when set, keeps the whole of a tool result longer than
	// MaxToolOutput outside workflow history (a claim check); the model
	// reads an excerpt and the result carries the reference.
	Blobs store.Store
	// RestoreChars bounds the characters of the tool results of earlier
	// chat turns given back to the model (RestoreConversation); zero is
	// DefaultRestoreChars.
	RestoreChars int
	// Updates reads the recorded approvals of tool calls that require one
	// (the worker's Temporal client); nil refuses every such call.
	Updates UpdateReader
	// Runs tells the retention job which runs are still open and when the
	// others closed: the worker's Temporal client.
	Runs RunDescriber
	// MaxOutputBytes caps what one model call may return: its text and its
	// tool calls' arguments together. A call that goes past it fails and is
	// not retried (a model that rambles on rambles again). Zero is
	// DefaultMaxOutputBytes.
	MaxOutputBytes int
	// Memory is long-term memory (LONGHAUL_EMBED_MODEL); nil is off: no
	// agent recalls or remembers, and the memory tools are not offered.
	Memory *memory.Service
	// IdleTimeout is how long a model call waits for the next chunk of its
	// stream (the first one included) before it gives up on the attempt, so
	// that a stalled stream is retried at once instead of at the end of the
	// call's time limit. Zero waits as long as the call may take.
	IdleTimeout time.Duration
	// SilenceMax is the longest silence of a model stream waited through
	// while its endpoint still answers a probe (watchdog.go): a model
	// loading, or writing a tool call. Zero is DefaultSilenceMax;
	// negative never waits past IdleTimeout.
	SilenceMax time.Duration
	// ProbeClient asks a silent stream's endpoint whether it answers; nil
	// is http.DefaultClient.
	ProbeClient *http.Client
	// Docs is the document store the ingestion activities read files
	// from and write chunks to; nil refuses them.
	Docs docstore.Store
	// Embedder embeds documents' chunks (LONGHAUL_EMBED_MODEL); nil
	// stores chunks without vectors, for full-text search only.
	Embedder memory.Embedder
	// Windows knows each model's context window (LONGHAUL_LLM_CONTEXT,
	// the endpoint's own report, else window.Default); nil assumes
	// window.Default for every model.
	Windows *window.Resolver
	// EmbedBatch is the most chunks one embeddings call sends
	// (LONGHAUL_EMBED_BATCH); zero is DefaultEmbedBatch.
	EmbedBatch int
	// Extractor extracts the text of a file being ingested, in a child
	// process with a hard memory limit (LONGHAUL_EXTRACT_MEMORY,
	// LONGHAUL_EXTRACT_TIMEOUT, LONGHAUL_EXTRACT_CONCURRENCY); nil is one
	// with the defaults, shared by the process.
	Extractor *extract.Child
	// Webhooks keeps the webhooks run events are delivered to, with their
	// secrets, and records each delivery attempt (webhook.go); nil
	// delivers none.
	Webhooks store.Webhooks
	// WebhookPrivate lets deliveries reach private and loopback hosts
	// (LONGHAUL_WEBHOOK_PRIVATE), for receivers on the operator's own
	// network; otherwise they pass the same SSRF guard as the tools.
	WebhookPrivate bool
	// Forks reads the runs forks start from (ReadFork): the worker's
	// Temporal client; nil refuses every fork that reuses anything.
	Forks ForkReader
	// Spend, when set, records what each chat model call spends and holds
	// it to the budgets (budget.go): a call reserves before it is sent and
	// settles when it ends.
	Spend SpendLedger
	// BudgetOutputTokens is what a call whose request sets no max_tokens
	// reserves for its output (LONGHAUL_BUDGET_OUTPUT_TOKENS); zero is
	// DefaultBudgetOutputTokens.
	BudgetOutputTokens int
	// MetricsPrincipal labels the spend counters by principal too
	// (LONGHAUL_METRICS_PRINCIPAL).
	MetricsPrincipal bool
	// Breaker counts each model endpoint's consecutive failures across
	// the worker's model calls; an endpoint past its limit is skipped for
	// a while by calls that have a fallback model (breaker.go). Nil skips
	// none.
	Breaker *Breaker
	// Owners re-resolves the owner of a run a schedule started, at its
	// start (AdmitFire), with the keys the API resolves requests with
	// (LONGHAUL_API_KEYS, LONGHAUL_PROXY_KEYS); nil takes the owner the
	// schedule stored as they are.
	Owners *identity.Resolver
	// MaxRuns is the most runs one principal may have running
	// (LONGHAUL_MAX_RUNS), held to a schedule's runs at their start
	// (AdmitFire); zero is no limit.
	MaxRuns int
	// Fires counts a principal's runs and pauses a refused schedule
	// (AdmitFire): the worker's Temporal client; nil does neither.
	Fires FireGate
	// Schedules says whether a schedule's stored images must stay
	// (DeleteExpiredBlobs); nil keeps them.
	Schedules ScheduleKeeper

	// servers remembers which endpoints are Ollama (servers.go).
	servers serverKinds
}

// DefaultMaxOutputBytes is the cap on one model call's output when none is
// set: far above any real answer, well under the 2 MB that Temporal takes
// in one payload.
const DefaultMaxOutputBytes = 1 << 20

// LLMConfig says how to reach the model endpoint.
type LLMConfig struct {
	BaseURL string
	APIKey  string
	Model   string
	// HTTPClient is used for model calls; nil means a client without a
	// timeout of its own (the activity's deadline bounds each call).
	HTTPClient *http.Client
	// Endpoints are the named endpoints beside BaseURL
	// (LONGHAUL_LLM_ENDPOINTS): a model reference "name:model" is sent to
	// the one named name, with the same timeouts, retries and streaming.
	Endpoints []endpoints.Endpoint
}

// New builds the activities.
func New(llm LLMConfig, catalog *skills.Catalog, registry *tools.Registry, log *slog.Logger) *Activities {
	ends := endpoints.NewSet(endpoints.Endpoint{BaseURL: llm.BaseURL, APIKey: llm.APIKey}, llm.Endpoints)
	clients := map[string]*openai.Client{}
	for _, e := range append([]endpoints.Endpoint{ends.Default()}, ends.Named()...) {
		cfg := openai.DefaultConfig(e.APIKey)
		cfg.BaseURL = e.BaseURL
		cfg.HTTPClient = withReasoningField(llm.HTTPClient)
		clients[e.Name] = openai.NewClientWithConfig(cfg)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Activities{
		ends:              ends,
		clients:           clients,
		defaultModel:      llm.Model,
		catalog:           catalog,
		tools:             registry,
		log:               log,
		HeartbeatInterval: DefaultHeartbeatInterval,
		MaxToolOutput:     16000,
	}
}

// DefaultHeartbeatInterval is HeartbeatInterval's default: half the model
// and tool calls' heartbeat timeout (10 s), two heartbeats where a 10-s
// answer took five at 2 s.
const DefaultHeartbeatInterval = 5 * time.Second

// DefaultSkillMaxTurns bounds a skill's own loop when it names no max_turns.
const DefaultSkillMaxTurns = 6

// DefaultPlanParallel bounds the plan steps that run at once when neither
// the agent (parallel:) nor the worker (LONGHAUL_PLAN_PARALLEL) says.
const DefaultPlanParallel = 4

// planParallel is the bound of an agent's plan steps at once: its own
// (parallel:), else the worker's, else DefaultPlanParallel.
func (a *Activities) planParallel(own int) int {
	switch {
	case own > 0:
		return own
	case a.PlanParallel > 0:
		return a.PlanParallel
	}
	return DefaultPlanParallel
}

// DefaultMaxTurns bounds an agent's tool loop when it names no max_turns.
const DefaultMaxTurns = 8

// ResolveAgent looks an agent up in the catalog loaded at worker start, as
// user may use it: the skills and tools whose allow: rules do not admit
// user are left out of the spec (and so out of what the model is offered,
// what plans may name and which slash commands run), and an agent user may
// not use is unknown. user comes from the workflow's input, which the API
// built from the request's credential.
func (a *Activities) ResolveAgent(_ context.Context, id string, user longhaul.User) (contract.AgentSpec, error) {
	ag, ok := a.catalog.AgentFor(id, user)
	if !ok {
		return contract.AgentSpec{}, nonRetryable("UnknownAgent", fmt.Errorf("unknown agent %q", id))
	}
	all := a.available(a.catalog.AgentTools(ag))
	spec := contract.AgentSpec{
		ID:          ag.ID,
		Mode:        string(ag.Mode),
		Model:       ag.Model,
		MaxTurns:    ag.MaxTurns,
		MaxReplans:  ag.MaxReplans,
		Parallel:    a.planParallel(ag.Parallel),
		Tools:       a.permitted(a.available(a.catalog.AgentToolsFor(ag, user)), user),
		ReviewPlan:  ag.ReviewPlan,
		Temperature: ag.Temperature,
		Models:      contract.RoleModels(ag.Models),
		Context:     ag.Context,
		Language:    ag.Language,
		ReasonIn:    ag.ReasonIn,
		// A copy: the spec leaves the activity, the catalog stays.
		VectorStores: slices.Clone(ag.VectorStores),
	}
	if a.Memory != nil {
		if ag.Memory != skills.MemoryOff {
			spec.Memory = string(ag.Memory)
		}
		spec.Remember = ag.Remember
	}
	for _, name := range spec.Tools {
		if t, ok := a.tools.Get(name); ok && tools.NeedsApproval(t) {
			spec.Approval = append(spec.Approval, name)
		}
	}
	var hiddenSkills []string
	for _, id := range ag.Skills {
		s, ok := a.catalog.Skill(id)
		if !ok {
			continue
		}
		if !s.Allow.Allows(user) {
			hiddenSkills = append(hiddenSkills, s.ID)
			continue
		}
		ss := contract.SkillSpec{
			ID: s.ID, Description: s.Description, Command: s.Command,
			Tools: a.permitted(a.available(s.Tools), user), Model: s.Model, MaxTurns: s.MaxTurns,
		}
		if ss.MaxTurns <= 0 {
			ss.MaxTurns = DefaultSkillMaxTurns
		}
		spec.Skills = append(spec.Skills, ss)
	}
	if spec.Model == "" {
		spec.Model = a.defaultModel
	}
	if spec.MaxTurns <= 0 {
		spec.MaxTurns = DefaultMaxTurns
	}
	spec.Access = describeFilter(user, hiddenSkills, all, spec.Tools)
	// The agents it asks come after its tools (their allow: hid the
	// others); the model reads as much of an answer as of a tool's output.
	spec.Asks = a.askSpecs(ag, user)
	for _, s := range spec.Asks {
		spec.Tools = append(spec.Tools, s.Tool)
	}
	if len(spec.Asks) > 0 {
		spec.AskOutput = a.MaxToolOutput
	}
	return spec, nil
}

// permitted keeps the tools of names that user may use: a tool with an
// allow: rule of its own (an HTTP tool's, an MCP server's or tool's) that
// does not admit user is left out.
func (a *Activities) permitted(names []string, user longhaul.User) []string {
	var out []string
	for _, n := range names {
		if t, ok := a.tools.Get(n); ok && access.ToolAllows(t, user) {
			out = append(out, n)
		}
	}
	return out
}

// describeFilter says which allow: filter applied to user and what it hid
// of the agent: its skills hiddenSkills and the tools of all not in kept.
func describeFilter(user longhaul.User, hiddenSkills, all, kept []string) string {
	var hiddenTools []string
	for _, t := range all {
		if !slices.Contains(kept, t) {
			hiddenTools = append(hiddenTools, t)
		}
	}
	s := "tools filtered for " + access.Describe(user)
	if len(hiddenSkills) == 0 && len(hiddenTools) == 0 {
		return s + ": hidden nothing"
	}
	s += fmt.Sprintf(": hidden %d", len(hiddenSkills)+len(hiddenTools))
	if len(hiddenSkills) > 0 {
		s += " (skills " + strings.Join(hiddenSkills, ", ") + ")"
	}
	if len(hiddenTools) > 0 {
		s += " (tools " + strings.Join(hiddenTools, ", ") + ")"
	}
	return s
}

// available keeps the tools of names that this worker has: a tool whose
// service is not configured (web_search without LONGHAUL_SEARCH_URL) or not
// reachable (an MCP server that is down) is not offered to the model.
func (a *Activities) available(names []string) []string {
	var out []string
	for _, n := range names {
		if a.tools.Has(n) {
			out = append(out, n)
		}
	}
	return out
}

// endpoint is where a model call goes: the client of the endpoint, the
// endpoint and the model id it is sent.
type endpoint struct {
	client *openai.Client
	endpoints.Endpoint
	model string
}

// resolve finds the endpoint of the model reference ref (empty: the
// default model). A reference to an endpoint this worker does not have is
// not retried: every attempt would fail alike.
func (a *Activities) resolve(ref string) (endpoint, error) {
	if ref == "" {
		ref = a.defaultModel
	}
	// A fallback list's later models answer only a call the workflow
	// makes for each (its model loop); any other call takes the first.
	ref = longhaul.PrimaryModel(ref)
	e, model, err := a.ends.Resolve(ref)
	if err != nil {
		return endpoint{}, temporal.NewNonRetryableApplicationError(err.Error(), longhaul.ErrTypeModelRejected, err)
	}
	return endpoint{client: a.clients[e.Name], Endpoint: e, model: model}, nil
}

// ref is the reference of the model an endpoint says it used: what resolves
// back to the same endpoint, so a run that keeps using the model its
// endpoint named stays on that endpoint.
func (a *Activities) ref(e endpoint, model string) string {
	if model == "" {
		model = e.model
	}
	return a.ends.Ref(e.Name, model)
}
