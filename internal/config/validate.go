// Validate: every setting checked at start-up, all problems reported at
// once, each naming its variable.

package config

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/internal/budget"
	"github.com/longhaul-dev/longhaul/internal/endpoints"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/redact"
	"github.com/longhaul-dev/longhaul/internal/window"
)

// Validate checks every setting and returns all problems at once, each naming
// its variable. Each section checks one group of settings, in the order the
// problems are reported.
func (c Config) Validate() error {
	var p problems
	c.checkAddresses(&p)
	c.checkModel(&p)
	c.checkNATS(&p)
	c.checkWorkers(&p)
	c.checkRuns(&p)
	c.checkIdentity(&p)
	c.checkStores(&p)
	c.checkTools(&p)
	p.errs = append(p.errs, c.placeholderSecrets()...)
	c.checkHeaders(&p)
	c.checkLimits(&p)
	c.checkRequests(&p)
	c.checkMultitask(&p)
	c.checkBudgets(&p)
	c.checkUsageOperators(&p)
	return errors.Join(p.errs...)
}

// problems collects what Validate finds wrong.
type problems struct{ errs []error }

// bad records a problem with the variable LONGHAUL_<name>.
func (p *problems) bad(name, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("%s_%s: %s", Prefix, name, fmt.Sprintf(format, args...)))
}

// addr checks that v is host:port; an empty v is a problem only when the
// setting is required.
func (p *problems) addr(name, v string, required bool) {
	if v == "" {
		if required {
			p.bad(name, "must be host:port")
		}
		return
	}
	if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
		p.bad(name, "%q is not host:port", v)
	}
}

// httpURL checks that v is an absolute http(s) URL; an empty v is a
// problem only when the setting is required.
func (p *problems) httpURL(name, v string, required bool) {
	if v == "" && !required {
		return
	}
	if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.bad(name, "%q is not an http(s) URL", redact.URLs(v))
	}
}

// checkAddresses checks the listen and Temporal addresses, the data
// directory, the namespace and the task queue.
func (c Config) checkAddresses(p *problems) {
	p.addr("HTTP_ADDR", c.HTTPAddr, true)
	p.addr("TEMPORAL_ADDRESS", c.TemporalAddress, false)
	p.addr("EMBEDDED_TEMPORAL_ADDR", c.EmbeddedTemporalAddr, true)
	if c.MetricsAddr != MetricsOff {
		p.addr("METRICS_ADDR", c.MetricsAddr, false)
	}
	p.addr("PPROF_ADDR", c.PprofAddr, false)
	p.addr("EMBEDDED_METRICS_ADDR", c.EmbeddedMetricsAddr, false)
	if !c.UIDisabled() {
		p.addr("EMBEDDED_UI_ADDR", c.EmbeddedUIAddr, true)
	}
	if c.DataDir == "" {
		p.bad("DATA_DIR", "must not be empty")
	}
	if c.TemporalNamespace == "" {
		p.bad("TEMPORAL_NAMESPACE", "must not be empty")
	}
	if c.TaskQueue == "" {
		p.bad("TASK_QUEUE", "must not be empty")
	}
}

// checkModel checks the model endpoints, the default model and the limits
// of a model call.
func (c Config) checkModel(p *problems) {
	p.httpURL("LLM_BASE_URL", c.LLMBaseURL, true)
	if set, err := c.ModelEndpoints(); err != nil {
		p.errs = append(p.errs, err)
	} else if c.LLMModel != "" {
		if err := set.Check(c.LLMModel); err != nil {
			p.bad("LLM_MODEL", "%v", err)
		}
	}
	if c.LLMModel == "" {
		p.bad("LLM_MODEL", "must not be empty")
	}
	if _, err := window.ParseSettings(c.LLMContext); err != nil {
		p.bad("LLM_CONTEXT", "%v", err)
	}
	if c.LLMTimeout <= 0 {
		p.bad("LLM_TIMEOUT", "must be positive")
	}
	if c.ModelIdleTimeout < 0 {
		p.bad("MODEL_IDLE_TIMEOUT", "must not be negative (0 waits as long as LLM_TIMEOUT)")
	}
	if c.ModelSilenceMax < 0 {
		p.bad("MODEL_SILENCE_MAX", "must not be negative (0 never waits past MODEL_IDLE_TIMEOUT)")
	}
	if c.ModelBreakerFailures < 0 {
		p.bad("MODEL_BREAKER_FAILURES", "must not be negative (0 never skips an endpoint)")
	}
	if c.ModelBreakerFailures > 0 && c.ModelBreakerCooldown <= 0 {
		p.bad("MODEL_BREAKER_COOLDOWN", "must be positive while MODEL_BREAKER_FAILURES is set")
	}
	if c.MaxModelOutput < 1024 || c.MaxModelOutput > MaxModelOutput {
		p.bad("MAX_MODEL_OUTPUT_BYTES", "must be from 1024 to %d (an answer travels in one Temporal payload, 2 MB at most), got %d", MaxModelOutput, c.MaxModelOutput)
	}
}

