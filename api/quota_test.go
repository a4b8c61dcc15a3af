package api_test

import (
	"testing"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
)

// TestFileQuotaChatFilePart: a chat file part is a stored file too: past
// the quota the chat request is a 403 quota_exceeded, before any run.
func TestFileQuotaChatFilePart(t *testing.T) {
	base, docs, _ := docsServerLimits(t, 1<<20, api.Limits{Files: 1})
	uploadText(t, base, aliceAuth, "a.txt", "one")
	resp := doAt(t, base, "POST", "/v1/chat/completions", map[string]any{
		"model": "assistant",
		"messages": []map[string]any{{"role": "user", "content": []map[string]any{
			{"type": "text", "text": "read this"},
			{"type": "file", "file": map[string]any{"filename": "notes.txt", "file_data": "data:text/plain;base64,aGVsbG8="}},
		}}},
	}, aliceAuth)
	webtest.WantQuota(t, resp, "LONGHAUL_MAX_FILES")
	if n := webtest.CountFiles(t, docs, "alice"); n != 1 {
		t.Errorf("alice has %d files, want 1", n)
	}
}
