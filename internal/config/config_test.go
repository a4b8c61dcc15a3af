package config

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// loadRefused sets env to value on an otherwise clear environment and
// returns Load's error, failing t unless there is one that says want.
func loadRefused(t *testing.T, env, value, want string) error {
	t.Helper()
	clearEnv(t)
	t.Setenv(env, value)
	_, err := Load()
	if err == nil {
		t.Fatalf("Load accepted %s=%q", env, value)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
	return err
}

// clearEnv removes every LONGHAUL_ variable for the test.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, Prefix+"_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

func TestDefaults(t *testing.T) {
	clearEnv(t)
	got, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		HTTPAddr:                "127.0.0.1:8080",
		DataDir:                 "./.longhaul",
		EmbeddedTemporalAddr:    "127.0.0.1:7233",
		EmbeddedUIAddr:          "127.0.0.1:8233",
		TemporalNamespace:       "default",
		TaskQueue:               "longhaul",
		WorkerActivitySlots:     1000,
		WorkerWorkflowSlots:     200,
		WorkerPollers:           8,
		WorkerDeployment:        "longhaul",
		WorkerVersioning:        "auto-upgrade",
		WorkerPromote:           true,
		NATSSubjectPrefix:       "longhaul",
		LLMBaseURL:              "http://localhost:11434/v1",
		LLMModel:                "llama3.1:8b",
		LLMTimeout:              5 * time.Minute,
		ModelIdleTimeout:        2 * time.Minute,
		ModelSilenceMax:         10 * time.Minute,
		ModelBreakerFailures:    3,
		ModelBreakerCooldown:    30 * time.Second,
		MaxModelOutput:          1 << 20,
		APIKeys:                 nil,
		OpenWebUIJWTMaxLifetime: time.Hour,
		UserIDHeader:            "X-OpenWebUI-User-Id",
		UserEmailHeader:         "X-OpenWebUI-User-Email",
		UserNameHeader:          "X-OpenWebUI-User-Name",
		UserRoleHeader:          "X-OpenWebUI-User-Role",
		UserJWTHeader:           "X-OpenWebUI-User-Jwt",
		ChatIDHeader:            "X-OpenWebUI-Chat-Id",
		MessageIDHeader:         "X-OpenWebUI-Message-Id",
		DatabaseURL:             "sqlite://.longhaul/longhaul.db",
		MaxBodyBytes:            10 << 20,
		MaxFileBytes:            50 << 20,
		EmbedBatch:              64,
		RequestTimeout:          10 * time.Minute,
		TemporalTimeout:         10 * time.Second,
		FetchPorts:              []int{80, 443},
		MaxToolChars:            16000,
		PlanParallel:            4,
		RestoreChars:            32000,
		MemoryK:                 5,
		MemoryThreshold:         0.6,
		HistoryLimit:            5000,
		MaxEmbeddings:           4,
		MaxEmbeddingsAnswer:     32 << 20,
		LogLevel:                "info",
		// Safe limits by default: a principal cannot hold the
		// engine with runs, streams or approval waits without end.
		MaxRuns:         20,
		MaxStreams:      20,
		MaxMemories:     1000,
		MaxBacklog:      200,
		MaxChats:        1000,
		ApprovalTimeout: time.Hour,
		ChatMultitask:   "interrupt",
		// A principal's files and ingestions, and the extraction child
		// process's limits, are bounded too.
		MaxFiles:       1000,
		MaxFileStorage: 1 << 30,
		MaxIngestions:  100,
		// A principal's schedules are bounded in number and frequency.
		MaxWebhooks:           20,
		BudgetOutputTokens:    4096,
		MaxSchedules:          50,
		MinScheduleInterval:   time.Minute,
		ScheduleCatchupWindow: time.Hour,
		ExtractMemory:         512 << 20,
		ExtractTimeout:        5 * time.Minute,
		ExtractConcurrency:    2,
		// Run starts queue in the API past 32 at once.
		AdmissionConcurrency: 32,
		AdmissionQueue:       2000,
		AdmissionWait:        time.Minute,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if !got.Embedded() || got.UIDisabled() {
		t.Errorf("Embedded() = %v, UIDisabled() = %v", got.Embedded(), got.UIDisabled())
	}
}

// TestEmbeddingModels: LONGHAUL_EMBED_MODELS names the models of
// /v1/embeddings, else LONGHAUL_EMBED_MODEL alone, else none.
func TestEmbeddingModels(t *testing.T) {
	for _, tt := range []struct {
		model, models string
		want          []string
	}{
		{"", "", nil},
		{"nomic-embed-text", "", []string{"nomic-embed-text"}},
		{"nomic-embed-text", "bge-m3, text-embedding-3-small,", []string{"bge-m3", "text-embedding-3-small"}},
		{"", "*", []string{"*"}},
	} {
		clearEnv(t)
		t.Setenv("LONGHAUL_EMBED_MODEL", tt.model)
		t.Setenv("LONGHAUL_EMBED_MODELS", tt.models)
		got, err := Load()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got.EmbeddingModels()); diff != "" {
			t.Errorf("EMBED_MODEL %q, EMBED_MODELS %q (-want +got):\n%s", tt.model, tt.models, diff)
		}
	}
}