// checkNATS checks the NATS settings, and Temporal's client certificate
// (which, like NATS's, needs its key).
func (c Config) checkNATS(p *problems) {
	p.addr("EMBEDDED_NATS_ADDR", c.EmbeddedNATSAddr, false)
	for _, u := range strings.Split(c.NATSURL, ",") {
		if u == "" && c.NATSURL == "" {
			break
		}
		if pu, err := url.Parse(strings.TrimSpace(u)); err != nil || pu.Host == "" || !slices.Contains([]string{"nats", "tls", "ws", "wss"}, pu.Scheme) {
			p.bad("NATS_URL", "%q is not a nats:// (or tls://) URL", redact.URLs(u))
		}
	}
	if c.NATSSubjectPrefix == "" || strings.ContainsAny(c.NATSSubjectPrefix, " \t*>") || strings.HasPrefix(c.NATSSubjectPrefix, ".") || strings.HasSuffix(c.NATSSubjectPrefix, ".") {
		p.bad("NATS_SUBJECT_PREFIX", "%q is not a NATS subject prefix (tokens separated by dots, no spaces, * or >)", c.NATSSubjectPrefix)
	}
	if (c.NATSTLSCert == "") != (c.NATSTLSKey == "") {
		p.bad("NATS_TLS_CERT", "NATS_TLS_CERT and NATS_TLS_KEY go together")
	}
	if (c.TemporalTLSCert == "") != (c.TemporalTLSKey == "") {
		p.bad("TEMPORAL_TLS_CERT", "TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together")
	}
}

// checkWorkers checks a worker's slots, pollers, cache and versioning.
func (c Config) checkWorkers(p *problems) {
	if c.WorkerActivitySlots < 1 || c.WorkerWorkflowSlots < 1 || c.WorkerPollers < 1 {
		p.bad("WORKER_ACTIVITY_SLOTS", "the WORKER_ACTIVITY_SLOTS, WORKER_WORKFLOW_SLOTS and WORKER_POLLERS must be at least 1, got %d, %d and %d", c.WorkerActivitySlots, c.WorkerWorkflowSlots, c.WorkerPollers)
	}
	if c.WorkerPollers > c.WorkerActivitySlots || c.WorkerPollers > c.WorkerWorkflowSlots {
		p.bad("WORKER_POLLERS", "must not be more than the slots it fills (%d activity, %d workflow), got %d", c.WorkerActivitySlots, c.WorkerWorkflowSlots, c.WorkerPollers)
	}
	if c.WorkerStickyCache < 0 {
		p.bad("WORKER_STICKY_CACHE", "must not be negative (0 keeps the SDK's default)")
	}
	if d := c.WorkerDeployment; d != "" && (strings.ContainsAny(d, ".: \t") || strings.HasPrefix(d, "__") || len(d) > 255) {
		p.bad("WORKER_DEPLOYMENT", "%q is not a deployment name (no '.', ':' or spaces, not starting with '__', at most 255 bytes; off = unversioned)", d)
	}
	if b := c.WorkerBuildID; strings.HasPrefix(b, "__") || len(b) > 255 || strings.TrimSpace(b) != b {
		p.bad("WORKER_BUILD_ID", "%q is not a build id (not starting with '__', no spaces around it, at most 255 bytes)", b)
	}
	if c.WorkerVersioning != VersioningAutoUpgrade && c.WorkerVersioning != VersioningPinned {
		p.bad("WORKER_VERSIONING", "%q is not %s or %s", c.WorkerVersioning, VersioningAutoUpgrade, VersioningPinned)
	}
}

