// Package thinking runs thinking models through the whole stack: the
// scripted model speaks each server's dialect (Ollama's delta.reasoning,
// vLLM's, a server that leaves <think> in the content), and every API
// shows the thought apart from the answer: Open WebUI's chat stream as
// reasoning_content, the Responses API as a reasoning item, the runs API as
// reasoning_delta events and the content event's reasoning.
package thinking

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/owuitest"
	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

const thought = "Two and two make four; say it plainly."

// chatStream reads a chat completion stream to [DONE]: its reasoning and
// its content, each concatenated.
func chatStream(t *testing.T, resp *http.Response) (reasoning, content string) {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var r, c strings.Builder
	rd := ssetest.NewReader(resp.Body)
	for {
		e, err := rd.Next()
		if err != nil {
			t.Fatalf("stream ended without [DONE] (reasoning %q, content %q): %v", r.String(), c.String(), err)
		}
		if e.Data == ssetest.Done {
			return r.String(), c.String()
		}
		var ch wire.ChatChunk
		if json.Unmarshal([]byte(e.Data), &ch) != nil {
			continue // an Open WebUI status frame
		}
		for _, choice := range ch.Choices {
			if choice.Delta.ReasoningContent != "" && c.Len() > 0 {
				t.Errorf("reasoning after the answer began: %s", e.Data)
			}
			r.WriteString(choice.Delta.ReasoningContent)
			c.WriteString(choice.Delta.Content)
		}
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestOpenWebUIShowsOllamaThinking: a streamed Open WebUI turn on Ollama's
// dialect (the thought in delta.reasoning chunks of its own): the thought
// reaches Open WebUI as reasoning_content, the field its middleware shows
// as thinking, and never as content. The next turn, whose history carries
// the answer as Open WebUI keeps it (its reasoning block first), sends the
// model the answer alone.
func TestOpenWebUIShowsOllamaThinking(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	env.Model.SetFlavour(llmtest.FlavourOllama)
	env.Model.Enqueue(llmtest.Text("Four.", llmtest.Reasoning(thought), llmtest.ChunkSize(4)))
	env.Model.Enqueue(llmtest.Text("Eight."))

	conn := &owuitest.Connection{BaseURL: env.URL + "/v1", ForwardUserInfo: true, Headers: owuitest.ForwardMessageID()}
	ch := conn.NewChat(owuitest.User{ID: "u1", Email: "ada@example.com", Name: "Ada", Role: "user"}, "naked")
	resp, err := ch.Ask("What is 2+2?").Send(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	reasoning, content := chatStream(t, resp)
	if reasoning != thought || content != "Four." {
		t.Fatalf("reasoning_content %q, content %q; want %q, %q", reasoning, content, thought, "Four.")
	}

	// Open WebUI keeps the answer with its reasoning block before it.
	ch.Answer("<details type=\"reasoning\" done=\"true\" duration=\"1\">\n<summary>Thought for 1 seconds</summary>\n> " + thought + "\n</details>\nFour.")
	resp, err = ch.Ask("And 4+4?").Send(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, content := chatStream(t, resp); content != "Eight." {
		t.Fatalf("second answer %q", content)
	}
	reqs := env.Model.Requests()
	last := reqs[len(reqs)-1]
	for _, m := range last.Chat.Messages {
		if strings.Contains(m.Content, "Two and two") || strings.Contains(m.Content, "<details") {
			t.Errorf("the model got the thought back as content: %+v", m)
		}
	}
}

// post sends a JSON body to the API.
func post(t *testing.T, env *testenv.Env, path string, body any) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctxFor(t), "POST", env.URL+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestResearcherThinks: the researcher (plan, a tool step, reviews, the
// answer) on a model whose server leaves its thought in the content,
// before every answer: the plan and the review still read as JSON, the
// run completes its plan, and the stream shows each streamed thought as
// reasoning_content and none of it in the answer.
func TestResearcherThinks(t *testing.T) {
	page, fetch := testenv.Site(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>Pelicans</title></head><body><article><h1>Pelicans</h1>
<p>The Australian pelican has the longest bill of any living bird, up to 47 cm.</p></article></body></html>`)
	}))
	env := testenv.Start(t, testenv.Options{Fetch: fetch})
	env.Model.SetFlavour(llmtest.FlavourThinkTags)
	pageURL := page + "/pelicans"
	env.Model.On(llmtest.HasSchema("plan"), llmtest.JSON(map[string]any{
		"goal": "Say which bird has the longest bill, with a source",
		"steps": []map[string]any{
			{"kind": "tool", "target": "web_fetch", "title": "Read the pelican page", "arguments": map[string]any{"url": pageURL, "max_chars": nil}, "success": "the page names the bill length"},
			{"kind": "completion", "title": "Answer with the citation", "input": "the bird, the length, the URL", "success": "cited"},
		},
	}, llmtest.Reasoning("A plan: {read the page}, then {answer}.")))
	env.Model.On(llmtest.HasSchema("step_review"), llmtest.JSON(map[string]string{"decision": "ok", "reason": "the page gives the length"},
		llmtest.Reasoning("Does {the step} hold? Yes.")))
	env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		if !strings.Contains(r.SystemPrompt(), "47 cm") {
			return llmtest.Text("the findings are missing from the prompt")
		}
		return llmtest.Text("The Australian pelican has the longest bill, up to 47 cm ["+pageURL+"].",
			llmtest.Reasoning("The page says 47 cm; cite it."), llmtest.ChunkSize(5))
	}))

	resp := post(t, env, "/v1/chat/completions", map[string]any{
		"model": "researcher", "stream": true,
		"messages": []map[string]string{{"role": "user", "content": "Which bird has the longest bill?"}},
	})
	runID := resp.Header.Get("X-Longhaul-Run-Id")
	reasoning, content := chatStream(t, resp)
	if !strings.Contains(reasoning, "The page says 47 cm; cite it.") {
		t.Errorf("the answer's thought is not in reasoning_content: %q", reasoning)
	}
	if !strings.Contains(content, "up to 47 cm ["+pageURL+"]") || strings.Contains(content, "think>") || strings.Contains(content, "cite it") {
		t.Errorf("answer %q", content)
	}
	st := runState(t, env, runID)
	if st.Status != "completed" || st.Mode != "agentic" {
		t.Errorf("run %s: status %s, mode %s", runID, st.Status, st.Mode)
	}
}

// runState reads a run through the runs API.
func runState(t *testing.T, env *testenv.Env, id string) wire.Run {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctxFor(t), "GET", env.URL+"/v1/runs/"+id, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r wire.Run
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestResponsesAndRunsShowReasoning: on vLLM's dialect, the Responses
// API streams the thought as a reasoning item (reasoning_text deltas)
// before the message, and the runs API has it as reasoning_delta events
// while the call runs and in the durable content event, never in its
// text; resuming the run's events from an id inside the thought gives the
// rest of it, then the text.
func TestResponsesAndRunsShowReasoning(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	env.Model.SetFlavour(llmtest.FlavourVLLM)
	env.Model.SetDefault(llmtest.Text("Four.", llmtest.Reasoning(thought), llmtest.ChunkSize(6)))

	resp := post(t, env, "/v1/responses", map[string]any{"model": "naked", "input": "What is 2+2?", "stream": true})
	if resp.StatusCode != 200 {
		t.Fatalf("responses: status %d", resp.StatusCode)
	}
	var types []string
	var reasoning strings.Builder
	var final wire.Response
	rd := ssetest.NewReader(resp.Body)
	for {
		e, err := rd.Next()
		if err != nil {
			break
		}
		var ev wire.StreamEvent
		if json.Unmarshal([]byte(e.Data), &ev) != nil {
			continue
		}
		types = append(types, ev.Type)
		if ev.Type == "response.reasoning_text.delta" {
			reasoning.WriteString(*ev.Delta)
		}
		if ev.Type == "response.completed" {
			final = *ev.Response
			break
		}
	}
	resp.Body.Close()
	if reasoning.String() != thought {
		t.Errorf("reasoning_text deltas make %q (events %v)", reasoning.String(), types)
	}
	if len(final.Output) != 2 || final.Output[0].Type != "reasoning" || final.Output[1].Type != "message" ||
		final.Output[0].Content == nil || (*final.Output[0].Content)[0].Text != thought || (*final.Output[1].Content)[0].Text != "Four." {
		raw, _ := json.Marshal(final.Output)
		t.Errorf("response output %s", raw)
	}

	// The runs API.
	resp = post(t, env, "/v1/runs", map[string]any{"agent": "naked", "input": "What is 2+2?"})
	var created wire.RunCreated
	if err := json.NewDecoder(resp.Body).Decode(&created); err != nil || created.ID == "" {
		t.Fatalf("run: %v %+v", err, created)
	}
	resp.Body.Close()
	// Read from the start once the run ended: the content event alone
	// has the call's output, its thought apart from its text.
	_, _, content, before := readRun(t, runEvents(t, env, created.ID, ""))
	if content.Reasoning != thought || content.Text != "Four." {
		t.Fatalf("runs API: content event %+v", content)
	}
	// A follower that had read five bytes of the thought live resumes
	// with their id: the rest of the thought, then the text, as deltas.
	r, x, _, _ := readRun(t, runEvents(t, env, created.ID, before+":5"))
	if r != thought[5:] || x != "Four." {
		t.Errorf("resumed at %s:5: reasoning %q, text %q", before, r, x)
	}
}

// readRun reads a run's events: its reasoning and text deltas, each
// concatenated, its content event, and the id of the durable event before
// it ("0" for none).
func readRun(t *testing.T, evs []ssetest.Event) (reasoning, text string, content longhaul.ContentData, before string) {
	t.Helper()
	var r, x strings.Builder
	last := "0"
	for _, e := range evs {
		var ev longhaul.Event
		if json.Unmarshal([]byte(e.Data), &ev) != nil {
			continue
		}
		var d longhaul.Delta
		switch longhaul.EventType(e.Event) {
		case longhaul.EventReasoningDelta:
			if ev.Decode(&d) == nil {
				r.WriteString(d.Text)
			}
		case longhaul.EventContentDelta:
			if ev.Decode(&d) == nil {
				x.WriteString(d.Text)
			}
		case longhaul.EventContent:
			if ev.Decode(&content) == nil && before == "" {
				before = last
			}
		}
		if e.ID != "" && !strings.Contains(e.ID, ":") {
			last = e.ID
		}
	}
	return r.String(), x.String(), content, before
}

// runEvents reads a run's events to done, from Last-Event-ID last.
func runEvents(t *testing.T, env *testenv.Env, id, last string) []ssetest.Event {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctxFor(t), "GET", env.URL+"/v1/runs/"+id+"/events", nil)
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []ssetest.Event
	rd := ssetest.NewReader(resp.Body)
	for {
		e, err := rd.Next()
		if err != nil {
			return out
		}
		out = append(out, e)
		if e.Event == string(longhaul.EventDone) {
			return out
		}
	}
}
