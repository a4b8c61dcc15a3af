// Package modelcheck asks the model endpoint, once at start, whether it
// answers and has the default model, so that the start banner tells a new
// user what is wrong and the one command that fixes it, instead of a
// first request that fails after its retries. It also gives the same
// advice for a model call that could not connect.
package modelcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/longhaul-dev/longhaul/internal/redact"
)

// Timeout bounds the whole check: it runs beside the rest of start-up and
// must not slow it.
const Timeout = 3 * time.Second

// Result is what the check found.
type Result struct {
	// Reachable: the endpoint answered HTTP.
	Reachable bool
	// Ollama: the endpoint is Ollama (its native /api/tags answered).
	Ollama bool
	// Listed: the endpoint listed its models; Models are their names.
	Listed bool
	Models []string
	// VLLM: the model list is vLLM's (its cards carry max_model_len or
	// owned_by "vllm").
	VLLM bool
	// Missing are the models Probe was asked of that Ollama has not
	// pulled.
	Missing []string
	// Tools is what Probe found of tool support: ToolsUnknown,
	// ToolsAccepted, or why tools are refused and the fix; NoTools are
	// the models Ollama says cannot call tools.
	Tools   string
	NoTools []string
	// Thinking are the models Ollama's capabilities say think (qwen3,
	// deepseek-r1, gpt-oss): their answers start with thinking, out of
	// the same output budget, so a worker keeps room for it from their
	// first call (activities.KnownThinkers). Only an Ollama says; other
	// servers' thinkers are known once they have thought.
	Thinking []string
	// Problem is what is wrong, empty when nothing is (or nothing could
	// be told); Fix is the one command or setting that fixes it.
	Problem, Fix string
}

// OK reports whether nothing is wrong.
func (r Result) OK() bool { return r.Problem == "" }

// Status is the result for the start banner: that model is there, or
// that the endpoint answers but lists no models, or the problem and its
// fix; then what was found of tools and of the models that think.
func (r Result) Status(model string) string {
	s := r.status(model)
	if r.Tools != ToolsUnknown {
		s += "; tools " + r.Tools
	}
	if len(r.Thinking) > 0 {
		s += "; thinking: " + strings.Join(r.Thinking, ", ") + " (room kept to think)"
	}
	return s
}

func (r Result) status(model string) string {
	switch {
	case !r.OK():
		return r.Problem + "; fix: " + r.Fix
	case r.Listed:
		return model + " is there"
	}
	return "answers (it lists no models, so " + model + " is not checked)"
}

// Check asks the endpoint at baseURL (an OpenAI-compatible base ending in
// /v1, as LONGHAUL_LLM_BASE_URL) whether it answers and whether it has
// model. Ollama is asked through its native model list, GET /api/tags
// (ollama/ollama server/routes.go, `r.GET("/api/tags", s.ListHandler)`:
// line 1193 at v0.9.0, 1684 at v0.19.0), whose names are what `ollama
// pull` takes; any other endpoint through GET /v1/models with apiKey. A
// check that cannot finish within Timeout says so.
func Check(ctx context.Context, hc *http.Client, baseURL, apiKey, model string) Result {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	base := strings.TrimSuffix(baseURL, "/")
	if root, ok := strings.CutSuffix(base, "/v1"); ok {
		if names, err := ollamaTags(ctx, hc, root); err == nil {
			r := Result{Reachable: true, Ollama: true, Listed: true, Models: names}
			if !hasModel(names, model, true) {
				r.Problem = fmt.Sprintf("Ollama has no %s (it has %s)", model, list(names))
				r.Fix = "ollama pull " + model
			}
			return r
		} else if unreachable(err) {
			return Result{Problem: "cannot reach " + redact.URLs(baseURL) + " (" + reason(err) + ")", Fix: Advice(baseURL, model)}
		}
	}
	names, vllm, status, err := openAIModels(ctx, hc, base, apiKey)
	switch {
	case err != nil && unreachable(err):
		return Result{Problem: "cannot reach " + redact.URLs(baseURL) + " (" + reason(err) + ")", Fix: Advice(baseURL, model)}
	case err != nil:
		return Result{Problem: "no answer from " + redact.URLs(baseURL) + " (" + reason(err) + ")", Fix: "check LONGHAUL_LLM_BASE_URL"}
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return Result{Reachable: true, Problem: fmt.Sprintf("%s refuses the key (%d)", redact.URLs(baseURL), status), Fix: "set LONGHAUL_LLM_API_KEY to a key the endpoint accepts"}
	case status != http.StatusOK:
		// An endpoint without a model list (or a proxy in front of one)
		// may still serve chats: nothing can be told.
		return Result{Reachable: true}
	}
	r := Result{Reachable: true, Listed: true, Models: names, VLLM: vllm}
	if !hasModel(names, model, false) {
		r.Problem = fmt.Sprintf("%s does not list %s (it lists %s)", redact.URLs(baseURL), model, list(names))
		r.Fix = "set LONGHAUL_LLM_MODEL to a model it lists"
	}
	return r
}