// checkRuns checks how long a run's history grows and waits for approval.
func (c Config) checkRuns(p *problems) {
	if c.HistoryLimit < MinHistoryLimit {
		p.bad("HISTORY_LIMIT", "must be at least %d events, got %d", MinHistoryLimit, c.HistoryLimit)
	}
	if c.ApprovalTimeout < 0 {
		p.bad("APPROVAL_TIMEOUT", "must not be negative (0 waits without a limit)")
	}
}

// checkIdentity checks the token key, the public URL and the lifetime of
// Open WebUI's signed users.
func (c Config) checkIdentity(p *problems) {
	if k := c.TokenKey; k != "" && !strings.HasPrefix(strings.ToLower(k), Placeholder) {
		if b, err := hex.DecodeString(k); err != nil || len(b) != 32 {
			p.bad("TOKEN_KEY", "must be 32 bytes as 64 hex digits; %s", makeSecret)
		}
	}
	if pu := c.PublicURL; pu != "" {
		if u, err := url.Parse(pu); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
			p.bad("PUBLIC_URL", "must be an absolute http(s) URL without a query, e.g. https://longhaul.example.com")
		}
	}
	if c.OpenWebUIJWTMaxLifetime <= 0 {
		p.bad("OPENWEBUI_JWT_MAX_LIFETIME", "must be positive (Open WebUI signs for 300 s by default)")
	}
}

// checkStores checks the database and long-term memory.
func (c Config) checkStores(p *problems) {
	if _, err := c.Database(); err != nil {
		p.bad("DATABASE_URL", "%v", err)
	}
	if u := c.EmbeddedDatabaseURL; u != "" {
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "postgres" && pu.Scheme != "postgresql") || strings.Trim(pu.Path, "/") == "" {
			p.bad("EMBEDDED_DATABASE_URL", "%q: must be postgres://user:password@host:port/database", redact.URLs(u))
		}
	}
	p.httpURL("EMBED_BASE_URL", c.EmbedBaseURL, false)
	if c.MemoryK < 1 || c.MemoryK > 50 {
		p.bad("MEMORY_K", "must be between 1 and 50, got %d", c.MemoryK)
	}
	if c.MemoryThreshold < -1 || c.MemoryThreshold > 1 || c.MemoryThreshold != c.MemoryThreshold {
		p.bad("MEMORY_THRESHOLD", "must be a cosine similarity between -1 and 1, got %v", c.MemoryThreshold)
	}
}

// checkTools checks the tools' settings and the API keys.
func (c Config) checkTools(p *problems) {
	p.httpURL("SEARCH_URL", c.SearchURL, false)
	for _, port := range c.FetchPorts {
		if port < 1 || port > 65535 {
			p.bad("FETCH_PORTS", "%d is not a port", port)
		}
	}
	if len(c.FetchPorts) == 0 {
		p.bad("FETCH_PORTS", "must list at least one port")
	}
	if c.PlanParallel < 1 || c.PlanParallel > 8 {
		p.bad("PLAN_PARALLEL", "must be between 1 and 8, got %d", c.PlanParallel)
	}
	if c.MaxToolChars < 500 {
		p.bad("MAX_TOOL_CHARS", "must be at least 500")
	}
	if c.RestoreChars < 0 {
		p.bad("RESTORE_CHARS", "must not be negative")
	}
	if _, err := c.Keys(); err != nil {
		p.bad("API_KEYS", "%v", err)
	}
}

// checkHeaders checks that the headers users and chats are read from are
// header names.
func (c Config) checkHeaders(p *problems) {
	h := c.Headers()
	for name, v := range map[string]string{
		"USER_ID_HEADER": h.UserID, "USER_EMAIL_HEADER": h.UserEmail, "USER_NAME_HEADER": h.UserName, "USER_ROLE_HEADER": h.UserRole,
		"USER_JWT_HEADER": h.UserJWT, "CHAT_ID_HEADER": h.ChatID, "MESSAGE_ID_HEADER": h.MessageID,
	} {
		if !headerName.MatchString(v) {
			p.bad(name, "%q is not an HTTP header name", v)
		}
	}
	if h.UserGroups != "" && !headerName.MatchString(h.UserGroups) {
		p.bad("USER_GROUPS_HEADER", "%q is not an HTTP header name", h.UserGroups)
	}
}