func TestOverrides(t *testing.T) {
	clearEnv(t)
	t.Setenv("LONGHAUL_HTTP_ADDR", "0.0.0.0:9000")
	t.Setenv("LONGHAUL_TEMPORAL_ADDRESS", "temporal:7233")
	t.Setenv("LONGHAUL_EMBEDDED_UI_ADDR", "off")
	t.Setenv("LONGHAUL_API_KEYS", "sk-a, ci:sk-b,,")
	t.Setenv("LONGHAUL_PROXY_KEYS", "owui:sk-c")
	t.Setenv("LONGHAUL_DATABASE_URL", "postgres://u:secret@db/longhaul")
	t.Setenv("LONGHAUL_LLM_TIMEOUT", "90s")
	t.Setenv("LONGHAUL_LOG_LEVEL", "DEBUG")
	t.Setenv("LONGHAUL_WORKER_DEPLOYMENT", "off")
	t.Setenv("LONGHAUL_WORKER_VERSIONING", "Pinned")
	got, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if got.HTTPAddr != "0.0.0.0:9000" || got.Embedded() || !got.UIDisabled() || got.LLMTimeout != 90*time.Second || got.LogLevel != "debug" {
		t.Errorf("overrides not applied: %+v", got)
	}
	if got.WorkerDeployment != "" || got.WorkerVersioning != VersioningPinned {
		t.Errorf("worker deployment %q, versioning %q; want unversioned, pinned", got.WorkerDeployment, got.WorkerVersioning)
	}
	if diff := cmp.Diff([]string{"sk-a", "ci:sk-b"}, got.APIKeys); diff != "" {
		t.Errorf("API keys (-want +got):\n%s", diff)
	}
	keys, err := got.Keys()
	if err != nil || len(keys) != 3 || keys[1].Name != "ci" || keys[2].Name != "owui" || !keys[2].Proxy {
		t.Errorf("Keys() = %+v, %v", keys, err)
	}
	db, err := got.Database()
	if err != nil || db.Driver != "postgres" {
		t.Errorf("Database() = %+v, %v", db, err)
	}
}

