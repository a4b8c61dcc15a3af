// Package eval_test evaluates the shipped agents (skills/builtin) against
// the committed cases of evals/cases with the scripted model: make eval
// (and so make test) fails when a change of an agent file breaks a case.
// Every shipped agent with a job has cases — the researcher, the assistant
// and the media-agent — recorded twice: on a plain model, and on a
// thinking one (Ollama's flavour, every answer preceded by its reasoning;
// ids ending in -thinking). The cases were recorded from real runs of the
// same scripted model; go test ./test/eval -run TestShippedAgents -update
// records them again.
package eval_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/evals"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/seerrtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/client"
)

var update = flag.Bool("update", false, "record the cases of evals/cases anew")

const (
	casesDir    = "../../evals/cases"
	gradersFile = "../../evals/graders.yaml"
	// readFirst is the researcher's instruction that makes the scripted
	// model plan to read a page before it answers.
	readFirst = "Fetch the page and read the relevant part"
	// thinkingSuffix ends the ids of the cases of the thinking model.
	thinkingSuffix = "-thinking"
)

// facts are what the pages say, by topic: a researcher case per topic.
var facts = map[string]string{
	"bill":   "The Australian pelican's bill is up to 47 cm long.",
	"weight": "An adult pelican weighs 4 to 13 kg.",
	"speed":  "Pelicans fly at about 40 km/h.",
}

var questions = map[string]string{
	"bill":   "How long is a pelican's bill?",
	"weight": "How much does a pelican weigh?",
	"speed":  "How fast does a pelican fly?",
}

// scenario is a recorded case: an agent asked one question (site is the
// page server's address, for a question that names a page).
type scenario struct {
	id, agent string
	question  func(site string) string
}

func ask(q string) func(string) string { return func(string) string { return q } }

var scenarios = []scenario{
	{"researcher-bill", "researcher", ask(questions["bill"])},
	{"researcher-weight", "researcher", ask(questions["weight"])},
	{"researcher-speed", "researcher", ask(questions["speed"])},
	// The assistant checks the clock and reads a page with its tools.
	{"assistant-time", "assistant", ask("What time is it in Tokyo right now?")},
	{"assistant-page", "assistant", func(site string) string { return "What does the page " + site + "/?topic=speed say?" }},
	// The media-agent asks Seerr.
	{"media-agent-trending", "media-agent", ask("What movies are trending?")},
	{"media-agent-search", "media-agent", ask("Find the Mortal Kombat films.")},
}

// topic is the researcher topic a model request is about.
func topic(r llmtest.Request) string {
	for _, m := range r.Chat.Messages {
		for t, q := range questions {
			if strings.Contains(m.Content, q) {
				return t
			}
		}
	}
	return ""
}

func prompted(r llmtest.Request, text string) bool {
	for _, m := range r.Chat.Messages {
		if m.Role == "system" && strings.Contains(m.Content, text) {
			return true
		}
	}
	return false
}

// flavour is the model a stack runs on: plain, or thinking (Ollama's
// flavour, every answer preceded by its reasoning).
type flavour struct {
	name     string
	thinking bool
}

var (
	plain    = flavour{name: "plain"}
	thinking = flavour{name: "thinking", thinking: true}
)

// id is the case id of scenario s on this flavour.
func (f flavour) id(s scenario) string {
	if f.thinking {
		return s.id + thinkingSuffix
	}
	return s.id
}

// owns says whether the case is of this flavour.
func (f flavour) owns(id string) bool { return strings.HasSuffix(id, thinkingSuffix) == f.thinking }

// reply is r, preceded on the thinking model by thought.
func (f flavour) reply(r llmtest.Reply, thought string) llmtest.Reply {
	if f.thinking {
		return r.With(llmtest.Reasoning(thought))
	}
	return r
}

// world is a stack and what its tools would reach: a page per topic (hits
// counts its fetches) and Seerr.
type world struct {
	env   *testenv.Env
	site  string
	hits  *atomic.Int64
	seerr *seerrtest.Server
}