// checkLimits checks the limits of a principal, a user and the admission
// queue.
func (c Config) checkLimits(p *problems) {
	// Caps of which 0 means none, in the order they are reported.
	for _, limit := range []struct {
		name string
		v    int64
	}{
		{"MAX_EMBEDDINGS", int64(c.MaxEmbeddings)}, {"MAX_RUNS", int64(c.MaxRuns)},
		{"MAX_SCHEDULES", int64(c.MaxSchedules)}, {"ADMISSION_CONCURRENCY", int64(c.AdmissionConcurrency)},
		{"MAX_STREAMS", int64(c.MaxStreams)}, {"MAX_CONVERSATIONS", int64(c.MaxChats)},
		{"MAX_MEMORIES", int64(c.MaxMemories)}, {"MAX_FILES", int64(c.MaxFiles)},
		{"MAX_FILE_STORAGE", c.MaxFileStorage}, {"MAX_INGESTIONS", int64(c.MaxIngestions)},
		{"MAX_WEBHOOKS", int64(c.MaxWebhooks)},
	} {
		if limit.v < 0 {
			p.bad(limit.name, "must not be negative (0 = no limit)")
		}
	}
	if c.MaxEmbeddingsAnswer < 1024 {
		p.bad("MAX_EMBEDDINGS_BYTES", "must be at least 1024")
	}
	if c.MinScheduleInterval < time.Second {
		p.bad("MIN_SCHEDULE_INTERVAL", "must be at least 1s")
	}
	if c.ScheduleCatchupWindow < 10*time.Second {
		p.bad("SCHEDULE_CATCHUP_WINDOW", "must be at least 10s (Temporal's least catch-up window)")
	}
	if c.AdmissionQueue < 0 {
		p.bad("ADMISSION_QUEUE", "must not be negative")
	}
	if c.AdmissionWait < 0 {
		p.bad("ADMISSION_WAIT", "must not be negative (0 = as long as the request lasts)")
	}
	if c.EmbedBatch < 1 || c.EmbedBatch > 2048 {
		p.bad("EMBED_BATCH", "must be between 1 and 2048 (OpenAI's most inputs of one embeddings request)")
	}
	if c.ExtractMemory < 64<<20 {
		p.bad("EXTRACT_MEMORY", "must be at least 67108864 (64 MiB)")
	}
	if c.ExtractTimeout < 10*time.Second || c.ExtractTimeout > 14*time.Minute {
		p.bad("EXTRACT_TIMEOUT", "must be between 10s and 14m (the extraction activity's own limit is 15m)")
	}
	if c.ExtractConcurrency < 1 {
		p.bad("EXTRACT_CONCURRENCY", "must be at least 1")
	}
	if c.MaxBacklog < 1 || c.MaxBacklog > 100000 {
		p.bad("MAX_BACKLOG_ITEMS", "must be between 1 and 100000 (a backlog is read whole to be filtered)")
	}
}

// checkRequests checks the sizes and time limits of requests, and the log
// level.
func (c Config) checkRequests(p *problems) {
	if c.MaxBodyBytes < 1024 {
		p.bad("MAX_BODY_BYTES", "must be at least 1024")
	}
	if c.MaxFileBytes < 1024 {
		p.bad("MAX_FILE_BYTES", "must be at least 1024")
	}
	if c.RequestTimeout <= 0 {
		p.bad("REQUEST_TIMEOUT", "must be positive")
	}
	if c.TemporalTimeout <= 0 {
		p.bad("TEMPORAL_TIMEOUT", "must be positive")
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		p.bad("LOG_LEVEL", "%q is not one of debug, info, warn, error", c.LogLevel)
	}
}

// Placeholder is how every secret in .env.example begins: a setting whose
// value (or whose key, token or password) still begins with it, in any
// case, stops start-up.
const Placeholder = "change-me"

// MinJWTSecret is the shortest LONGHAUL_OPENWEBUI_JWT_SECRET: an HS256
// key shorter than the hash (32 bytes) is guessable offline from one
// signed header.
const MinJWTSecret = 32

