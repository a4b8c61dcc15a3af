package runsapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
)

// TestRunsErrors sends the runs API what it must refuse, each answered
// with OpenAI's error envelope naming the mistake, and none starting a run
// or disturbing one.
func TestRunsErrors(t *testing.T) {
	fake := runsfake.New()
	started := 0
	fake.OnStart = func(*runsfake.Run) { started++ }
	runsfake.Answered("finish")(fake.Add("run-done", "alice", contract.AgentInput{Agent: "naked"}))
	fake.Add("run-running", "alice", contract.AgentInput{Agent: "naked"})
	app := serve(t, fake)
	ann, bob := webtest.Alice, webtest.Bob
	done, running := "run-done", "run-running"
	yes := map[string]any{"approve": true}
	userMsg := []map[string]string{{"role": "user", "content": "hi"}}
	// 3 MB: under the body limit, over what a run takes at once.
	big := strings.Repeat("lorem ipsum ", 3<<20/12)
	const tooLarge = "payload limit): shorten"
	tests := []struct {
		name    string
		method  string
		path    string
		body    any
		headers map[string]string
		status  int
		code    string
		message string
	}{
		{"start: invalid JSON", "POST", "/v1/runs", `{"agent":`, ann, 400, "invalid_request", "invalid JSON body"},
		{"start: empty body", "POST", "/v1/runs", "", ann, 400, "invalid_request", "request body is empty"},
		{"start: trailing data", "POST", "/v1/runs", `{"agent":"naked","input":"hi"} {}`, ann, 400, "invalid_request", "data after the object"},
		{"start: unknown field", "POST", "/v1/runs", map[string]any{"agent": "naked", "input": "hi", "stream": true}, ann, 400, "invalid_request", `unknown field "stream"`},
		{"start: no agent", "POST", "/v1/runs", map[string]any{"input": "hi"}, ann, 400, "invalid_request", "agent: required"},
		{"start: no input", "POST", "/v1/runs", map[string]any{"agent": "naked"}, ann, 400, "invalid_request", "messages or input: required"},
		{"start: both", "POST", "/v1/runs", map[string]any{"agent": "naked", "input": "hi", "messages": userMsg}, ann, 400, "invalid_request", "not both"},
		{"start: empty input", "POST", "/v1/runs", map[string]any{"agent": "naked", "input": " "}, ann, 400, "invalid_request", "input: must not be empty"},
		{"start: input not a string", "POST", "/v1/runs", map[string]any{"agent": "naked", "input": 3}, ann, 400, "invalid_request", `field "input"`},
		{"start: bad role", "POST", "/v1/runs", map[string]any{"agent": "naked", "messages": []map[string]string{{"role": "robot", "content": "hi"}}}, ann, 400, "invalid_request", "messages[0].role"},
		{"start: metadata not strings", "POST", "/v1/runs", map[string]any{"agent": "naked", "input": "hi", "metadata": map[string]int{"a": 1}}, ann, 400, "invalid_request", `field "metadata"`},
		{"start: input over the payload limit", "POST", "/v1/runs", map[string]any{"agent": "naked", "input": big}, ann, 413, "request_too_large", tooLarge},
		{"start: messages over the payload limit", "POST", "/v1/runs", map[string]any{"agent": "naked", "messages": []map[string]string{{"role": "user", "content": big}}}, ann, 413, "request_too_large", tooLarge},
		{"start: unknown agent", "POST", "/v1/runs", map[string]any{"agent": "gpt-9", "input": "hi"}, ann, 404, "model_not_found", `"gpt-9" does not exist`},

		{"get: unknown run", "GET", "/v1/runs/run-nope", nil, ann, 404, "not_found", "no run run-nope"},
		{"get: another user's run", "GET", "/v1/runs/" + done, nil, bob, 404, "not_found", "no run"},

		{"list: bad status", "GET", "/v1/runs?status=sleeping", nil, ann, 400, "invalid_request", "status: must be one of"},
		{"list: limit 0", "GET", "/v1/runs?limit=0", nil, ann, 400, "invalid_request", "limit"},
		{"list: limit 101", "GET", "/v1/runs?limit=101", nil, ann, 400, "invalid_request", "limit"},
		{"list: limit not a number", "GET", "/v1/runs?limit=ten", nil, ann, 400, "invalid_request", "limit"},
		{"list: bad page token", "GET", "/v1/runs?page_token=%21%21", nil, ann, 400, "invalid_request", "page_token"},
		{"list: forged page token", "GET", "/v1/runs?page_token=Z2FyYmFnZSBnYXJiYWdl", nil, ann, 400, "invalid_request", "page_token"},
		{"list: agent with a quote", "GET", "/v1/runs?agent=na%27ked", nil, ann, 400, "invalid_request", "agent: not an agent id"},

		{"events: unknown run", "GET", "/v1/runs/run-nope/events", nil, ann, 404, "not_found", "no run"},
		{"events: another user's run", "GET", "/v1/runs/" + done + "/events", nil, bob, 404, "not_found", "no run"},
		{"events: bad Last-Event-ID", "GET", "/v1/runs/" + done + "/events", nil, map[string]string{"Authorization": ann["Authorization"], "Last-Event-ID": "x"}, 400, "invalid_request", "Last-Event-ID"},
		{"events: negative after", "GET", "/v1/runs/" + done + "/events?after=-1", nil, ann, 400, "invalid_request", "after"},

		{"cancel: unknown run", "POST", "/v1/runs/run-nope/cancel", nil, ann, 404, "not_found", "no run"},
		{"cancel: another user's run", "POST", "/v1/runs/" + running + "/cancel", nil, bob, 404, "not_found", "no run"},
		{"cancel: finished run", "POST", "/v1/runs/" + done + "/cancel", nil, ann, 409, "conflict", "already finished (completed)"},

		{"input: unknown run", "POST", "/v1/runs/run-nope/input", yes, ann, 404, "not_found", "no run"},
		{"input: another user's run", "POST", "/v1/runs/" + running + "/input", yes, bob, 404, "not_found", "no run"},
		{"input: empty body", "POST", "/v1/runs/" + running + "/input", "", ann, 400, "invalid_request", "request body is empty"},
		{"input: nothing", "POST", "/v1/runs/" + running + "/input", map[string]any{}, ann, 400, "invalid_request", `send {"approve"`},
		{"input: both", "POST", "/v1/runs/" + running + "/input", map[string]any{"approve": true, "text": "go"}, ann, 400, "invalid_request", "not both"},
		{"input: empty text", "POST", "/v1/runs/" + running + "/input", map[string]any{"text": ""}, ann, 400, "invalid_request", "text: must not be empty"},
		{"input: unknown field", "POST", "/v1/runs/" + running + "/input", map[string]any{"answer": "yes"}, ann, 400, "invalid_request", `unknown field "answer"`},
		{"input: not waiting", "POST", "/v1/runs/" + running + "/input", yes, ann, 409, "conflict", "is not waiting for input"},
		{"input: text, not waiting", "POST", "/v1/runs/" + running + "/input", map[string]any{"text": "carry on"}, ann, 409, "conflict", "is not waiting for input"},
		{"input: over the payload limit", "POST", "/v1/runs/" + running + "/input", map[string]any{"text": big}, ann, 413, "request_too_large", tooLarge},
		{"input: finished run", "POST", "/v1/runs/" + done + "/input", yes, ann, 409, "conflict", "has finished (completed)"},
	}
	// The type of the codes whose type a client acts on.
	types := map[string]string{"request_too_large": "invalid_request_error"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			webtest.WantType(t, webtest.Do(t, app, tt.method, tt.path, tt.body, tt.headers), tt.status, types[tt.code], tt.code, tt.message)
		})
	}
	// The refused input did not disturb the running run.
	st, err := fake.State(context.Background(), running)
	if info, _ := fake.Describe(context.Background(), running); err != nil || st.Status != contract.StatusRunning || info.Closed != nil || len(fake.Run(running).Inputs()) != 0 {
		t.Fatalf("running run after refused input: %+v, %v, inputs %v", st, err, fake.Run(running).Inputs())
	}
	if started != 0 {
		t.Errorf("%d runs started; the bad requests must start none", started)
	}
}