// stack starts the engine with the agent files of layer over the
// built-ins, the pages, Seerr, and a scripted model of flavour f that
// answers by what each agent's prompt and tools say: the researcher plans
// to read the topic's page only when its prompt says to read before
// relying, and answers with the page's fact when it read it; a chat agent
// calls the tool a question needs when it is offered that tool, answers
// from the tool's result, and says it cannot check without it.
func stack(t *testing.T, f flavour, layer fs.FS) world {
	t.Helper()
	w := world{hits: new(atomic.Int64), seerr: seerrtest.New(t)}
	site, fetch := testenv.Site(t, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.hits.Add(1)
		fmt.Fprintf(rw, "<html><body><p>%s</p></body></html>", facts[r.URL.Query().Get("topic")])
	}))
	w.site = site
	opts := testenv.Options{Fetch: fetch, Env: map[string]string{"SEERR_URL": w.seerr.URL, "SEERR_API_KEY": seerrtest.Key}}
	if layer != nil {
		opts.Layers = []fs.FS{layer}
	}
	w.env = testenv.Start(t, opts)
	if f.thinking {
		w.env.Model.SetFlavour(llmtest.FlavourOllama)
	}
	w.env.Model.On(llmtest.HasSchema("plan"), llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		steps := []map[string]any{{"kind": "completion", "title": "Answer", "input": "the fact", "success": "a fact"}}
		if prompted(r, readFirst) {
			read := map[string]any{"kind": "tool", "target": "web_fetch", "title": "Read the page",
				"arguments": map[string]any{"url": site + "/?topic=" + topic(r), "max_chars": nil}, "success": "the fact"}
			steps = append([]map[string]any{read}, steps...)
		}
		return f.reply(llmtest.JSON(map[string]any{"goal": "Answer with a source", "steps": steps}), "The question needs a source; plan to read it first.")
	}))
	w.env.Model.On(llmtest.HasSchema("step_review"), f.reply(llmtest.JSON(map[string]string{"decision": "ok", "reason": "done"}), "The step did what it should."))
	w.env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		if t := topic(r); t != "" {
			for _, m := range r.Chat.Messages {
				if strings.Contains(m.Content, facts[t]) {
					return f.reply(llmtest.Text(facts[t]), "The page says it plainly.")
				}
			}
			return f.reply(llmtest.Text("I could not check a source."), "I have no source.")
		}
		return chatReply(f, r)
	}))
	return w
}

var pageURL = regexp.MustCompile(`https?://\S+`)

// chatReply is the scripted model as a chat agent: a tool result is
// answered from, a question is answered with the tool it needs when the
// request offers it, and without the tool the model says it cannot check.
func chatReply(f flavour, r llmtest.Request) llmtest.Reply {
	msgs := r.Chat.Messages
	if n := len(msgs); n > 0 && msgs[n-1].Role == openai.ChatMessageRoleTool {
		return f.reply(llmtest.Text(fromResult(toolOf(msgs, msgs[n-1].ToolCallID), msgs[n-1].Content)), "The tool answered; I can reply.")
	}
	q := r.LastUserMessage()
	offered := func(name string) bool {
		return slices.ContainsFunc(r.Chat.Tools, func(t openai.Tool) bool { return t.Function != nil && t.Function.Name == name })
	}
	call := func(name string, args map[string]any) llmtest.Reply {
		b, _ := json.Marshal(args)
		return f.reply(llmtest.ToolCalls(llmtest.ToolCall{ID: "call_" + name, Name: name, Arguments: string(b)}), "I should check with "+name+" before answering.")
	}
	switch {
	case strings.Contains(q, "time") && offered("current_time"):
		return call("current_time", map[string]any{"timezone": "Asia/Tokyo"})
	case pageURL.MatchString(q) && offered("web_fetch"):
		return call("web_fetch", map[string]any{"url": pageURL.FindString(q)})
	case strings.Contains(q, "trending") && offered("seerr_trending"):
		return call("seerr_trending", map[string]any{"kind": "movie"})
	case strings.Contains(q, "Mortal Kombat") && offered("seerr_search"):
		return call("seerr_search", map[string]any{"query": "mortal kombat"})
	}
	return f.reply(llmtest.Text("I cannot check that without my tools."), "I have no tool for this.")
}

// toolOf is the name of the tool call id of msgs.
func toolOf(msgs []openai.ChatCompletionMessage, id string) string {
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if c.ID == id {
				return c.Function.Name
			}
		}
	}
	return ""
}

// fromResult is the answer a tool's result gives.
func fromResult(tool, content string) string {
	lines := strings.Split(content, "\n")
	switch tool {
	case "current_time":
		return "In Tokyo it is " + strings.TrimPrefix(lines[0], "time: ") + "."
	case "web_fetch":
		for _, fact := range facts {
			if strings.Contains(content, fact) {
				return fact + " (" + strings.TrimPrefix(lines[0], "URL: ") + ")"
			}
		}
	default:
		for _, l := range lines {
			if strings.HasPrefix(l, "- ") {
				return "Seerr lists first: " + strings.TrimPrefix(l, "- ")
			}
		}
	}
	return "The tool said nothing I can use."
}

// record runs every scenario on flavour f and writes its cases, after
// removing the flavour's old ones.
func record(ctx context.Context, t *testing.T, f flavour, w world) {
	t.Helper()
	old, _ := filepath.Glob(filepath.Join(casesDir, "*.json"))
	for _, name := range old {
		if f.owns(strings.TrimSuffix(filepath.Base(name), ".json")) {
			if err := os.Remove(name); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range scenarios {
		id := f.id(s)
		run, err := w.env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: testenv.TaskQueue},
			contract.AgentWorkflowName, contract.AgentInput{Agent: s.agent, Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: s.question(w.site)}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := run.Get(ctx, nil); err != nil {
			t.Fatal(err)
		}
		c, err := evals.ReadRun(ctx, w.env.Client, run.GetID())
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Calls) == 0 {
			t.Fatalf("case %s recorded no tool call: its agent did not use its tools", id)
		}
		if _, err := evals.WriteCase(casesDir, c); err != nil {
			t.Fatal(err)
		}
	}
}