// makeSecret is the advice of a refused secret.
const makeSecret = "make one with `openssl rand -hex 32`"

// placeholderSecrets finds the secrets still set to .env.example's
// placeholders, and a signing secret too short to sign with. A message
// names the setting (and the key's name), never the secret.
func (c Config) placeholderSecrets() []error {
	var errs []error
	isPlaceholder := func(v string) bool {
		return len(v) >= len(Placeholder) && strings.EqualFold(v[:len(Placeholder)], Placeholder)
	}
	still := func(name, what string) {
		errs = append(errs, fmt.Errorf("%s_%s: %sstill the placeholder from .env.example; %s", Prefix, name, what, makeSecret))
	}
	if keys, err := c.Keys(); err == nil {
		for _, k := range keys {
			if isPlaceholder(k.Secret) {
				name := "API_KEYS"
				if k.Proxy {
					name = "PROXY_KEYS"
				}
				still(name, fmt.Sprintf("key %q is ", k.Name))
			}
		}
	}
	for name, v := range map[string]string{"LLM_API_KEY": c.LLMAPIKey, "EMBED_API_KEY": c.EmbedAPIKey, "TEMPORAL_API_KEY": c.TemporalAPIKey, "TOKEN_KEY": c.TokenKey} {
		if isPlaceholder(v) {
			still(name, "")
		}
	}
	if eps, err := endpoints.Parse(c.LLMEndpoints, c.LLMKeys); err == nil {
		for _, e := range eps {
			if isPlaceholder(e.APIKey) {
				still("LLM_KEYS", fmt.Sprintf("the key of endpoint %q is ", e.Name))
			}
		}
	}
	switch {
	case isPlaceholder(c.OpenWebUIJWTSecret):
		still("OPENWEBUI_JWT_SECRET", "")
	case c.OpenWebUIJWTSecret != "" && len(c.OpenWebUIJWTSecret) < MinJWTSecret:
		errs = append(errs, fmt.Errorf("%s_OPENWEBUI_JWT_SECRET: %d bytes, shorter than the %d an HS256 secret needs; %s (and give Open WebUI's FORWARD_USER_INFO_HEADER_JWT_SECRET the same)",
			Prefix, len(c.OpenWebUIJWTSecret), MinJWTSecret, makeSecret))
	}
	for _, raw := range strings.Split(c.NATSURL, ",") {
		if u, err := url.Parse(strings.TrimSpace(raw)); err == nil && u.User != nil {
			pw, _ := u.User.Password()
			if isPlaceholder(u.User.Username()) || isPlaceholder(pw) {
				still("NATS_URL", "the token or password in it is ")
				break
			}
		}
	}
	for _, db := range []struct{ name, url string }{{"DATABASE_URL", c.DatabaseURL}, {"EMBEDDED_DATABASE_URL", c.EmbeddedDatabaseURL}} {
		if u, err := url.Parse(db.url); err == nil && u.User != nil {
			if pw, _ := u.User.Password(); isPlaceholder(pw) {
				still(db.name, "the password in it is ")
			}
		}
	}
	return errs
}

// checkBudgets checks the models' prices and the budgets' grammar.
func (c Config) checkBudgets(p *problems) {
	if _, err := budget.ParsePrices(c.ModelPrices); err != nil {
		p.bad("MODEL_PRICES", "%v", err)
	}
	if _, err := budget.ParseBudgets(c.Budgets); err != nil {
		p.bad("BUDGETS", "%v", err)
	}
	if c.BudgetOutputTokens < 1 {
		p.bad("BUDGET_OUTPUT_TOKENS", "%d: must be at least 1", c.BudgetOutputTokens)
	}
}

// checkUsageOperators checks that each operator key names an API key: a
// proxy key speaks for its users, who are no operators.
func (c Config) checkUsageOperators(p *problems) {
	if len(c.UsageOperatorKeys) == 0 {
		return
	}
	keys, _ := c.Keys()
	for _, name := range c.UsageOperatorKeys {
		i := slices.IndexFunc(keys, func(k identity.Key) bool { return k.Name == name })
		if i < 0 || keys[i].Proxy {
			p.bad("USAGE_OPERATOR_KEYS", "%q is not the name of a key of LONGHAUL_API_KEYS", name)
		}
	}
}
