package modelcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/longhaul-dev/longhaul/internal/redact"
)

// Tool support, as Probe reports it in Result.Tools.
const (
	// ToolsUnknown: nothing was asked (a server that is neither Ollama
	// nor vLLM-like, or none of the models could be asked).
	ToolsUnknown = ""
	// ToolsAccepted: the server took a request with a tool.
	ToolsAccepted = "accepted"
)

// AutoToolChoiceFix is what a vLLM that refuses tools needs: vLLM answers
// a request with tools and tool_choice "auto" (or none, which it reads as
// "auto") with 400 `"auto" tool choice requires --enable-auto-tool-choice
// and --tool-call-parser to be set` unless it was started with both
// flags, and "required" or a named function with `… requires
// --tool-call-parser to be set` (vllm/renderers/online_renderer.py at
// 01063cd0, OnlineRenderer.render_chat; vllm-project/vllm as the search
// index holds it, files on main after the v0.28.0 release).
const AutoToolChoiceFix = "start vLLM with --enable-auto-tool-choice --tool-call-parser <the parser of the model's family, e.g. hermes for Qwen, llama3_json for Llama 3.1>"

// Probe is Check for every model the endpoint at baseURL serves to this
// worker (models; the first is the one the banner names), within the
// same Timeout: an Ollama is asked for all of them in one /api/tags, and
// a missing one is named with `ollama pull`; tool support is asked where
// it is cheap and honest: Ollama's POST /api/show capabilities (no model
// is loaded; the same answers say which models think), and, for a vLLM-like server (its /v1/models has vLLM's
// max_model_len or owned_by "vllm"), one chat request with a tool and
// max_tokens 1, which a vLLM without --enable-auto-tool-choice refuses
// before it generates anything. Other servers (OpenAI's own) are not
// sent a request that costs anything.
func Probe(ctx context.Context, hc *http.Client, baseURL, apiKey string, models []string) Result {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	models = slices.Compact(slices.DeleteFunc(slices.Clone(models), func(m string) bool { return m == "" }))
	if len(models) == 0 {
		return Result{}
	}
	r := Check(ctx, hc, baseURL, apiKey, models[0])
	if !r.Reachable || !r.Listed {
		return r
	}
	base := strings.TrimSuffix(baseURL, "/")
	if r.Ollama {
		root := strings.TrimSuffix(base, "/v1")
		var have []string
		for _, m := range models {
			if hasModel(r.Models, m, true) {
				have = append(have, m)
			} else {
				r.Missing = append(r.Missing, m)
			}
		}
		if len(r.Missing) > 0 {
			r.Problem = "Ollama has no " + strings.Join(r.Missing, ", ") + " (it has " + list(r.Models) + ")"
			r.Fix = PullCommand(r.Missing...)
		}
		r.Tools, r.NoTools, r.Thinking = ollamaCapabilities(ctx, hc, root, apiKey, have)
		return r
	}
	for _, m := range models[1:] {
		if !hasModel(r.Models, m, false) {
			r.Missing = append(r.Missing, m)
		}
	}
	if len(r.Missing) > 0 && r.OK() {
		r.Problem = redact.URLs(baseURL) + " does not list " + strings.Join(r.Missing, ", ") + " (it lists " + list(r.Models) + ")"
		r.Fix = "name models it lists in the agents' model: and models:"
	}
	if r.VLLM && r.OK() {
		r.Tools = vllmTools(ctx, hc, base, apiKey, models[0])
	}
	return r
}

// PullCommand is the command that pulls models into Ollama.
func PullCommand(models ...string) string {
	cmds := make([]string, len(models))
	for i, m := range models {
		cmds[i] = "ollama pull " + m
	}
	return strings.Join(cmds, " && ")
}

// ollamaCapabilities asks Ollama's POST /api/show which of models can
// call tools and which think, from the capabilities of one answer each
// (ollama v0.32.15 api/types.go:752 ShowResponse.Capabilities). Tools:
// "tools" is listed for those (types/model/capability.go:7
// CapabilityTools); a chat with tools to another is refused with 400
// "<model> does not support tools" (server/images.go:45, 550). Thinking:
// "thinking" (CapabilityThinking) is listed for a model whose template
// has thinking tags, of the gpt-oss family or with a parser that thinks
// (server/images.go Model.Capabilities: qwen3, deepseek-r1, gpt-oss), and
// Ollama turns such a model's thinking on when a request does not say
// (server/routes.go ChatHandler, req.Think nil).
func ollamaCapabilities(ctx context.Context, hc *http.Client, root, apiKey string, models []string) (tools string, without, thinking []string) {
	asked := 0
	for _, m := range models {
		body, _ := json.Marshal(map[string]string{"model": m})
		var show struct {
			Capabilities *[]string `json:"capabilities"`
		}
		status, err := postJSON(ctx, hc, root+"/api/show", apiKey, body, &show)
		if err != nil || status != http.StatusOK || show.Capabilities == nil {
			continue
		}
		asked++
		if !slices.Contains(*show.Capabilities, "tools") {
			without = append(without, m)
		}
		if slices.Contains(*show.Capabilities, "thinking") {
			thinking = append(thinking, m)
		}
	}
	switch {
	case asked == 0:
		return ToolsUnknown, nil, nil
	case len(without) > 0:
		return "not supported by " + strings.Join(without, ", ") + " (Ollama's capabilities); give its agents a model that lists tools", without, thinking
	}
	return ToolsAccepted, nil, thinking
}

// vllmTools sends vLLM the cheapest request that shows whether it takes
// tools: one tool, tool_choice unset (vLLM's default with tools is
// "auto"), max_tokens 1.
func vllmTools(ctx context.Context, hc *http.Client, base, apiKey, model string) string {
	body, _ := json.Marshal(map[string]any{
		"model":      model,
		"messages":   []map[string]string{{"role": "user", "content": "ping"}},
		"max_tokens": 1,
		"tools": []map[string]any{{"type": "function", "function": map[string]any{
			"name": "ping", "description": "Answers pong.", "parameters": map[string]any{"type": "object", "properties": map[string]any{}},
		}}},
	})
	var answer struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	status, err := postJSON(ctx, hc, base+"/chat/completions", apiKey, body, &answer)
	switch {
	case err != nil:
		return ToolsUnknown
	case status == http.StatusOK:
		return ToolsAccepted
	case answer.Error != nil && RefusesTools(answer.Error.Message):
		return "refused; " + AutoToolChoiceFix
	}
	return ToolsUnknown
}

// RefusesTools reports whether an error message is vLLM's refusal of a
// request with tools by a server started without
// --enable-auto-tool-choice or --tool-call-parser (see AutoToolChoiceFix).
func RefusesTools(msg string) bool {
	return strings.Contains(msg, "--enable-auto-tool-choice") || strings.Contains(msg, "requires --tool-call-parser")
}

// postJSON POSTs body to u and decodes the JSON answer, whatever its
// status, into v (an error answer is read too: it says why).
func postJSON(ctx context.Context, hc *http.Client, u, apiKey string, body []byte, v any) (int, error) {
	resp, err := send(ctx, hc, http.MethodPost, u, apiKey, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(v)
	return resp.StatusCode, nil
}