func TestBadValues(t *testing.T) {
	tests := []struct {
		name, env, value, want string
	}{
		{"not a number", "LONGHAUL_MAX_BODY_BYTES", "lots", "LONGHAUL_MAX_BODY_BYTES"},
		{"not a duration", "LONGHAUL_REQUEST_TIMEOUT", "soon", "LONGHAUL_REQUEST_TIMEOUT"},
		{"address without port", "LONGHAUL_HTTP_ADDR", "localhost", "LONGHAUL_HTTP_ADDR: \"localhost\" is not host:port"},
		{"model url", "LONGHAUL_LLM_BASE_URL", "ftp://x", "LONGHAUL_LLM_BASE_URL"},
		{"model url password hidden", "LONGHAUL_LLM_BASE_URL", "ftp://u:pw@h/v1", "LONGHAUL_LLM_BASE_URL: \"ftp://u:xxxxx@h/v1\""},
		{"database scheme", "LONGHAUL_DATABASE_URL", "mysql://u:pw@h/db", "LONGHAUL_DATABASE_URL"},
		{"embedded database scheme", "LONGHAUL_EMBEDDED_DATABASE_URL", "sqlite:///tmp/t.db", "LONGHAUL_EMBEDDED_DATABASE_URL: \"sqlite:///tmp/t.db\": must be postgres://"},
		{"embedded database name", "LONGHAUL_EMBEDDED_DATABASE_URL", "postgres://u:pw@h:5432/", "LONGHAUL_EMBEDDED_DATABASE_URL: \"postgres://u:xxxxx@h:5432/\": must be postgres://"},
		{"log level", "LONGHAUL_LOG_LEVEL", "loud", "LONGHAUL_LOG_LEVEL"},
		{"tiny body limit", "LONGHAUL_MAX_BODY_BYTES", "10", "LONGHAUL_MAX_BODY_BYTES: must be at least 1024"},
		{"ui address", "LONGHAUL_EMBEDDED_UI_ADDR", "8233", "LONGHAUL_EMBEDDED_UI_ADDR"},
		{"embedded metrics address", "LONGHAUL_EMBEDDED_METRICS_ADDR", "9090", "LONGHAUL_EMBEDDED_METRICS_ADDR: \"9090\" is not host:port"},
		{"token key not hex", "LONGHAUL_TOKEN_KEY", "not-a-key", "LONGHAUL_TOKEN_KEY: must be 32 bytes as 64 hex digits"},
		{"token key short", "LONGHAUL_TOKEN_KEY", "00112233", "LONGHAUL_TOKEN_KEY: must be 32 bytes as 64 hex digits"},
		{"public url relative", "LONGHAUL_PUBLIC_URL", "longhaul.example.com", "LONGHAUL_PUBLIC_URL: must be an absolute http(s) URL"},
		{"tiny history limit", "LONGHAUL_HISTORY_LIMIT", "10", "LONGHAUL_HISTORY_LIMIT: must be at least 100 events"},
		{"NATS URL not nats", "LONGHAUL_NATS_URL", "http://127.0.0.1:4222", "LONGHAUL_NATS_URL: \"http://127.0.0.1:4222\" is not a nats://"},
		{"NATS URL password hidden", "LONGHAUL_NATS_URL", "nats://ann:s3cret@", "is not a nats://"},
		{"NATS subject prefix", "LONGHAUL_NATS_SUBJECT_PREFIX", "long haul", "LONGHAUL_NATS_SUBJECT_PREFIX: \"long haul\" is not a NATS subject prefix"},
		{"NATS cert without key", "LONGHAUL_NATS_TLS_CERT", "/etc/cert.pem", "LONGHAUL_NATS_TLS_CERT: NATS_TLS_CERT and NATS_TLS_KEY go together"},
		{"Temporal cert without key", "LONGHAUL_TEMPORAL_TLS_CERT", "/etc/cert.pem", "LONGHAUL_TEMPORAL_TLS_CERT: TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together"},
		{"no activity slots", "LONGHAUL_WORKER_ACTIVITY_SLOTS", "0", "LONGHAUL_WORKER_ACTIVITY_SLOTS: the WORKER_ACTIVITY_SLOTS"},
		{"more pollers than slots", "LONGHAUL_WORKER_POLLERS", "300", "LONGHAUL_WORKER_POLLERS: must not be more than the slots it fills (1000 activity, 200 workflow), got 300"},
		{"negative sticky cache", "LONGHAUL_WORKER_STICKY_CACHE", "-1", "LONGHAUL_WORKER_STICKY_CACHE: must not be negative"},
		{"deployment name with a dot", "LONGHAUL_WORKER_DEPLOYMENT", "long.haul", "LONGHAUL_WORKER_DEPLOYMENT: \"long.haul\" is not a deployment name"},
		{"reserved build id", "LONGHAUL_WORKER_BUILD_ID", "__v1", "LONGHAUL_WORKER_BUILD_ID: \"__v1\" is not a build id"},
		{"versioning behavior", "LONGHAUL_WORKER_VERSIONING", "sticky", "LONGHAUL_WORKER_VERSIONING: \"sticky\" is not auto-upgrade or pinned"},
		{"embedded NATS address", "LONGHAUL_EMBEDDED_NATS_ADDR", "4223", "LONGHAUL_EMBEDDED_NATS_ADDR: \"4223\" is not host:port"},
		{"two keys of one name", "LONGHAUL_API_KEYS", "ci:sk-a,ci:sk-b", "LONGHAUL_API_KEYS: key name \"ci\" is used twice"},
		{"header name", "LONGHAUL_USER_ID_HEADER", "X User", "LONGHAUL_USER_ID_HEADER: \"X User\" is not an HTTP header name"},
		{"negative run limit", "LONGHAUL_MAX_RUNS", "-1", "LONGHAUL_MAX_RUNS: must not be negative"},
		{"negative schedule limit", "LONGHAUL_MAX_SCHEDULES", "-1", "LONGHAUL_MAX_SCHEDULES: must not be negative"},
		{"sub-second schedule interval", "LONGHAUL_MIN_SCHEDULE_INTERVAL", "500ms", "LONGHAUL_MIN_SCHEDULE_INTERVAL: must be at least 1s"},
		{"short catch-up window", "LONGHAUL_SCHEDULE_CATCHUP_WINDOW", "5s", "LONGHAUL_SCHEDULE_CATCHUP_WINDOW: must be at least 10s"},
		{"negative embeddings limit", "LONGHAUL_MAX_EMBEDDINGS", "-1", "LONGHAUL_MAX_EMBEDDINGS: must not be negative"},
		{"tiny embeddings answer", "LONGHAUL_MAX_EMBEDDINGS_BYTES", "10", "LONGHAUL_MAX_EMBEDDINGS_BYTES: must be at least 1024"},
		{"negative idle timeout", "LONGHAUL_MODEL_IDLE_TIMEOUT", "-1s", "LONGHAUL_MODEL_IDLE_TIMEOUT: must not be negative"},
		{"model output over a payload", "LONGHAUL_MAX_MODEL_OUTPUT_BYTES", "5000000", "LONGHAUL_MAX_MODEL_OUTPUT_BYTES: must be from 1024 to 1572864"},
		{"negative conversation cap", "LONGHAUL_MAX_CONVERSATIONS", "-1", "LONGHAUL_MAX_CONVERSATIONS: must not be negative"},
		{"negative memory cap", "LONGHAUL_MAX_MEMORIES", "-1", "LONGHAUL_MAX_MEMORIES: must not be negative"},
		{"no embed batch", "LONGHAUL_EMBED_BATCH", "0", "LONGHAUL_EMBED_BATCH: must be between 1 and 2048"},
		{"embed batch over the API's", "LONGHAUL_EMBED_BATCH", "2049", "LONGHAUL_EMBED_BATCH: must be between 1 and 2048"},
		{"no backlog", "LONGHAUL_MAX_BACKLOG_ITEMS", "0", "LONGHAUL_MAX_BACKLOG_ITEMS: must be between 1 and 100000"},
		{"negative approval timeout", "LONGHAUL_APPROVAL_TIMEOUT", "-1m", "LONGHAUL_APPROVAL_TIMEOUT: must not be negative"},
		{"no token lifetime", "LONGHAUL_OPENWEBUI_JWT_MAX_LIFETIME", "0s", "LONGHAUL_OPENWEBUI_JWT_MAX_LIFETIME: must be positive"},
		{"usage operator no key", "LONGHAUL_USAGE_OPERATOR_KEYS", "ops", "LONGHAUL_USAGE_OPERATOR_KEYS: \"ops\" is not the name of a key of LONGHAUL_API_KEYS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := loadRefused(t, tt.env, tt.value, tt.want)
			if strings.Contains(err.Error(), "pw@") || strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error leaks a password: %q", err)
			}
		})
	}
}

