package api_test

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/safehttp"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/window"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// The context-window scenarios of issue 35: the whole stack (the API over
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
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
func siteServer(t *testing.T) (*httptest.Server, *atomic.Int32, tools.WebFetchOptions) {
	t.Helper()
	var fetched atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		if _, err := fmt.Sscanf(r.URL.Path, "/page/%d", &n); err != nil || n < 1 {
			http.NotFound(w, r)
			return
		}
		fetched.Add(1)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, page(n))
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	ap := netip.MustParseAddrPort(u.Host)
	return srv, &fetched, tools.WebFetchOptions{
		HTTP:         safehttp.Options{AllowAddrs: []netip.AddrPort{ap}},
		AllowedPorts: []int{int(ap.Port())},
	}
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
				return llmtest.ToolCalls(llmtest.ToolCall{Name: "web_fetch", Arguments: fmt.Sprintf(`{"url":%q}`, fmt.Sprintf("%s/page/%d", site.URL, n+1))})
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
				"arguments": map[string]any{"url": fmt.Sprintf("%s/page/%d", site.URL, n), "max_chars": nil}, "success": "the page names its marker"})
		}
		steps = append(steps, map[string]any{"kind": "completion", "title": "Answer", "input": "the first and the last marker", "success": "both markers"})
		env.Model.On(func(r llmtest.Request) bool { return schemaName(r) == "plan" }, llmtest.JSON(map[string]any{
			"goal": "Tell the first and the last section's survey marker", "steps": steps,
		}))
		env.Model.On(func(r llmtest.Request) bool { return schemaName(r) == "step_review" },
			llmtest.JSON(map[string]string{"decision": "ok", "reason": "the page was read"}))
		env.Model.On(func(r llmtest.Request) bool { return schemaName(r) == "plan_review" },
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

// filmList is turn 1's answer: the films of seed 000's search, each with
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

// TestContextWindowLongOpenWebUIChat: a 40-turn Open WebUI chat whose
// first answer lists the films with their TMDB references and whose later
// turns are a few hundred tokens each, far more than the window holds.
// At turn 40, "the 2026 one" still resolves to tmdb 931285 (the summary
// kept it), the summary was reused from turn to turn instead of being
// written again each turn, and the model never cut or refused a request.
func TestContextWindowLongOpenWebUIChat(t *testing.T) {
	const turns = 40
	eachWindow(t, func(t *testing.T, wc windowCase) {
		env := windowEnv(t, wc, testenv.Options{API: api.Config{
			Keys:      []identity.Key{{Name: "owui", Secret: owuiKey, Proxy: true}},
			JWTSecret: []byte(owuiSecret),
		}})
		chat := owuiConn(env).NewChat(ann, "assistant")
		compact := llmtest.Func(compactKeeping("tmdb:"))
		env.Model.On(isCompact, compact)
		env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			q := r.LastUserMessage()
			switch {
			case strings.Contains(q, "Find me films"):
				return llmtest.Text(filmList)
			case strings.Contains(q, "the 2026 one"):
				if strings.Contains(requestText(r), "931285") {
					return llmtest.Text("The 2026 one is Project Hail Mary [tmdb:931285]; I will request it.")
				}
				return llmtest.Text("I no longer know which films we talked about.")
			}
			var turn int
			var topic string
			if _, err := fmt.Sscanf(q, "Turn %d: tell me about %s", &turn, &topic); err != nil {
				return llmtest.Text("I did not follow.")
			}
			return llmtest.Text(fillerAnswer(topic, turn), whole)
		}))

		var runs []string
		for turn := 1; turn <= turns; turn++ {
			q := fmt.Sprintf("Turn %d: tell me about %s, in a paragraph or two; I am curious how it works and why it matters to people.", turn, fillerTopics[turn%len(fillerTopics)])
			switch turn {
			case 1:
				q = "Find me films about astronauts stranded in space."
			case turns:
				q = "Please request the 2026 one."
			}
			a := sendOWUI(t, chat.Ask(q))
			chat.Answer(a.Content)
			runs = append(runs, a.RunID)
			if turn == turns && !strings.Contains(a.Content, "[tmdb:931285]") {
				t.Errorf("turn %d: %q does not resolve the 2026 film", turn, a.Content)
			}
		}
		checkNoCuts(t, env)
		// A compaction covers the turns so far and is kept with the
		// chat: the next turns reuse it until what follows it outgrows
		// the window again, so no two turns in a row compact (in 4,096
		// tokens the assistant's prompt and tools leave room for about
		// two turns beside the summary). Each is one context event and
		// one request of the compact role.
		var all []longhaul.ContextData
		var compacted []int
		for i, id := range runs {
			events := contextEvents(t, env, id)
			all = append(all, events...)
			for _, d := range events {
				if d.Compacted {
					compacted = append(compacted, i+1)
				}
			}
		}
		s, err := tallyOf(all, wc.tokens)
		if err != nil {
			t.Error(err)
		}
		if len(compacted) == 0 || len(compacted) != compact.Calls() {
			t.Errorf("compactions at turns %v, %d compact requests; want some, one request each", compacted, compact.Calls())
		}
		for i := 1; i < len(compacted); i++ {
			if compacted[i]-compacted[i-1] < 2 {
				t.Errorf("compactions at turns %v: turn %d compacted again instead of reusing the summary", compacted, compacted[i])
				break
			}
		}
		if wc.tokens >= 8192 && len(compacted) > turns/8 {
			t.Errorf("compactions at turns %v: too many for %d turns in %d tokens", compacted, turns, wc.tokens)
		}
		first := env.Model.Requests()[0]
		t.Logf("model requests %d (the first %d tokens, estimated %d), compactions at turns %v, context %+v",
			len(env.Model.Requests()), first.PromptTokens, window.Request(first.Chat), compacted, s)
	})
}

