// Package servers_test runs the whole stack against the scripted model
// speaking real servers' dialects (llmtest's flavours): what each server
// writes when it refuses, and what it ignores that Longhaul enforces.
package servers_test

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/longhaul-dev/longhaul/internal/endpoints"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// agents is a layer with the agent "clock" (the current_time tool, on the
// model named by clockModel) and "fallback" (the model list front).
func agents(clockModel, front string) fs.FS {
	return fstest.MapFS{
		"clock.md":       {Data: []byte("---\nagent: clock\ndescription: Tells the time\nmode: chat\nskills: [clock]\nmodel: " + clockModel + "\n---\nYou tell the time.\n")},
		"clock-skill.md": {Data: []byte("---\nskill: clock\ndescription: The time\ntools: [current_time]\n---\nUse current_time.\n")},
		"fallback.md":    {Data: []byte("---\nagent: fallback\ndescription: Answers on the first model that can\nmodel: " + front + "\n---\nYou answer briefly.\n")},
	}
}

// chat posts a (non-streamed) chat completion and returns the status and
// the body.
func chat(t *testing.T, env *testenv.Env, body map[string]any) (int, string) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(env.URL+"/v1/chat/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(raw)
}

// answer is a chat completion's text.
func answer(t *testing.T, raw string) string {
	t.Helper()
	var c struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(raw), &c); err != nil || len(c.Choices) == 0 {
		t.Fatalf("not a chat completion: %s", raw)
	}
	return c.Choices[0].Message.Content
}

func user(text string) []map[string]string {
	return []map[string]string{{"role": "user", "content": text}}
}

// TestVLLMContextFallsBack: a vLLM whose window the request does not fit
// answers its 400 (code the number 400); Longhaul reads it as
// context_length_exceeded, does not retry it, and hands the call to the
// next model of the agent's list, which answers.
func TestVLLMContextFallsBack(t *testing.T) {
	small, big := llmtest.New(t), llmtest.New(t)
	small.SetFlavour(llmtest.FlavourVLLM)
	small.SetWindow(64, llmtest.BehaviourOpenAI)
	small.SetDefault(llmtest.Text("The small model answers."))
	big.SetFlavour(llmtest.FlavourVLLM)
	big.SetDefault(llmtest.Text("The larger model answers."))
	env := testenv.Start(t, testenv.Options{
		Layers:    []fs.FS{agents("qwen3:8b", "[small:m1, big:m2]")},
		Endpoints: []endpoints.Endpoint{{Name: "small", BaseURL: small.URL()}, {Name: "big", BaseURL: big.URL()}},
	})
	status, raw := chat(t, env, map[string]any{"model": "fallback", "messages": user(strings.Repeat("Tell me about the whole history of tea, in detail, please. ", 20))})
	if status != http.StatusOK {
		t.Fatalf("chat = %d %s", status, raw)
	}
	if got := answer(t, raw); got != "The larger model answers." {
		t.Errorf("answer = %q, want the larger model's", got)
	}
	if n := len(small.Requests()); n != 1 {
		t.Errorf("the small model got %d requests, want 1 (a context refusal is not retried)", n)
	}
}

// TestUnpulledOllamaModel: an agent's model Ollama has not pulled is
// answered with Ollama's 404; the chat's error keeps Ollama's words and
// names the command that fixes it.
func TestUnpulledOllamaModel(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{agents("gpt-oss:20b", "[qwen3:8b]")}})
	env.Model.SetFlavour(llmtest.FlavourOllama)
	env.Model.SetPulled("qwen3:8b")
	status, raw := chat(t, env, map[string]any{"model": "clock", "messages": user("What time is it?")})
	if status < 400 || !strings.Contains(raw, "not found") || !strings.Contains(raw, "ollama pull gpt-oss:20b") {
		t.Fatalf("chat = %d %s; want an error naming `ollama pull gpt-oss:20b`", status, raw)
	}
	if n := len(env.Model.Requests()); n != 1 {
		t.Errorf("Ollama got %d chat requests, want 1 (a missing model is not retried)", n)
	}
}

// TestOllamaIgnoredParams: what Ollama's OpenAI route ignores, Longhaul
// enforces: tool_choice "none" sends no tools; parallel_tool_calls false
// runs one call of an answer, and the history the model reads next holds
// that call and its result alone; max_completion_tokens reaches Ollama as
// max_tokens.
func TestOllamaIgnoredParams(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{agents("qwen3:8b", "[qwen3:8b]")}})
	env.Model.SetFlavour(llmtest.FlavourOllama)
	env.Model.SetPulled("qwen3:8b")

	t.Run("tool_choice none", func(t *testing.T) {
		before := len(env.Model.Requests())
		env.Model.Enqueue(llmtest.Text("I will not look."))
		status, raw := chat(t, env, map[string]any{"model": "clock", "messages": user("What time is it?"), "tool_choice": "none"})
		if status != http.StatusOK {
			t.Fatalf("chat = %d %s", status, raw)
		}
		reqs := env.Model.Requests()[before:]
		if len(reqs) != 1 {
			t.Fatalf("requests = %d, want 1", len(reqs))
		}
		if n := len(reqs[0].Chat.Tools); n != 0 {
			t.Errorf("%d tools offered, want none", n)
		}
	})

	t.Run("parallel_tool_calls false", func(t *testing.T) {
		before := len(env.Model.Requests())
		env.Model.Enqueue(llmtest.ToolCalls(
			llmtest.ToolCall{Name: "current_time", Arguments: `{"timezone":"UTC"}`},
			llmtest.ToolCall{Name: "current_time", Arguments: `{"timezone":"Asia/Tokyo"}`},
		))
		env.Model.Enqueue(llmtest.Text("It is noon in UTC."))
		status, raw := chat(t, env, map[string]any{"model": "clock", "messages": user("What time is it?"), "parallel_tool_calls": false})
		if status != http.StatusOK {
			t.Fatalf("chat = %d %s", status, raw)
		}
		reqs := env.Model.Requests()[before:]
		if len(reqs) != 2 {
			t.Fatalf("requests = %d, want 2", len(reqs))
		}
		var calls, results int
		for _, m := range reqs[1].Chat.Messages {
			calls += len(m.ToolCalls)
			if m.Role == "tool" {
				results++
			}
		}
		if calls != 1 || results != 1 {
			t.Errorf("the second request holds %d calls and %d results, want 1 and 1", calls, results)
		}
	})

	t.Run("max_completion_tokens", func(t *testing.T) {
		before := len(env.Model.Requests())
		env.Model.Enqueue(llmtest.Text("Noon."))
		status, raw := chat(t, env, map[string]any{"model": "clock", "messages": user("What time is it?"), "max_completion_tokens": 50})
		if status != http.StatusOK {
			t.Fatalf("chat = %d %s", status, raw)
		}
		reqs := env.Model.Requests()[before:]
		if len(reqs) != 1 {
			t.Fatalf("requests = %d, want 1", len(reqs))
		}
		if reqs[0].Chat.MaxTokens != 50 || reqs[0].Chat.MaxCompletionTokens != 0 {
			t.Errorf("request limits: max_tokens %d, max_completion_tokens %d; want 50 and none", reqs[0].Chat.MaxTokens, reqs[0].Chat.MaxCompletionTokens)
		}
	})
}