// Advice is the fix for a model endpoint that cannot be reached: start
// Ollama when the endpoint looks like a local one, and in any case which
// setting names the endpoint.
func Advice(baseURL, model string) string {
	u, err := url.Parse(baseURL)
	if err == nil && (u.Port() == "11434" || strings.Contains(u.Hostname(), "ollama")) {
		return fmt.Sprintf("start Ollama (`ollama serve`, then `ollama pull %s`), or set LONGHAUL_LLM_BASE_URL to your model endpoint", model)
	}
	return "check that the endpoint runs, or set LONGHAUL_LLM_BASE_URL to your model endpoint"
}

// Explain is the message of a model call at baseURL that could not
// connect at all, with the fix (Advice); "" when err is another failure.
func Explain(err error, baseURL, model string) string {
	if err == nil || !unreachable(err) {
		return ""
	}
	return "cannot reach " + redact.URLs(baseURL) + " (" + reason(err) + "); " + Advice(baseURL, model)
}

// Unreachable reports whether err is a failure to connect to the
// endpoint at all (refused, no such host, no route), as opposed to an
// answer, a timeout or a cut stream.
func Unreachable(err error) bool { return unreachable(err) }

func unreachable(err error) bool {
	var dnsErr *net.DNSError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) ||
		errors.As(err, &dnsErr) && dnsErr.IsNotFound
}

// reason is err's last part, without the request's URL.
func reason(err error) string {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer within " + Timeout.String()
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && errors.Is(err, syscall.ECONNREFUSED) {
		msg = msg[i+2:]
	}
	return msg
}

// ollamaTags is Ollama's list of local models (api.ListResponse: each
// model's name and model are its shortest display name, e.g.
// "llama3.1:8b", "llama3.1:latest"). An endpoint that is not Ollama
// answers something else, an error here.
func ollamaTags(ctx context.Context, hc *http.Client, root string) ([]string, error) {
	var body struct {
		Models *[]struct{ Name, Model string } `json:"models"`
	}
	status, err := getJSON(ctx, hc, root+"/api/tags", "", &body)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK || body.Models == nil {
		return nil, fmt.Errorf("not Ollama: GET /api/tags answered %d", status)
	}
	names := []string{}
	for _, m := range *body.Models {
		names = append(names, m.Name)
	}
	return names, nil
}

// openAIModels is GET /v1/models's list of model ids, and whether the
// list is vLLM's: its ModelCard has max_model_len and owned_by "vllm"
// (vllm/entrypoints/openai/engine/protocol.py at 040a2cc2, ModelCard).
func openAIModels(ctx context.Context, hc *http.Client, base, apiKey string) ([]string, bool, int, error) {
	var body struct {
		Data []struct {
			ID          string `json:"id"`
			OwnedBy     string `json:"owned_by"`
			MaxModelLen *int   `json:"max_model_len"`
		} `json:"data"`
	}
	status, err := getJSON(ctx, hc, base+"/models", apiKey, &body)
	if err != nil || status != http.StatusOK {
		return nil, false, status, err
	}
	names, vllm := []string{}, false
	for _, m := range body.Data {
		names = append(names, m.ID)
		vllm = vllm || m.OwnedBy == "vllm" || m.MaxModelLen != nil
	}
	return names, vllm, status, nil
}

// IsOllama reports whether the OpenAI-compatible endpoint at baseURL is
// an Ollama: its native GET /api/tags answers (see Check). An error is a
// failure to ask, which says nothing either way.
func IsOllama(ctx context.Context, hc *http.Client, baseURL, apiKey string) (bool, error) {
	root, ok := strings.CutSuffix(strings.TrimSuffix(baseURL, "/"), "/v1")
	if !ok {
		return false, nil
	}
	var body struct {
		Models *[]json.RawMessage `json:"models"`
	}
	status, err := getJSON(ctx, hc, root+"/api/tags", apiKey, &body)
	if err != nil && status == 0 {
		return false, err
	}
	// An answer that is not Ollama's list (a body that is not JSON
	// included) says it is another server.
	return err == nil && status == http.StatusOK && body.Models != nil, nil
}

// getJSON GETs u and decodes a 200's JSON body into v. A body that is not
// JSON is an error; another status is returned with no error.
func getJSON(ctx context.Context, hc *http.Client, u, apiKey string, v any) (int, error) {
	resp, err := send(ctx, hc, http.MethodGet, u, apiKey, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return resp.StatusCode, nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(v); err != nil {
		return resp.StatusCode, fmt.Errorf("GET %s: %w", u, err)
	}
	return resp.StatusCode, nil
}

// send makes one request of an endpoint with its key; a body is JSON.
func send(ctx context.Context, hc *http.Client, method, u, apiKey string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	return hc.Do(req)
}

// hasModel reports whether names has model; for Ollama a name without a
// tag is its :latest, as `ollama pull` takes it.
func hasModel(names []string, model string, ollama bool) bool {
	if slices.Contains(names, model) {
		return true
	}
	return ollama && !strings.Contains(model, ":") && slices.Contains(names, model+":latest")
}

// list is a short list of names for a message.
func list(names []string) string {
	switch {
	case len(names) == 0:
		return "none"
	case len(names) > 5:
		return strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
	}
	return strings.Join(names, ", ")
}
