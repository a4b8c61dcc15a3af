package chatapi

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
)

func ev(t longhaul.EventType, payload any) longhaul.Event {
	return longhaul.NewEvent(t, time.Time{}, payload)
}

// delta is an ephemeral piece of a call's text.
func delta(call, text string) longhaul.Event {
	return ev(longhaul.EventContentDelta, longhaul.Delta{Kind: longhaul.DeltaContent, Call: call, Text: text})
}

// content is the durable whole text of a finished call.
func content(call, text string) longhaul.Event {
	return ev(longhaul.EventContent, longhaul.ContentData{Call: call, Text: text})
}

// frames renders events and the finish, each frame as compact JSON.
func frames(t *testing.T, r *renderer, events []longhaul.Event, includeUsage bool) []string {
	t.Helper()
	var out []string
	add := func(fs []any) {
		for _, f := range fs {
			b, err := json.Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		}
	}
	for _, e := range events {
		add(r.render(e))
	}
	add(r.finishFrames(includeUsage))
	return out
}

const chunkHead = `{"id":"c1","object":"chat.completion.chunk","created":7,"model":"assistant",`

// The frames of an answer: its first piece (with the role), a later one,
// and the finish.
func first(text string) string {
	return chunkHead + `"choices":[{"index":0,"delta":{"role":"assistant","content":"` + text + `"},"finish_reason":null}]}`
}

func more(text string) string {
	return chunkHead + `"choices":[{"index":0,"delta":{"content":"` + text + `"},"finish_reason":null}]}`
}

const stop = chunkHead + `"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`

// reset is a call's retry, and completed the run's end.
func reset(attempt int) longhaul.Event {
	return ev(longhaul.EventContentReset, longhaul.ContentResetData{Call: "turn-1", Attempt: attempt})
}

var completed = ev(longhaul.EventDone, longhaul.DoneData{Status: "completed"})

