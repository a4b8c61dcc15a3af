package api_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/endpoints"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// query asks a run's workflow the query name, with args, and decodes the
// answer.
func query[T any](t *testing.T, env *testenv.Env, runID, name string, args ...any) T {
	t.Helper()
	v, err := env.Client.QueryWorkflow(context.Background(), runID, "", name, args...)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := v.Get(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// runState queries a run's state.
func runState(t *testing.T, env *testenv.Env, runID string) contract.RunState {
	t.Helper()
	return query[contract.RunState](t, env, runID, contract.QueryState)
}

// clockGoal is planned in clockSteps: one current_time step and the
// answer.
const clockGoal = "Tell the time in Stockholm"

var clockSteps = []map[string]any{
	{"kind": "tool", "target": "current_time", "title": "Read the clock", "arguments": map[string]any{"timezone": "Europe/Stockholm"}, "success": "a time"},
	{"kind": "completion", "title": "Answer", "input": "the time", "success": "answered"},
}

// TestModelsPerRoleSendEachRoleToItsEndpoint: an agent whose models: puts
// planning and reviews on the default endpoint and the answer on a named
// one ("remote:big", LONGHAUL_LLM_ENDPOINTS=remote=…) plans, reviews and
// answers through the real server; the two scripted models' logs show
// which did what, the remote one with its own key; the plan shows the
// answer's model, and usage is reported per model.
func TestModelsPerRoleSendEachRoleToItsEndpoint(t *testing.T) {
	remote := llmtest.New(t)
	remote.RequireKey("sk-remote")
	remote.SetDefault(llmtest.Text("It is noon in Stockholm.", llmtest.Usage(100, 7)))
	layer := fstest.MapFS{"router.md": {Data: []byte(`---
agent: router
description: Plans and reviews on the local model, answers on the remote one
mode: agentic
review_plan: true
skills: [clock]
models: {plan: llmtest, review: llmtest, answer: "remote:big"}
---
You tell the time.
`)}}
	env := testenv.Start(t, testenv.Options{
		Layers:    []fs.FS{layer},
		Endpoints: []endpoints.Endpoint{{Name: "remote", BaseURL: remote.URL(), APIKey: "sk-remote"}},
	})
	env.Model.On(llmtest.HasSchema("plan"), llmtest.JSON(map[string]any{"goal": clockGoal, "steps": clockSteps}))
	env.Model.On(func(r llmtest.Request) bool {
		return llmtest.SchemaName(r) == "plan_review" || llmtest.SchemaName(r) == "step_review"
	},
		llmtest.JSON(map[string]string{"decision": "ok", "reason": "fine"}))

	resp := doWant(t, env.URL, "POST", "/v1/chat/completions", chatBody{"model": "router", "messages": userMsg("What time is it in Stockholm?")}, nil, 200)
	body := decode[wire.ChatCompletion](t, resp)
	if len(body.Choices) != 1 || body.Choices[0].Message.Content != "It is noon in Stockholm." {
		t.Fatalf("answer = %+v, want the remote model's", body.Choices)
	}

	var local []string
	for _, r := range env.Model.Requests() {
		local = append(local, llmtest.SchemaName(r)+"/"+r.Chat.Model)
	}
	if want := []string{"plan/llmtest", "plan_review/llmtest", "step_review/llmtest"}; strings.Join(local, " ") != strings.Join(want, " ") {
		t.Errorf("default endpoint got %v, want %v", local, want)
	}
	rr := remote.Requests()
	if len(rr) != 1 {
		t.Fatalf("remote endpoint got %d requests, want the answer alone", len(rr))
	}
	if rr[0].Chat.Model != "big" || !rr[0].Chat.Stream || !strings.Contains(rr[0].SystemPrompt(), "# Answering") {
		t.Errorf("remote request: model %q, stream %v, system %q", rr[0].Chat.Model, rr[0].Chat.Stream, rr[0].SystemPrompt())
	}
	if got := rr[0].Header.Get("Authorization"); got != "Bearer sk-remote" {
		t.Errorf("remote request's Authorization = %q, want its own key", got)
	}

	runID := resp.Header.Get("X-Longhaul-Run-Id")
	st := runState(t, env, runID)
	if len(st.Plans) != 1 || st.Plans[0].Steps[1].Model != "remote:big" {
		raw, _ := json.MarshalIndent(st.Plans, "", " ")
		t.Errorf("the plan does not show the answer's model:\n%s", raw)
	}
	byModel := map[string]longhaul.Usage{}
	for _, m := range contract.ModelUsage(st.Calls) {
		byModel[m.Model] = m.Usage
	}
	if u := byModel["remote:big"]; u.PromptTokens != 100 || u.CompletionTokens != 7 {
		t.Errorf("usage of remote:big = %+v (all: %+v)", u, byModel)
	}
	if u := byModel["llmtest"]; u.TotalTokens == 0 || u.Add(byModel["remote:big"]) != st.Usage {
		t.Errorf("usage per model %+v does not add up to %+v", byModel, st.Usage)
	}
	if body.Usage == nil || *body.Usage != *wire.UsageOf(st.Usage) {
		t.Errorf("the response's usage %+v is not the run's %+v", body.Usage, st.Usage)
	}

	// The runs API reports it too, and the usage event carries it.
	run := decode[struct {
		UsageByModel []longhaul.ModelUsage `json:"usage_by_model"`
	}](t, do(t, env, "GET", "/v1/runs/"+runID, nil, nil))
	if len(run.UsageByModel) != 2 || run.UsageByModel[0].Model != "llmtest" || run.UsageByModel[1].Model != "remote:big" {
		t.Errorf("GET /v1/runs: usage_by_model = %+v", run.UsageByModel)
	}
	events := query[contract.EventsPage](t, env, runID, contract.QueryEvents, contract.EventsRequest{})
	var usage longhaul.UsageData
	for _, e := range events.Events {
		if e.Type == longhaul.EventUsage {
			if err := e.Decode(&usage); err != nil {
				t.Fatal(err)
			}
		}
	}
	if usage.Usage != st.Usage || len(usage.Models) != 2 {
		t.Errorf("usage event = %+v", usage)
	}
}

// TestAgentAnswersInTheUsersLanguage: an agent with language: auto and
// reason_in: en gets a Swedish request through Open WebUI's streamed
// request shape; one structured call detects Swedish and translates the
// request, the planner and the reviewer see English only, the answer is
// written in Swedish, and the plan and the Temporal UI show both texts.
func TestAgentAnswersInTheUsersLanguage(t *testing.T) {
	const (
		swedish = "Vad är klockan i Stockholm?"
		english = "What time is it in Stockholm?"
	)
	layer := fstest.MapFS{"tolk.md": {Data: []byte(`---
agent: tolk
description: Answers in the user's language, works in English
mode: agentic
skills: [clock]
language: auto
reason_in: en
---
You tell the time.
`)}}
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{layer}})
	env.Model.On(llmtest.HasSchema("translation"), llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		if r.LastUserMessage() != swedish {
			return llmtest.JSON(map[string]string{"language": "en", "language_name": "English", "translation": r.LastUserMessage()})
		}
		return llmtest.JSON(map[string]string{"language": "sv", "language_name": "Swedish", "translation": english})
	}))
	scriptPlan(env, clockGoal, clockSteps, "fine")
	env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		if strings.Contains(r.SystemPrompt(), "write your final answer to the user in Swedish (sv)") {
			return llmtest.Text("Klockan är tolv i Stockholm.")
		}
		return llmtest.Text("It is noon in Stockholm.")
	}))

	resp := do(t, env, "POST", "/v1/chat/completions", chatBody{
		"model": "tolk", "stream": true, "messages": userMsg(swedish),
	}, withChat(owui, "chat-sv"))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	text := chunkText(t, sseData(t, resp.Body))
	if !strings.HasSuffix(text, "Klockan är tolv i Stockholm.") {
		t.Errorf("the client did not get the answer in Swedish: %q", text)
	}

	for _, r := range env.Model.Requests() {
		name := llmtest.SchemaName(r)
		raw, _ := json.Marshal(r.Chat.Messages)
		if name == "translation" {
			if r.LastUserMessage() != swedish {
				t.Errorf("the translation call got %q", r.LastUserMessage())
			}
			continue
		}
		if strings.Contains(string(raw), "klockan i Stockholm") {
			t.Errorf("call %q saw the Swedish request: %s", name, raw)
		}
		if (name == "plan" || name == "step_review") && !strings.Contains(string(raw), english) {
			t.Errorf("call %q did not get the English request: %s", name, raw)
		}
	}

	runID := resp.Header.Get("X-Longhaul-Run-Id")
	st := runState(t, env, runID)
	if len(st.Plans) != 1 {
		t.Fatalf("plans = %d", len(st.Plans))
	}
	tr := st.Plans[0].Translation
	if tr == nil || tr.Language != "sv" || tr.Into != "en" || tr.Original != swedish || tr.Text != english {
		t.Errorf("the plan's translation = %+v", tr)
	}
	if st.Result != "Klockan är tolv i Stockholm." {
		t.Errorf("result = %q", st.Result)
	}

	// The Temporal UI: the translating activity and the answer say so.
	all := strings.Join(activitySummaries(t, env, runID), "\n")
	for _, want := range []string{"detect language, translate into en llm llmtest", "answer in sv llm"} {
		if !strings.Contains(all, want) {
			t.Errorf("no activity summary %q in:\n%s", want, all)
		}
	}
}

