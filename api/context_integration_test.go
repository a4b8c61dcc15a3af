package api_test

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/window"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// The context-window scenarios: the whole stack (the API over
// HTTP, the embedded Temporal server, a worker) against a scripted model
// with a window, as Ollama (which cuts the oldest messages silently) and
// OpenAI (which answers 400 context_length_exceeded) have one. Each
// scenario runs against a 4,096 and an 8,192 window under both
// behaviours, and each proves the same two things: the model was never
// sent a request it would have to cut or refuse (CutRequests is empty),
// and what Longhaul did to fit is in the run's context events.

// windowCase is one window the scenarios run against.
type windowCase struct {
	tokens    int
	behaviour llmtest.Behaviour
}

var windowCases = []windowCase{
	{4096, llmtest.BehaviourOllama}, {4096, llmtest.BehaviourOpenAI},
	{8192, llmtest.BehaviourOllama}, {8192, llmtest.BehaviourOpenAI},
}

// eachWindow runs scenario once per window case, as subtests.
func eachWindow(t *testing.T, scenario func(t *testing.T, wc windowCase)) {
	t.Helper()
	for _, wc := range windowCases {
		t.Run(fmt.Sprintf("%d-%s", wc.tokens, wc.behaviour), func(t *testing.T) {
			// Each case is a stack of its own; most of a case's time is
			// Temporal's round trips, so they share the CPUs well.
			t.Parallel()
			start := time.Now()
			scenario(t, wc)
			t.Logf("%d tokens, %s: %v", wc.tokens, wc.behaviour, time.Since(start).Round(time.Millisecond))
		})
	}
}

// windowEnv starts a stack whose worker knows the model's window (as
// LONGHAUL_LLM_CONTEXT tells it) and whose scripted model has that window.
func windowEnv(t *testing.T, wc windowCase, opts testenv.Options) *testenv.Env {
	t.Helper()
	opts.Context = window.Settings{"llmtest": wc.tokens}
	env := testenv.Start(t, opts)
	env.Model.SetWindow(wc.tokens, wc.behaviour)
	return env
}

// checkNoCuts fails the test for every request the model had to cut or
// refuse.
func checkNoCuts(t *testing.T, env *testenv.Env) {
	t.Helper()
	for _, r := range env.Model.CutRequests() {
		t.Errorf("request %d was cut by the model: %d prompt tokens, %d messages dropped (system prompt %.60q)",
			r.N, r.PromptTokens, r.Dropped, r.SystemPrompt())
	}
}

// compactPrompt starts the compact role's system prompt
// (skills/builtin/prompts/compact.md).
const compactPrompt = "You compact a conversation"

// isCompact reports whether r is the compact role's request.
func isCompact(r llmtest.Request) bool { return strings.HasPrefix(r.SystemPrompt(), compactPrompt) }

// compactKeeping is the compact role's model: its summary keeps the lines
// of what it was given (the summary so far and the conversation to add)
// that hold one of the markers, once each, as a careful summarizer keeps
// identifiers.
func compactKeeping(markers ...string) func(llmtest.Request) llmtest.Reply {
	return func(r llmtest.Request) llmtest.Reply {
		var keep []string
		for line := range strings.Lines(r.LastUserMessage()) {
			line = strings.TrimSpace(line)
			for _, m := range markers {
				if strings.Contains(line, m) && !slices.Contains(keep, line) {
					keep = append(keep, line)
					break
				}
			}
		}
		if len(keep) == 0 {
			return llmtest.Text("Nothing of note was said.")
		}
		return llmtest.Text(strings.Join(keep, "\n"))
	}
}

