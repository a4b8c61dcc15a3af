package api_test

import (
	"net/http"
	"testing"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
)

// wantQuota checks resp is a 403 quota_exceeded saying msg.
func wantQuota(t *testing.T, resp *http.Response, msg string) {
	t.Helper()
	webtest.WantCode(t, resp, http.StatusForbidden, "quota_exceeded", msg)
}

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
	wantQuota(t, resp, "LONGHAUL_MAX_FILES")
	if n := countFiles(t, docs, "alice"); n != 1 {
		t.Errorf("alice has %d files, want 1", n)
	}
}
