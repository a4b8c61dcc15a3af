package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/api"
)

// TestImageURLsRefused sends image URLs the model endpoint must not be
// handed — another scheme, an internal host — through Chat Completions,
// Responses and the runs API: each is a 400 naming the part, before any
// run starts (the API's Temporal client panics if called).
func TestImageURLsRefused(t *testing.T) {
	base := embeddingsAPI(t, api.Upstream{})
	chatParts := func(u string) []map[string]any {
		return []map[string]any{
			{"role": "system", "content": "be brief"},
			{"role": "user", "content": []map[string]any{{"type": "text", "text": "what is this?"}, {"type": "image_url", "image_url": map[string]any{"url": u}}}},
		}
	}
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "file:///etc/passwd", "https://127.0.0.1:8233/", "https://localhost/x.png", "https://2852039166/"} {
		for _, tt := range []struct {
			path string
			body any
			part string
		}{
			{"/v1/chat/completions", map[string]any{"model": "assistant", "messages": chatParts(u)}, "messages[1].content[1].image_url.url: "},
			{"/v1/runs", map[string]any{"agent": "assistant", "messages": chatParts(u)}, "messages[1].content[1].image_url.url: "},
			{"/v1/responses", map[string]any{"model": "assistant", "input": []map[string]any{
				{"type": "message", "role": "user", "content": "first"},
				{"type": "message", "role": "user", "content": []map[string]any{{"type": "input_text", "text": "what is this?"}, {"type": "input_image", "image_url": u}}},
			}}, "input[1].content[1].image_url: "},
		} {
			resp := doAt(t, base, "POST", tt.path, tt.body, annKey)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), tt.part) {
				t.Errorf("%s with %s = %d %s, want a 400 naming %q", tt.path, u, resp.StatusCode, b, tt.part)
			}
		}
	}
}