// orderResult is round n's result of the client's lookup_order: a fact on
// its first line, then about 3,000 characters of detail (some 600 tokens).
func orderResult(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "RESULT-%d: order R-%d left depot D-%d.\n", n, n, 40+n)
	for i := 0; b.Len() < 3000; i++ {
		fmt.Fprintf(&b, "scan %d: %s\n", i, fillerSentences[(i+n)%len(fillerSentences)])
	}
	return b.String()
}

var resultRE = regexp.MustCompile(`RESULT-\d+: order R-\d+ left depot D-\d+`)

// TestContextWindowClientToolLoop: a client offers its own tool and runs
// it 30 times in one run, each result some 600 tokens, about 18,000 in
// all, sending the whole conversation back each round as a Chat
// Completions client does. Older results are excerpted and older rounds
// compacted; the answer still sees the first round's result (in the
// summary) and the last (whole), and the model never cut or refused a
// request.
func TestContextWindowClientToolLoop(t *testing.T) {
	const rounds = 30
	const question = "Look up orders R-1 to R-30 one at a time and tell me where the first and the last left from."
	// The assistant's prompt and skills, with room for the 30 rounds (its
	// own max_turns would end the loop at 8).
	layer := fstest.MapFS{"courier.md": {Data: []byte("---\nagent: courier\ndescription: Tracks orders\nmode: chat\nskills: [clock, web_reading, web_research, backlog_manager, documents]\nmax_turns: 40\n---\n" +
		"You track orders with the tools you are given. Look each order up before you answer, and quote what the lookup said.\n")}}
	eachWindow(t, func(t *testing.T, wc windowCase) {
		env := windowEnv(t, wc, testenv.Options{Layers: []fs.FS{layer}})
		var done atomic.Int32 // rounds whose result the client sent
		var lastSeen atomic.Value
		env.Model.On(isCompact, llmtest.Func(compactKeeping("RESULT-")))
		env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			if !strings.Contains(r.LastUserMessage(), question) {
				return llmtest.Text("The question is gone.")
			}
			if n := int(done.Load()); n < rounds {
				return llmtest.ToolCalls(llmtest.ToolCall{Name: "lookup_order", Arguments: fmt.Sprintf(`{"id":"R-%d"}`, n+1)})
			}
			seen := resultRE.FindAllString(requestText(r), -1)
			lastSeen.Store(len(seen))
			return llmtest.Text("I saw: " + strings.Join(seen, "; ") + ".")
		}))

		msgs := []any{map[string]any{"role": "user", "content": question}}
		var run, answer string
		for round := 0; ; round++ {
			resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "courier", "messages": msgs, "tools": []any{lookupTool}}, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("round %d: status %d", round+1, resp.StatusCode)
			}
			if run == "" {
				run = resp.Header.Get(api.HeaderRunID)
			} else if got := resp.Header.Get(api.HeaderRunID); got != run {
				t.Fatalf("round %d went to run %s, not %s", round+1, got, run)
			}
			c := decode[wire.ChatCompletion](t, resp)
			msg := c.Choices[0].Message
			if c.Choices[0].FinishReason == "stop" {
				answer = msg.Content
				break
			}
			if round == rounds || len(msg.ToolCalls) != 1 {
				t.Fatalf("round %d: finish %q, message %+v", round+1, c.Choices[0].FinishReason, msg)
			}
			call := msg.ToolCalls[0]
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": msg.Content, "tool_calls": []any{map[string]any{
					"id": call.ID, "type": "function", "function": map[string]any{"name": call.Function.Name, "arguments": call.Function.Arguments}}}},
				map[string]any{"role": "tool", "tool_call_id": call.ID, "content": orderResult(round + 1)})
			done.Store(int32(round + 1))
		}
		checkNoCuts(t, env)
		for _, n := range []int{1, rounds} {
			if want := fmt.Sprintf("RESULT-%d: order R-%d left depot D-%d", n, n, 40+n); !strings.Contains(answer, want) {
				t.Errorf("the answer lacks round %d's result %q: %q", n, want, answer)
			}
		}
		s, err := tallyOf(contextEvents(t, env, run), wc.tokens)
		if err != nil {
			t.Error(err)
		}
		if s.excerpted == 0 || s.compacted == 0 {
			t.Errorf("context events %+v: want older results excerpted and older rounds compacted", s)
		}
		t.Logf("model requests %d, results seen at the end %v, context %+v", len(env.Model.Requests()), lastSeen.Load(), s)
	})
}