// TestChatAgentAnswersInTheUsersLanguage: in chat mode the tool loop
// works on the translated request and is told to answer in Swedish; the
// translation runs on the agent's translate model.
func TestChatAgentAnswersInTheUsersLanguage(t *testing.T) {
	layer := fstest.MapFS{"prat.md": {Data: []byte(`---
agent: prat
description: Chats in the user's language
skills: [clock]
models: {translate: small}
language: auto
---
You tell the time.
`)}}
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{layer}})
	env.Model.On(llmtest.HasSchema("translation"),
		llmtest.JSON(map[string]string{"language": "sv", "language_name": "Swedish", "translation": "Hello, who are you?"}))
	env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		if r.LastUserMessage() == "Hello, who are you?" && strings.Contains(r.SystemPrompt(), "in Swedish (sv)") {
			return llmtest.Text("Hej! Jag berättar vad klockan är.")
		}
		return llmtest.Text("Hello!")
	}))
	body := decode[wire.ChatCompletion](t, doWant(t, env.URL, "POST", "/v1/chat/completions", chatBody{"model": "prat", "messages": userMsg("Hej, vem är du?")}, nil, 200))
	if len(body.Choices) != 1 || body.Choices[0].Message.Content != "Hej! Jag berättar vad klockan är." {
		t.Errorf("answer = %+v", body.Choices)
	}
	var models []string
	for _, r := range env.Model.Requests() {
		models = append(models, llmtest.SchemaName(r)+"/"+r.Chat.Model)
	}
	// The chat call asks for no schema: "/llmtest".
	if want := "translation/small /llmtest"; strings.Join(models, " ") != want {
		t.Errorf("requests = %v, want the translation on small and the chat on the agent's model", models)
	}
}