func TestRenderFrames(t *testing.T) {
	toolRun := []longhaul.Event{
		ev(longhaul.EventToolStart, longhaul.ToolStartData{ToolCallID: "call_1", Name: "web_fetch", Arguments: `{"url":"https://a.test"}`, Target: "a.test"}),
		ev(longhaul.EventToolStatus, longhaul.ToolStatusData{ToolCallID: "call_1", Name: "web_fetch", Message: "reading", Progress: 0.5}),
		ev(longhaul.EventToolOutput, longhaul.ToolOutputData{ToolCallID: "call_1", Name: "web_fetch", Output: "page"}),
		delta("turn-2", "Hi"),
		delta("turn-2", " there"),
		content("turn-2", "Hi there"),
		ev(longhaul.EventUsage, longhaul.Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}),
		ev(longhaul.EventDone, longhaul.DoneData{Status: "completed", FinishReason: "stop"}),
	}
	card := `\n\u003cdetails type=\"tool_calls\" done=\"true\" id=\"call_1\" name=\"web_fetch\" arguments=\"\u0026#34;{\\\u0026#34;url\\\u0026#34;:\\\u0026#34;https://a.test\\\u0026#34;}\u0026#34;\" result=\"\u0026#34;page\u0026#34;\" files=\"\" embeds=\"\"\u003e\n\u003csummary\u003eTool Executed\u003c/summary\u003e\n\u003c/details\u003e\n`
	tests := []struct {
		name         string
		openWebUI    bool
		includeUsage bool
		events       []longhaul.Event
		want         []string
	}{
		{
			name:   "plain client sees text only",
			events: toolRun,
			want:   []string{first("Hi"), more(" there"), stop},
		},
		{
			name: "plain client with usage", includeUsage: true, events: toolRun,
			want: []string{
				first("Hi"),
				more(" there"),
				stop,
				chunkHead + `"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`,
			},
		},
		{
			name: "open webui sees status and cards", openWebUI: true, events: toolRun,
			want: []string{
				`{"event":{"type":"status","data":{"description":"Running web_fetch · a.test","done":false}}}`,
				`{"event":{"type":"status","data":{"description":"web_fetch: reading (50%)","done":false}}}`,
				chunkHead + `"choices":[{"index":0,"delta":{"role":"assistant","content":"` + card + `"},"finish_reason":null}]}`,
				more("Hi"),
				more(" there"),
				`{"event":{"type":"status","data":{"description":"Used 1 tool call","done":true}}}`,
				stop,
			},
		},
		{
			name: "a retried call does not repeat what was shown",
			events: []longhaul.Event{
				delta("turn-1", "Hel"),
				reset(2),
				delta("turn-1", "He"),
				delta("turn-1", "llo"),
				content("turn-1", "Hello"),
				completed,
			},
			want: []string{first("Hel"), more("lo"), stop},
		},
		{
			name: "a retried call that says something else starts a new paragraph",
			events: []longhaul.Event{
				delta("turn-1", "Yes"),
				reset(2),
				delta("turn-1", "No"),
				content("turn-1", "No"),
				completed,
			},
			want: []string{first("Yes"), more(`\n\nNo`), stop},
		},
		{
			name: "a call retried twice still shows each piece once",
			events: []longhaul.Event{
				delta("turn-1", "Hello wo"),
				reset(2),
				delta("turn-1", "Hel"),
				reset(3),
				delta("turn-1", "Hello"),
				delta("turn-1", " world"),
				content("turn-1", "Hello world"),
				completed,
			},
			want: []string{first("Hello wo"), more("rld"), stop},
		},
		{
			name: "the whole text brings what the deltas did not",
			events: []longhaul.Event{
				delta("turn-1", "Hel"),
				content("turn-1", "Hello world"),
				completed,
			},
			want: []string{first("Hel"), more("lo world"), stop},
		},
		{
			name: "without deltas the whole text arrives at once",
			events: []longhaul.Event{
				content("turn-1", "Hello world"),
				completed,
			},
			want: []string{first("Hello world"), stop},
		},
		{
			name: "whole text that differs from the deltas shown starts a new paragraph",
			events: []longhaul.Event{
				delta("turn-1", "Yes"),
				content("turn-1", "No"),
				completed,
			},
			want: []string{first("Yes"), more(`\n\nNo`), stop},
		},
		{
			name: "a failed run ends with an error frame",
			events: []longhaul.Event{
				ev(longhaul.EventError, longhaul.ErrorData{Message: "model endpoint answered 400: bad", Code: "ModelRejected"}),
				ev(longhaul.EventDone, longhaul.DoneData{Status: "failed"}),
			},
			want: []string{`{"error":{"message":"model endpoint answered 400: bad","type":"server_error","param":null,"code":"modelrejected"}}`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRenderer("c1", "assistant", 7, tt.openWebUI)
			got := frames(t, r, tt.events, tt.includeUsage)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("frames (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderAgenticEvents(t *testing.T) {
	plan := longhaul.Plan{Revision: 2, Reason: "the page was empty", Goal: "Find <the> length", Steps: []longhaul.PlanStep{
		{ID: "1", Kind: longhaul.StepTool, Target: "web_fetch", Title: "Read the page", Status: longhaul.StepDone},
		{ID: "3", Kind: longhaul.StepCompletion, Title: "Answer", Status: longhaul.StepPending},
	}}
	events := []longhaul.Event{
		ev(longhaul.EventPlan, plan),
		ev(longhaul.EventStepStart, longhaul.StepStartData{StepID: "3", Index: 2, Total: 2, Kind: longhaul.StepCompletion, Title: "Answer"}),
		ev(longhaul.EventReview, longhaul.ReviewData{StepID: "1", Decision: longhaul.ReviewOK, Reason: "fine"}),
		ev(longhaul.EventReview, longhaul.ReviewData{StepID: "1", Decision: longhaul.ReviewAdjust, Reason: "empty page", Forced: true}),
		ev(longhaul.EventSkillActivity, longhaul.SkillActivityData{Skill: "web_reading", Message: "calling web_fetch a.test"}),
	}
	got := frames(t, newRenderer("c1", "assistant", 7, true), events, false)
	block := "<details type=\"plan\" done=\"true\">\n<summary>Revised plan (v2) · 2 steps</summary>\n\n**Goal:** Find &lt;the&gt; length\n\n" +
		"_Why:_ the page was empty\n\n1. Read the page (`web_fetch`) ✓\n2. Answer\n\n</details>\n\n"
	blockJSON, _ := json.Marshal(block)
	want := []string{
		`{"event":{"type":"status","data":{"description":"Planned 2 steps","done":false}}}`,
		chunkHead + `"choices":[{"index":0,"delta":{"role":"assistant","content":` + string(blockJSON) + `},"finish_reason":null}]}`,
		`{"event":{"type":"status","data":{"description":"Step 2/2: Answer","done":false}}}`,
		`{"event":{"type":"status","data":{"description":"Continuing with the current plan (no re-plans left): empty page","done":false}}}`,
		`{"event":{"type":"status","data":{"description":"web_reading: calling web_fetch a.test","done":false}}}`,
		stop,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Open WebUI frames (-want +got):\n%s", diff)
	}
	// Plain clients see none of it.
	plain := frames(t, newRenderer("c1", "assistant", 7, false), events, false)
	if len(plain) != 1 {
		t.Errorf("plain client got %d frames, want only the finish: %q", len(plain), plain)
	}
}

func TestRenderMemoryEvents(t *testing.T) {
	events := []longhaul.Event{
		ev(longhaul.EventMemoryRecall, longhaul.MemoryRecallData{Count: 3, Memories: []longhaul.MemoryItem{{ID: "mem_1", Text: "a"}, {ID: "mem_2", Text: "b"}, {ID: "mem_3", Text: "c"}}}),
		ev(longhaul.EventMemorySaved, longhaul.MemorySavedData{Count: 1, Memories: []longhaul.MemoryItem{{ID: "mem_4", Text: "d"}}}),
	}
	want := []string{
		`{"event":{"type":"status","data":{"description":"Recalled 3 memories","done":false}}}`,
		`{"event":{"type":"status","data":{"description":"Saved 1 memory","done":true}}}`,
		chunkHead + `"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":"stop"}]}`,
	}
	if diff := cmp.Diff(want, frames(t, newRenderer("c1", "assistant", 7, true), events, false)); diff != "" {
		t.Errorf("Open WebUI frames (-want +got):\n%s", diff)
	}
	if plain := frames(t, newRenderer("c1", "assistant", 7, false), events, false); len(plain) != 1 {
		t.Errorf("plain client got %q, want only the finish", plain)
	}
}

// thought is an ephemeral piece of a call's reasoning at byte from.
func thought(call string, from int, text string) longhaul.Event {
	return ev(longhaul.EventReasoningDelta, longhaul.Delta{Kind: longhaul.DeltaReasoning, Call: call, From: from, Text: text})
}

// TestRenderReasoning: a thinking call's reasoning streams as
// delta.reasoning_content chunks, never in content, for Open WebUI and
// plain clients alike; its text follows as content; the durable content
// event adds only what the deltas did not bring, of each.
func TestRenderReasoning(t *testing.T) {
	events := []longhaul.Event{
		thought("turn-1", 0, "a < b, "),
		thought("turn-1", 7, "so b wins"),
		delta("turn-1", "B"),
		ev(longhaul.EventContent, longhaul.ContentData{Call: "turn-1", Reasoning: "a < b, so b wins", Text: "B."}),
	}
	want := []string{
		chunkHead + `"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"a \u003c b, "},"finish_reason":null}]}`,
		chunkHead + `"choices":[{"index":0,"delta":{"reasoning_content":"so b wins"},"finish_reason":null}]}`,
		more("B"),
		more("."),
		stop,
	}
	for _, owui := range []bool{false, true} {
		if diff := cmp.Diff(want, frames(t, newRenderer("c1", "assistant", 7, owui), events, false)); diff != "" {
			t.Errorf("openWebUI=%v frames (-want +got):\n%s", owui, diff)
		}
	}
	// From the log alone (a late follower): the reasoning, then the text.
	got := frames(t, newRenderer("c1", "assistant", 7, true), events[3:], false)
	want = []string{
		chunkHead + `"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"a \u003c b, so b wins"},"finish_reason":null}]}`,
		more("B."),
		stop,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("from the log (-want +got):\n%s", diff)
	}
}

// TestRenderReasoningRetried: a retried call thinks again; what it repeats
// of the reasoning shown is not shown twice, nor is its text.
func TestRenderReasoningRetried(t *testing.T) {
	got := frames(t, newRenderer("c1", "assistant", 7, false), []longhaul.Event{
		thought("turn-1", 0, "hmm"),
		ev(longhaul.EventContentReset, longhaul.ContentResetData{Call: "turn-1", Attempt: 2}),
		thought("turn-1", 0, "hmm, yes"),
		delta("turn-1", "Yes."),
	}, false)
	want := []string{
		chunkHead + `"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"hmm"},"finish_reason":null}]}`,
		chunkHead + `"choices":[{"index":0,"delta":{"reasoning_content":", yes"},"finish_reason":null}]}`,
		more("Yes."),
		stop,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
}

func TestRenderClientToolCalls(t *testing.T) {
	r := newRenderer("c1", "assistant", 7, false)
	calls := []longhaul.ToolCall{{ID: "call_lh_x.1", Name: "lookup", Arguments: `{"id":"A"}`}}
	got := frames(t, r, []longhaul.Event{
		content("turn-1", "Checking."),
		ev(longhaul.EventClientToolCalls, longhaul.ClientToolCallsData{Calls: calls}),
	}, false)
	want := []string{
		first("Checking."),
		chunkHead + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_lh_x.1","type":"function","function":{"name":"lookup","arguments":"{\"id\":\"A\"}"}}]},"finish_reason":null}]}`,
		chunkHead + `"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
}

func TestContextStatus(t *testing.T) {
	for _, tt := range []struct {
		d    longhaul.ContextData
		want string
	}{
		{longhaul.ContextData{Model: "llama3.1:8b", Window: 4096, Compacted: true, Summarized: 23},
			"Summarized the first 23 messages to fit llama3.1:8b's 4096-token window"},
		{longhaul.ContextData{Model: "llama3.1:8b", Window: 4096, Used: 3000, Left: 584, Excerpted: 2, Cut: 1},
			"Shortened 2 earlier tool result(s), cut 1 long result(s) to fit llama3.1:8b's 4096-token window (3000 used, 584 left)"},
		{longhaul.ContextData{Model: "m", Window: 8192, Used: 100, Left: 7000, Summarized: 12},
			"Used the summary of earlier messages to fit m's 8192-token window (100 used, 7000 left)"},
	} {
		if got := contextStatus(tt.d); got != tt.want {
			t.Errorf("contextStatus(%+v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