// TestContextWindowWorkerKilledMidCompaction: a run's first model call
// does not fit, so the run compacts; the worker is stopped while the
// compact role's model is writing the summary, and a new worker takes
// over. The Compact activity is retried there and completes once, the
// summary is workflow state from then on (no second compaction), and the
// run completes with the model never having cut or refused a request.
func TestContextWindowWorkerKilledMidCompaction(t *testing.T) {
	eachWindow(t, func(t *testing.T, wc windowCase) {
		env := windowEnv(t, wc, testenv.Options{})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		started := make(chan struct{})
		var compacts atomic.Int32
		keep := compactKeeping("MARK-")
		env.Model.On(isCompact, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			if compacts.Add(1) == 1 {
				close(started)
				return llmtest.Hang()
			}
			return keep(r)
		}))
		env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			if strings.Contains(requestText(r), "MARK-ORIGIN") {
				return llmtest.Text("We began with MARK-ORIGIN.")
			}
			return llmtest.Text("I do not remember how we began.")
		}))
		// A history of some 8,000 tokens: more than either window holds
		// beside the assistant's prompt.
		msgs := []map[string]string{{"role": "user", "content": "MARK-ORIGIN: remember this marker."}, {"role": "assistant", "content": "Noted."}}
		for i := range 14 {
			msgs = append(msgs,
				map[string]string{"role": "user", "content": fmt.Sprintf("Tell me about %s.", fillerTopics[i%len(fillerTopics)])},
				map[string]string{"role": "assistant", "content": fillerAnswer(fillerTopics[i%len(fillerTopics)], i+2) + " " + fillerAnswer("more", i+3)})
		}
		msgs = append(msgs, map[string]string{"role": "user", "content": "Which marker did we begin with?"})
		r := startRun(t, env, map[string]any{"agent": "assistant", "messages": msgs}, user("ann"))

		select {
		case <-started:
		case <-ctx.Done():
			t.Fatal("the run never compacted")
		}
		env.StopWorker()
		env.StartWorker()
		events := followToDone(t, ctx, env, r.ID, user("ann"))
		if got := contentText(t, events); !strings.Contains(got, "MARK-ORIGIN") {
			t.Errorf("answer %q: the summary lost the first message", got)
		}
		if d := doneData(t, events); d.Status != string(contract.StatusCompleted) {
			t.Errorf("done %+v", d)
		}
		checkNoCuts(t, env)

		// The history: one Compact scheduled, completed once.
		scheduled := map[int64]bool{}
		completed := 0
		it := env.Client.GetWorkflowHistory(ctx, r.ID, "", false, 0)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "Compact" {
				scheduled[ev.GetEventId()] = true
			}
			if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] {
				completed++
			}
		}
		if len(scheduled) != 1 || completed != 1 {
			t.Errorf("Compact scheduled %d times, completed %d; want once each", len(scheduled), completed)
		}
		// The interrupted request, then the retry's: one per stretch of
		// the history that fits the window.
		if n := compacts.Load(); n < 2 {
			t.Errorf("the compact role was asked %d times; want the interrupted request and the retry's", n)
		}
		var events2 []longhaul.ContextData
		for _, e := range events {
			if e.Type == string(longhaul.EventContext) {
				var d longhaul.ContextData
				if err := e.Event.Decode(&d); err != nil {
					t.Fatal(err)
				}
				events2 = append(events2, d)
			}
		}
		if s, err := tallyOf(events2, wc.tokens); err != nil || s.compacted != 1 {
			t.Errorf("context events %+v (%v): want one compaction", s, err)
		}
	})
}