// requestText is everything the model reads of r: every message's text
// and tool call arguments.
func requestText(r llmtest.Request) string {
	var b strings.Builder
	for _, m := range r.Chat.Messages {
		b.WriteString(llmtest.MessageText(m))
		b.WriteString("\n")
		for _, tc := range m.ToolCalls {
			b.WriteString(tc.Function.Arguments)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// queryEvents reads run id's whole event log with the events query.
func queryEvents(t *testing.T, env *testenv.Env, id string) []longhaul.Event {
	t.Helper()
	ctx := within(t, 30*time.Second)
	var out []longhaul.Event
	var after int64
	for {
		v, err := env.Client.QueryWorkflow(ctx, id, "", contract.QueryEvents, contract.EventsRequest{After: after})
		if err != nil {
			t.Fatalf("events of %s: %v", id, err)
		}
		var page contract.EventsPage
		if err := v.Get(&page); err != nil {
			t.Fatal(err)
		}
		if len(page.Archives) > 0 {
			t.Fatalf("events of %s: archived stretches the test does not read", id)
		}
		out = append(out, page.Events...)
		if len(page.Events) == 0 || page.Events[len(page.Events)-1].Offset >= page.Last {
			return out
		}
		after = page.Events[len(page.Events)-1].Offset
	}
}

// contextEvents are the context events of the runs ids.
func contextEvents(t *testing.T, env *testenv.Env, ids ...string) []longhaul.ContextData {
	t.Helper()
	var out []longhaul.ContextData
	for _, id := range ids {
		for _, e := range queryEvents(t, env, id) {
			if e.Type != longhaul.EventContext {
				continue
			}
			var d longhaul.ContextData
			if err := e.Decode(&d); err != nil {
				t.Fatal(err)
			}
			out = append(out, d)
		}
	}
	return out
}

// tally sums what the context events say was done to fit.
type tally struct{ events, excerpted, cut, compacted int }

func tallyOf(events []longhaul.ContextData, tokens int) (tally, error) {
	var s tally
	for _, d := range events {
		if d.Window != tokens {
			return s, fmt.Errorf("context event of window %d, want %d: %+v", d.Window, tokens, d)
		}
		s.events++
		s.excerpted += d.Excerpted
		s.cut += d.Cut
		if d.Compacted {
			s.compacted++
		}
	}
	return s, nil
}

// pageChars is the size of a fetched page: LONGHAUL_MAX_TOOL_CHARS, what
// one web_fetch result may be.
const pageChars = 16000

// fillerSentences make a page's prose: ordinary English, so the token
// counts are those of real pages.
var fillerSentences = []string{
	"The committee met again on Thursday to review the budget for the coming year.",
	"Several members asked whether the new bridge would be finished before the winter storms.",
	"Engineers reported that the foundations were complete and the steel frame was going up.",
	"Local shops have seen more visitors since the market moved to the old railway station.",
	"A spokesperson said the library would extend its opening hours during the exam period.",
	"Rainfall in the valley was well above average, and the river reached its highest level in a decade.",
	"Volunteers planted four hundred trees along the northern edge of the park last weekend.",
	"The orchestra announced a season of free concerts for schools across the region.",
}

// page is page n of a site: a fact first, then prose, pageChars in all.
func page(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "FACT-%d: the survey marker of section %d reads %s.\n\n", n, n, factCode(n))
	for i := 0; b.Len() < pageChars; i++ {
		b.WriteString(fillerSentences[(i+n)%len(fillerSentences)])
		if i%5 == 4 {
			b.WriteString("\n\n")
		} else {
			b.WriteString(" ")
		}
	}
	return b.String()[:pageChars]
}

// factCode is page n's fact.
func factCode(n int) string { return fmt.Sprintf("KESTREL-%d%03d", n, 7*n) }

var factRE = regexp.MustCompile(`FACT-\d+: the survey marker of section \d+ reads (KESTREL-\d+)`)

// factsIn are the facts r shows the model, in order, once each.
func factsIn(r llmtest.Request) []string {
	var out []string
	for _, m := range factRE.FindAllStringSubmatch(requestText(r), -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// siteServer serves page n at /page/<n> as plain text and counts the
// fetches; web_fetch may reach it.
func siteServer(t *testing.T) (string, *atomic.Int32, tools.WebFetchOptions) {
	t.Helper()
	var fetched atomic.Int32
	site, fetch := testenv.Site(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		if _, err := fmt.Sscanf(r.URL.Path, "/page/%d", &n); err != nil || n < 1 {
			http.NotFound(w, r)
			return
		}
		fetched.Add(1)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, page(n))
	}))
	return site, &fetched, fetch
}

// askSixPages asks agent for the first and the last of the six pages'
// markers and checks what both six-page scenarios share: no request was
// cut, six pages were fetched, and the answer has page 1's and page 6's
// facts. It returns the answer and what the run's context events did.
func askSixPages(t *testing.T, env *testenv.Env, wc windowCase, agent string, fetched *atomic.Int32) (string, tally) {
	t.Helper()
	resp := do(t, env, "POST", "/v1/chat/completions", chatBody{
		"model": agent, "messages": userMsg("Read the six pages of the survey site and tell me the first and the last section's marker."),
	}, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	c := decode[wire.ChatCompletion](t, resp)
	answer := c.Choices[0].Message.Content
	checkNoCuts(t, env)
	if fetched.Load() != 6 {
		t.Errorf("%d pages fetched, want 6", fetched.Load())
	}
	for _, n := range []int{1, 6} {
		if !strings.Contains(answer, factCode(n)) {
			t.Errorf("the answer lacks page %d's fact %s: %q", n, factCode(n), answer)
		}
	}
	s, err := tallyOf(contextEvents(t, env, resp.Header.Get("X-Longhaul-Run-Id")), wc.tokens)
	if err != nil {
		t.Error(err)
	}
	return answer, s
}

// TestContextWindowResearchSixPages: the assistant, in its tool loop,
// fetches six pages of 16,000 characters, each about 4,000 tokens, with a
// fact at the start of each, and answers with the facts it can still see.
// One page alone fills a 4,096 window: each is cut to fit while it is the
// current round and excerpted once it is older, and older turns are
// compacted; yet the answer has the first page's fact and the last's, and
// the model never cut or refused a request.
func TestContextWindowResearchSixPages(t *testing.T) {
	eachWindow(t, func(t *testing.T, wc windowCase) {
		site, fetched, fetch := siteServer(t)
		env := windowEnv(t, wc, testenv.Options{Fetch: fetch})
		env.Model.On(isCompact, llmtest.Func(compactKeeping("FACT-")))
		env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			if n := int(fetched.Load()); n < 6 {
				return llmtest.ToolCalls(llmtest.ToolCall{Name: "web_fetch", Arguments: fmt.Sprintf(`{"url":%q}`, fmt.Sprintf("%s/page/%d", site, n+1))})
			}
			return llmtest.Text("The survey markers read: " + strings.Join(factsIn(r), ", ") + ".")
		}))
		answer, s := askSixPages(t, env, wc, "assistant", fetched)
		// A page does not fit beside the prompt in 4,096 tokens, so it is
		// cut while it is the current round; in either window the older
		// pages are excerpted.
		if s.excerpted == 0 || wc.tokens < 8192 && s.cut == 0 {
			t.Errorf("context events %+v: want older pages excerpted, and pages cut in a 4,096 window", s)
		}
		t.Logf("answer %q; model requests %d; context %+v", answer, len(env.Model.Requests()), s)
	})
}

