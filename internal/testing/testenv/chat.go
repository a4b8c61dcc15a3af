package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// Chat sends one chat completion, not streamed, to agent with messages
// and headers (Open WebUI's chat id, a key), as Open WebUI does, and
// returns the answer's text and its run's id; anything but one answer
// with 200 fails t.
func (e *Env) Chat(ctx context.Context, t testing.TB, agent string, messages []map[string]string, headers map[string]string) (answer, run string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": agent, "messages": messages})
	req, err := http.NewRequestWithContext(ctx, "POST", e.URL+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat with %s: %d %s", agent, resp.StatusCode, b)
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) != 1 {
		t.Fatalf("chat with %s: answer %s: %v", agent, b, err)
	}
	return out.Choices[0].Message.Content, resp.Header.Get("X-Longhaul-Run-Id")
}
