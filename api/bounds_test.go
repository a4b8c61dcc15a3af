package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testenv"
	"go.temporal.io/api/enums/v1"
)

// runStatus waits until run id has closed and returns how.
func runStatus(t *testing.T, env *testenv.Env, id string) enums.WorkflowExecutionStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Get returns once the run has closed, whichever way.
	_ = env.Client.GetWorkflow(ctx, id, "").Get(ctx, nil)
	d, err := env.Client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		t.Fatalf("describe %s: %v", id, err)
	}
	return d.GetWorkflowExecutionInfo().GetStatus()
}

func TestModelOutputCapEndsTheRun(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	// Ten megabytes of answer, far past the default cap of one.
	huge := llmtest.Text(strings.Repeat("x", 10<<20), llmtest.ChunkSize(64<<10))
	env.Model.SetDefault(huge)

	t.Run("stream", func(t *testing.T) {
		resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "naked", "stream": true, "messages": userMsg("say x forever")}, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status = %d", resp.StatusCode)
		}
		frames := sseData(t, resp.Body)
		var failure *api.ErrorDetail
		for _, f := range frames {
			var e api.ErrorBody
			if f != "[DONE]" && json.Unmarshal([]byte(f), &e) == nil && e.Error.Message != "" {
				failure = &e.Error
			}
		}
		if failure == nil || !strings.Contains(failure.Message, "LONGHAUL_MAX_MODEL_OUTPUT_BYTES") {
			t.Fatalf("the stream ended without an error naming the cap: %+v", failure)
		}
		if got := len(chunkText(t, frames)); got > 1<<20 {
			t.Errorf("the stream carried %d bytes of text, more than the cap", got)
		}
		if st := runStatus(t, env, resp.Header.Get(api.HeaderRunID)); st != enums.WORKFLOW_EXECUTION_STATUS_FAILED {
			t.Errorf("run status = %v, want failed (ended by the workflow, not terminated)", st)
		}
	})
	t.Run("no stream", func(t *testing.T) {
		resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "naked", "messages": userMsg("say x forever")}, nil)
		if resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("status = %d, want 502", resp.StatusCode)
		}
		e := decode[api.ErrorBody](t, resp)
		if e.Error.Code != "model_output_too_large" || !strings.Contains(e.Error.Message, "LONGHAUL_MAX_MODEL_OUTPUT_BYTES") {
			t.Errorf("error = %+v", e.Error)
		}
	})
	// Not retried: one model request per run.
	if n := huge.Calls(); n != 2 {
		t.Errorf("the model was asked %d times for two runs, want 2 (an answer too large is not retried)", n)
	}
}

func TestRequestOverTheRunPayloadLimitIs413(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	env.Model.SetDefault(llmtest.Text("ok"))
	big := strings.Repeat("lorem ipsum ", 3<<20/12) // 3 MB: under the body limit, over a payload
	tests := []struct {
		name, path string
		body       any
	}{
		{"chat", "/v1/chat/completions", chatBody{"model": "naked", "messages": userMsg(big)}},
		{"chat stream", "/v1/chat/completions", chatBody{"model": "naked", "stream": true, "messages": userMsg(big)}},
		{"chat with a chat id", "/v1/chat/completions", chatBody{"model": "naked", "messages": userMsg(big), "metadata": map[string]string{"chat_id": "c-big"}}},
		{"run input", "/v1/runs", map[string]any{"agent": "naked", "input": big}},
		{"run messages", "/v1/runs", map[string]any{"agent": "naked", "messages": userMsg(big)}},
		{"input to a run", "/v1/runs/run-1/input", map[string]any{"text": big}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := do(t, env, "POST", tt.path, tt.body, nil)
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("status = %d, want 413", resp.StatusCode)
			}
			e := decode[api.ErrorBody](t, resp)
			if e.Error.Code != "request_too_large" || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, "payload limit") || !strings.Contains(e.Error.Message, "shorten") {
				t.Errorf("error = %+v", e.Error)
			}
		})
	}
	if n := len(env.Model.Requests()); n != 0 {
		t.Errorf("the model was called %d times", n)
	}
	// Just under the limit, a run starts, and its first model call takes
	// the conversation too.
	resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "naked", "messages": userMsg(big[:1400<<10])}, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a 1.4 MiB conversation: status = %d", resp.StatusCode)
	}
	if c := decode[api.ChatCompletion](t, resp); len(c.Choices) != 1 || c.Choices[0].Message.Content != "ok" {
		t.Errorf("answer = %+v", c)
	}
}
