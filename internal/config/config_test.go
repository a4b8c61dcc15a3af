package config

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

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
		HTTPAddr:             "127.0.0.1:8080",
		DataDir:              "./.longhaul",
		EmbeddedTemporalAddr: "127.0.0.1:7233",
		EmbeddedUIAddr:       "127.0.0.1:8233",
		TemporalNamespace:    "default",
		TaskQueue:            "longhaul",
		MetricsAddr:          "127.0.0.1:9464",
		WorkerActivitySlots:  1000,
		WorkerWorkflowSlots:  200,
		WorkerPollers:        8,
		WorkerDeployment:     "longhaul",
		WorkerVersioning:     "auto-upgrade",
		WorkerPromote:        true,
		NATSSubjectPrefix:    "longhaul",
		LLMBaseURL:           "http://localhost:11434/v1",
		LLMModel:             "llama3.1:8b",
		LLMTimeout:           5 * time.Minute,
		ModelIdleTimeout:     2 * time.Minute,
		MaxModelOutput:       1 << 20,
		APIKeys:              nil,
		UserIDHeader:         "X-OpenWebUI-User-Id",
		UserEmailHeader:      "X-OpenWebUI-User-Email",
		UserNameHeader:       "X-OpenWebUI-User-Name",
		UserRoleHeader:       "X-OpenWebUI-User-Role",
		UserJWTHeader:        "X-OpenWebUI-User-Jwt",
		ChatIDHeader:         "X-OpenWebUI-Chat-Id",
		MessageIDHeader:      "X-OpenWebUI-Message-Id",
		DatabaseURL:          "sqlite://.longhaul/longhaul.db",
		MaxBodyBytes:         10 << 20,
		RequestTimeout:       10 * time.Minute,
		TemporalTimeout:      10 * time.Second,
		FetchPorts:           []int{80, 443},
		MaxToolChars:         16000,
		RestoreChars:         32000,
		MemoryK:              5,
		MemoryThreshold:      0.6,
		HistoryLimit:         5000,
		LogLevel:             "info",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if !got.Embedded() || got.UIDisabled() {
		t.Errorf("Embedded() = %v, UIDisabled() = %v", got.Embedded(), got.UIDisabled())
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
		{"log level", "LONGHAUL_LOG_LEVEL", "loud", "LONGHAUL_LOG_LEVEL"},
		{"tiny body limit", "LONGHAUL_MAX_BODY_BYTES", "10", "LONGHAUL_MAX_BODY_BYTES: must be at least 1024"},
		{"ui address", "LONGHAUL_EMBEDDED_UI_ADDR", "8233", "LONGHAUL_EMBEDDED_UI_ADDR"},
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
		{"negative idle timeout", "LONGHAUL_MODEL_IDLE_TIMEOUT", "-1s", "LONGHAUL_MODEL_IDLE_TIMEOUT: must not be negative"},
		{"model output over a payload", "LONGHAUL_MAX_MODEL_OUTPUT_BYTES", "5000000", "LONGHAUL_MAX_MODEL_OUTPUT_BYTES: must be from 1024 to 1572864"},
		{"negative approval timeout", "LONGHAUL_APPROVAL_TIMEOUT", "-1m", "LONGHAUL_APPROVAL_TIMEOUT: must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv(tt.env, tt.value)
			_, err := Load()
			if err == nil {
				t.Fatalf("Load accepted %s=%q", tt.env, tt.value)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not name %q", err, tt.want)
			}
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