// TestContextWindowResearcherSixPages: the researcher, agentic, plans six
// web_fetch steps of 16,000-character pages and an answer; each step's
// review and the answer read the pages' results, which in a 4,096 window
// do not fit together: the answer's findings (one message a step) are cut
// evenly, each keeping its start, so the answer still has the first
// page's fact and the last's, and no request was cut by the model.
func TestContextWindowResearcherSixPages(t *testing.T) {
	eachWindow(t, func(t *testing.T, wc windowCase) {
		site, fetched, fetch := siteServer(t)
		env := windowEnv(t, wc, testenv.Options{Fetch: fetch})
		steps := []map[string]any{}
		for n := 1; n <= 6; n++ {
			steps = append(steps, map[string]any{"kind": "tool", "target": "web_fetch", "title": fmt.Sprintf("Read page %d", n),
				"arguments": map[string]any{"url": fmt.Sprintf("%s/page/%d", site, n), "max_chars": nil}, "success": "the page names its marker"})
		}
		steps = append(steps, map[string]any{"kind": "completion", "title": "Answer", "input": "the first and the last marker", "success": "both markers"})
		scriptPlan(env, "Tell the first and the last section's survey marker", steps, "the page was read")
		env.Model.On(llmtest.HasSchema("plan_review"),
			llmtest.JSON(map[string]string{"decision": "ok", "reason": "the plan reads every page"}))
		env.Model.On(isCompact, llmtest.Func(compactKeeping("FACT-")))
		env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			return llmtest.Text("The survey markers read: " + strings.Join(factsIn(r), ", ") + ".")
		}))
		answer, s := askSixPages(t, env, wc, "researcher", fetched)
		// Six findings of up to 6,000 characters are over 8,000 tokens:
		// in either window the answer's findings are cut.
		if s.cut == 0 {
			t.Errorf("context events %+v: want the answer's findings cut", s)
		}
		t.Logf("answer %q; model requests %d; context %+v", answer, len(env.Model.Requests()), s)
	})
}

// whole streams a reply in one chunk: the scenarios are about what the
// model reads, and a chunk per word only costs time under -race.
var whole = llmtest.ChunkSize(1 << 16)

// filmList is turn 1's answer: the films of the media agent's search, each with
// its TMDB reference, as the media agent lists them.
const filmList = "Here are the films I found:\n" +
	"1. Project Hail Mary (2026) [tmdb:931285]\n" +
	"2. The Martian (2015) [tmdb:286217]\n" +
	"3. Moon (2009) [tmdb:17431]\n" +
	"Which one would you like?"

// fillerTopics are what the chat's middle turns talk about.
var fillerTopics = []string{"tides", "bread", "glaciers", "chess openings", "bees", "lighthouses", "volcanoes", "typography"}

// fillerAnswer is a middle turn's answer, a few hundred tokens.
func fillerAnswer(topic string, turn int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Turn %d, on %s. ", turn, topic)
	for i := 0; b.Len() < 1100; i++ {
		b.WriteString(fillerSentences[(i+turn)%len(fillerSentences)])
		b.WriteString(" ")
	}
	return strings.TrimSpace(b.String())
}