func TestUsageListsEverySetting(t *testing.T) {
	var b bytes.Buffer
	if err := Usage(&b); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"LONGHAUL_HTTP_ADDR", "LONGHAUL_DATA_DIR", "LONGHAUL_TEMPORAL_ADDRESS", "LONGHAUL_LLM_BASE_URL", "LONGHAUL_API_KEYS", "LONGHAUL_DATABASE_URL", "127.0.0.1:8080"} {
		if !strings.Contains(b.String(), v) {
			t.Errorf("usage lacks %s:\n%s", v, b.String())
		}
	}
}

// TestOnlyPrefixedNames sets the bare names of settings, as other programs'
// environments do (the Temporal CLI's TEMPORAL_ADDRESS, a DATABASE_URL),
// and checks that Load reads none of them.
func TestOnlyPrefixedNames(t *testing.T) {
	clearEnv(t)
	for k, v := range map[string]string{
		"TEMPORAL_ADDRESS":   "elsewhere:7233",
		"TEMPORAL_NAMESPACE": "theirs",
		"HTTP_ADDR":          "0.0.0.0:1",
		"DATABASE_URL":       "postgres://u:pw@db/other",
		"NATS_URL":           "nats://elsewhere:4222",
		"LLM_BASE_URL":       "http://elsewhere/v1",
		"API_KEYS":           "someone:else",
		"LOG_LEVEL":          "loud",
		"METRICS_ADDR":       "0.0.0.0:2",
	} {
		t.Setenv(k, v)
	}
	got, err := Load()
	if err != nil {
		t.Fatalf("Load read a bare name: %v", err)
	}
	if !got.Embedded() || got.TemporalNamespace != "default" || got.HTTPAddr != "127.0.0.1:8080" || got.NATSURL != "" ||
		got.LLMBaseURL != "http://localhost:11434/v1" || len(got.APIKeys) != 0 || got.LogLevel != "info" ||
		!strings.HasPrefix(got.DatabaseURL, "sqlite://") || got.MetricsAddr != "" {
		t.Errorf("Load read bare names: %+v", got)
	}
	// Every field's name is the whole variable, so none can fall back to
	// its bare name.
	rt := reflect.TypeOf(Config{})
	for i := range rt.NumField() {
		if name := rt.Field(i).Tag.Get("envconfig"); !strings.HasPrefix(name, Prefix+"_") {
			t.Errorf("field %s reads %q, not a %s_ name", rt.Field(i).Name, name, Prefix)
		}
	}
}