// evaluate runs the Evaluation of the committed cases of flavour f with
// the committed graders.
func evaluate(ctx context.Context, t *testing.T, f flavour, env *testenv.Env, id string) evals.Report {
	t.Helper()
	all, err := evals.ReadCases(casesDir)
	if err != nil {
		t.Fatal(err)
	}
	graders, err := os.ReadFile(gradersFile)
	if err != nil {
		t.Fatal(err)
	}
	in := contract.EvalInput{Graders: string(graders)}
	for _, c := range all {
		if f.owns(c.ID) {
			in.Cases = append(in.Cases, c.EvalCase)
		}
	}
	if len(in.Cases) != len(scenarios) {
		t.Fatalf("%d %s cases in %s, want one per scenario (%d)", len(in.Cases), f.name, casesDir, len(scenarios))
	}
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: testenv.TaskQueue}, contract.EvaluationWorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	var res contract.EvalResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Cases) != len(in.Cases) {
		t.Fatalf("%d results of %d cases", len(res.Cases), len(in.Cases))
	}
	return evals.NewReport(res.Cases)
}

// TestShippedAgents evaluates the shipped agents against their cases, on
// the plain model and on the thinking one; no tool runs.
func TestShippedAgents(t *testing.T) {
	for _, f := range []flavour{plain, thinking} {
		t.Run(f.name, func(t *testing.T) {
			w := stack(t, f, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if *update {
				record(ctx, t, f, w)
				w.hits.Store(0)
			}
			seerrCalls := len(w.seerr.Calls())
			rep := evaluate(ctx, t, f, w.env, "eval-shipped-"+f.name)
			if rep.Failed > 0 {
				var md strings.Builder
				rep.Markdown(&md)
				t.Errorf("the shipped agents fail committed cases:\n%s", md.String())
			}
			if n := w.hits.Load(); n != 0 {
				t.Errorf("the evaluation fetched %d pages: a tool ran", n)
			}
			if n := len(w.seerr.Calls()) - seerrCalls; n != 0 {
				t.Errorf("the evaluation called Seerr %d times: a tool ran", n)
			}
		})
	}
}

// wantFailed checks that the cases of rep that fail are exactly those
// whose id starts with prefix.
func wantFailed(t *testing.T, rep evals.Report, prefix string) {
	t.Helper()
	n := 0
	for _, c := range rep.Cases {
		broken := strings.HasPrefix(c.Case, prefix)
		if broken {
			n++
		}
		if c.Pass == broken {
			t.Errorf("case %s: pass %v, want %v", c.Case, c.Pass, !broken)
		}
	}
	if n == 0 {
		t.Fatalf("no %s* case was evaluated", prefix)
	}
}

// layerOf is a copy of the shipped agent file name, every line for which
// drop is true left out; it fails t when nothing was left out.
func layerOf(t *testing.T, name string, drop func(line string) bool) fs.FS {
	t.Helper()
	src, err := os.ReadFile("../../skills/builtin/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for line := range strings.Lines(string(src)) {
		if !drop(line) {
			kept = append(kept, line)
		}
	}
	broken := strings.Join(kept, "")
	if broken == string(src) {
		t.Fatalf("%s changed: the test's regression no longer applies to it", name)
	}
	return fstest.MapFS{name: {Data: []byte(broken)}}
}

// TestRegressionFailsEvaluation removes the read-before-relying
// instruction from a copy of researcher.md: the scripted model then
// answers without reading, and the evaluation must fail every researcher
// case, and only those.
func TestRegressionFailsEvaluation(t *testing.T) {
	layer := layerOf(t, "researcher.md", func(line string) bool { return strings.Contains(line, readFirst) })
	w := stack(t, plain, layer)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	wantFailed(t, evaluate(ctx, t, plain, w.env, "eval-regression"), "researcher-")
}

// TestStrippedToolsFailEvaluation strips the assistant of its tools (its
// skills line left out of a copy of assistant.md): the model is offered
// no tool, cannot check, and the evaluation must fail every assistant
// case, and only those.
func TestStrippedToolsFailEvaluation(t *testing.T) {
	layer := layerOf(t, "assistant.md", func(line string) bool { return strings.HasPrefix(line, "skills:") })
	w := stack(t, plain, layer)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	wantFailed(t, evaluate(ctx, t, plain, w.env, "eval-stripped"), "assistant-")
}
