package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// TestMetricsEndpoint runs `longhaul dev` with its metrics endpoint on,
// has one chat call a tool and another stream its answer, and reads
// /metrics as Prometheus would: the API's series, the engine's (runs,
// model calls and tokens, tool calls) and the Temporal SDK's own, in a
// text format `promtool check metrics` accepts.
func TestMetricsEndpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	model := llmtest.New(t)
	model.On(func(r llmtest.Request) bool {
		last := r.Chat.Messages[len(r.Chat.Messages)-1]
		return last.Role == "user" && strings.Contains(r.LastUserMessage(), "time")
	},
		llmtest.ToolCalls(llmtest.ToolCall{Name: "current_time", Arguments: `{}`}).With(llmtest.Usage(40, 5)))
	// The streamed chat's first attempt fails, so a retry is counted.
	model.On(func(r llmtest.Request) bool { return r.Streaming() && strings.Contains(r.LastUserMessage(), "story") },
		llmtest.FailTimes(1, http.StatusInternalServerError, llmtest.Text("Once upon a time.", llmtest.Usage(10, 4))))
	model.On(func(llmtest.Request) bool { return true }, llmtest.Text("It is time for tea.", llmtest.Usage(60, 7)))
	api, metricsAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	p := start(t, bin, devEnv(t, api, model.URL(), "LONGHAUL_METRICS_ADDR="+metricsAddr), "dev")
	url := "http://" + api
	waitReady(t, p, url)

	body, _ := json.Marshal(map[string]any{"model": "assistant", "messages": []map[string]string{{"role": "user", "content": "What time is it?"}}})
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("chat = %d", resp.StatusCode)
	}
	sresp, err := streamChat(url, "metrics-chat")
	if err != nil {
		t.Fatal(err)
	}
	if _, done := contentOf(t, sresp, 0); !done {
		t.Fatal("the stream did not end with [DONE]")
	}
	sresp.Body.Close()
	if resp, err := http.Get(url + "/v1/nowhere"); err == nil {
		resp.Body.Close()
	}

	mresp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{
		`longhaul_http_requests_total{code="200",method="POST",route="/v1/chat/completions"} 2`,
		`longhaul_http_requests_total{code="404",method="GET",route="unmatched"} 1`,
		`longhaul_http_request_duration_seconds_count{method="POST",route="/v1/chat/completions"} 2`,
		`longhaul_chat_time_to_first_token_seconds_count{model="naked"} 1`,
		`longhaul_open_streams{kind="chat"} 0`,
		`longhaul_runs_waiting 0`,
		`agent="assistant"`, `outcome="completed"`,
		`longhaul_runs_total{`,
		`longhaul_model_calls_total{`,
		`longhaul_model_tokens_total{`,
		`longhaul_model_retries_total{`,
		`direction="in"`,
		`longhaul_tool_calls_total{`,
		`tool="current_time"`,
		`temporal_workflow_completed_total{`,
		`temporal_request_total{`,
		// OpenTelemetry's GenAI client metrics, beside Longhaul's own.
		`gen_ai_client_token_usage_bucket{`,
		`gen_ai_token_type="input"`,
		`gen_ai_client_operation_duration_seconds_bucket{`,
		`gen_ai_operation_name="chat"`,
		`gen_ai_provider_name="openai"`,
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("no %s in the metrics", want)
		}
	}
	// Every series the Grafana dashboard plots is one the process exports.
	b, err := os.ReadFile("../../deploy/grafana/longhaul.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("deploy/grafana/longhaul.json: %v", err)
	}
	plotted := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, name := range seriesName.FindAllString(tg.Expr, -1) {
				plotted++
				if !strings.Contains(string(text), "\n"+name+"{") && !strings.Contains(string(text), "\n"+name+" ") {
					t.Errorf("the dashboard's %q plots %s, which the metrics do not have", p.Title, name)
				}
			}
		}
	}
	if plotted < 15 {
		t.Errorf("the dashboard plots %d series", plotted)
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", grepLonghaul(string(text)))
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		proctest.Missing(t, "promtool is not installed: make test-deps installs Debian's prometheus")
	}
	check := exec.Command(promtool, "check", "metrics")
	check.Stdin = bytes.NewReader(text)
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// seriesName matches the names of Longhaul's and Temporal's series in PromQL.
var seriesName = regexp.MustCompile(`\b(longhaul|temporal)_[a-z0-9_]+`)

// grepLonghaul is the longhaul_ lines of a metrics text.
func grepLonghaul(text string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "longhaul_") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
