package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// TestWorkerRollout deploys `longhaul worker` twice, as a rolling update of
// its image does, against a Temporal server, NATS and an API: build a
// makes itself current and answers a chat; build b starts, takes over as
// current, build a stops on SIGTERM, and the next chat is answered by b.
func TestWorkerRollout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	env := testenv.Start(t, testenv.Options{NoWorker: true})
	env.Model.SetDefault(llmtest.Text("Hello from a worker."))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	worker := func(build string) *process {
		return start(t, bin, []string{
			"LONGHAUL_TEMPORAL_ADDRESS=" + env.Server.FrontendAddr(),
			"LONGHAUL_TASK_QUEUE=" + testenv.TaskQueue,
			"LONGHAUL_NATS_URL=" + env.NATSURL,
			"LONGHAUL_DATABASE_URL=sqlite://" + filepath.Join(t.TempDir(), "longhaul.db"),
			"LONGHAUL_LLM_BASE_URL=" + env.Model.URL(),
			"LONGHAUL_LLM_MODEL=llmtest",
			// The scripted model has no window (the tests of windows set one).
			"LONGHAUL_LLM_CONTEXT=llmtest=16777216",
			"LONGHAUL_WORKER_BUILD_ID=" + build,
		}, "worker")
	}
	current := func(p *process) {
		t.Helper()
		for !strings.Contains(p.stderr.String(), "worker version is current") {
			select {
			case <-p.exited:
				t.Fatalf("the worker exited: %s", p.stderr.String())
			case <-ctx.Done():
				t.Fatalf("the worker's version never became current: %s", p.stderr.String())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	chat := func(chatID string) string {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"model": "naked", "messages": []map[string]string{{"role": "user", "content": "hi"}}})
		req, _ := http.NewRequestWithContext(ctx, "POST", env.URL+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-OpenWebUI-Chat-Id", chatID)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !strings.Contains(string(raw), "Hello from a worker.") {
			t.Fatalf("chat = %d %s", resp.StatusCode, raw)
		}
		return resp.Header.Get("X-Longhaul-Run-Id")
	}
	builds := func(id string) []string {
		t.Helper()
		var out []string
		it := env.Client.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if a := e.GetWorkflowTaskCompletedEventAttributes(); a != nil {
				out = append(out, a.GetDeploymentVersion().GetDeploymentName()+":"+a.GetDeploymentVersion().GetBuildId())
			}
		}
		return out
	}
	onlyOn := func(id, want string) {
		t.Helper()
		got := builds(id)
		for _, b := range got {
			if b != want {
				t.Fatalf("run %s's workflow tasks ran on %v, want all on %s", id, got, want)
			}
		}
		if len(got) == 0 {
			t.Fatalf("run %s has no completed workflow task", id)
		}
	}

	a := worker("build-a")
	current(a)
	onlyOn(chat("before"), "longhaul:build-a")

	b := worker("build-b")
	current(b)
	d, err := env.Client.WorkerDeploymentClient().GetHandle("longhaul").Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cur := d.Info.RoutingConfig.CurrentVersion; cur == nil || cur.BuildID != "build-b" {
		t.Fatalf("current version after build-b started: %+v", cur)
	}
	a.terminate(t)
	if !a.cmd.ProcessState.Success() {
		t.Fatalf("build-a after SIGTERM: %v\n%s", a.cmd.ProcessState, a.stderr.String())
	}
	onlyOn(chat("after"), "longhaul:build-b")
}