// TestPlaceholderSecrets checks that every secret still set to one of
// .env.example's placeholders (any case), and a JWT secret too short to
// sign with, stops start-up with the setting's name and how to make a
// secret, and that no message repeats the secret.
func TestPlaceholderSecrets(t *testing.T) {
	const how = "make one with `openssl rand -hex 32`"
	tests := []struct {
		name, env, value, want string
	}{
		{"proxy key", "LONGHAUL_PROXY_KEYS", "openwebui:change-me-proxy-key", `LONGHAUL_PROXY_KEYS: key "openwebui" is still the placeholder from .env.example; ` + how},
		{"bare API key", "LONGHAUL_API_KEYS", "ci:sk-real-one,Change-Me-too", `LONGHAUL_API_KEYS: key "key-`},
		{"JWT secret placeholder", "LONGHAUL_OPENWEBUI_JWT_SECRET", "change-me-jwt-secret-of-at-least-32-bytes", "LONGHAUL_OPENWEBUI_JWT_SECRET: still the placeholder from .env.example; " + how},
		{"short JWT secret", "LONGHAUL_OPENWEBUI_JWT_SECRET", "tooshort-secret", "LONGHAUL_OPENWEBUI_JWT_SECRET: 15 bytes, shorter than the 32 an HS256 secret needs; " + how},
		{"model key", "LONGHAUL_LLM_API_KEY", "CHANGE-ME", "LONGHAUL_LLM_API_KEY: still the placeholder"},
		{"embedder key", "LONGHAUL_EMBED_API_KEY", "change-me-embed", "LONGHAUL_EMBED_API_KEY: still the placeholder"},
		{"Temporal key", "LONGHAUL_TEMPORAL_API_KEY", "change-me-temporal", "LONGHAUL_TEMPORAL_API_KEY: still the placeholder"},
		{"NATS token", "LONGHAUL_NATS_URL", "nats://change-me-nats-token@nats:4222", "LONGHAUL_NATS_URL: the token or password in it is still the placeholder"},
		{"NATS password", "LONGHAUL_NATS_URL", "nats://a:s3@n1:4222,nats://longhaul:change-me-nats@n2:4222", "LONGHAUL_NATS_URL: the token or password in it is still the placeholder"},
		{"token key", "LONGHAUL_TOKEN_KEY", "change-me-token-key", "LONGHAUL_TOKEN_KEY: still the placeholder from .env.example; " + how},
		{"database password", "LONGHAUL_DATABASE_URL", "postgres://longhaul:change-me-postgres@postgres:5432/longhaul", "LONGHAUL_DATABASE_URL: the password in it is still the placeholder from .env.example; " + how},
		{"embedded database password", "LONGHAUL_EMBEDDED_DATABASE_URL", "postgres://temporal:change-me-postgres@postgres:5432/temporal", "LONGHAUL_EMBEDDED_DATABASE_URL: the password in it is still the placeholder from .env.example; " + how},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := loadRefused(t, tt.env, tt.value, tt.want)
			for _, secret := range []string{"change-me-", "CHANGE-ME", "Change-Me", "tooshort", "s3@"} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error repeats the secret (%q): %q", secret, err)
				}
			}
		})
	}
	// Real secrets, and the same words later in a value, pass.
	clearEnv(t)
	t.Setenv("LONGHAUL_PROXY_KEYS", "openwebui:9f86d081884c7d659a2feaa0c55ad015")
	t.Setenv("LONGHAUL_API_KEYS", "ci:sk-do-not-change-me")
	t.Setenv("LONGHAUL_OPENWEBUI_JWT_SECRET", strings.Repeat("ab", 16))
	t.Setenv("LONGHAUL_NATS_URL", "nats://9f86d081884c7d65@nats:4222")
	t.Setenv("LONGHAUL_DATABASE_URL", "postgres://longhaul:9f86d081884c@postgres/longhaul")
	if _, err := Load(); err != nil {
		t.Fatalf("Load refused real secrets: %v", err)
	}
}
