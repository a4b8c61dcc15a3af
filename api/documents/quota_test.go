package documents_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/api/documents"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// TestFileQuotas: a principal stores at most Limits.Files files of at
// most Limits.FileBytes bytes in all; past either an upload is a 403
// quota_exceeded that keeps nothing, and deleting makes room. Another
// principal's files count for nobody else.
func TestFileQuotas(t *testing.T) {
	t.Run("files", func(t *testing.T) {
		base, docs, _ := docsServerQuotas(t, 1<<20, documents.Quotas{Files: 2})
		a := uploadText(t, base, aliceAuth, "a.txt", "one")
		uploadText(t, base, aliceAuth, "b.txt", "two")
		uploadText(t, base, bobAuth, "c.txt", "bob's own")
		ct, body := multipartBody(t, "c.txt", []byte("three"), "purpose", "assistants")
		webtest.WantQuota(t, upload(t, base, aliceAuth, ct, body), "you store 2, at most 2 (LONGHAUL_MAX_FILES)")
		if n := webtest.CountFiles(t, docs, "alice"); n != 2 {
			t.Errorf("alice has %d files, want 2", n)
		}
		if resp := doAt(t, base, "DELETE", "/v1/files/"+a.ID, nil, aliceAuth); resp.StatusCode != http.StatusOK {
			t.Fatalf("delete = %d", resp.StatusCode)
		}
		uploadText(t, base, aliceAuth, "c.txt", "three")
	})
	t.Run("bytes", func(t *testing.T) {
		base, docs, _ := docsServerQuotas(t, 1<<20, documents.Quotas{FileBytes: 100})
		uploadText(t, base, aliceAuth, "a.txt", strings.Repeat("a", 60))
		ct, body := multipartBody(t, "b.txt", []byte(strings.Repeat("b", 50)), "purpose", "assistants")
		webtest.WantQuota(t, upload(t, base, aliceAuth, ct, body), "larger than the 40 bytes you have left of 100 (LONGHAUL_MAX_FILE_STORAGE)")
		// The purpose after the file: stored, then copied within the store.
		ct, body = multipartBody(t, "c.txt", []byte(strings.Repeat("c", 40)), "purpose", "user_data")
		if resp := upload(t, base, aliceAuth, ct, body); resp.StatusCode != http.StatusOK {
			t.Fatalf("an upload that fits = %d", resp.StatusCode)
		}
		u, err := docs.Usage(context.Background(), "alice")
		if err != nil || u != (docstore.Usage{Files: 2, Bytes: 100}) {
			t.Errorf("alice's usage %+v, %v", u, err)
		}
		ct, body = multipartBody(t, "d.txt", []byte("d"), "purpose", "assistants")
		webtest.WantQuota(t, upload(t, base, aliceAuth, ct, body), "LONGHAUL_MAX_FILE_STORAGE")
		uploadText(t, base, bobAuth, "e.txt", strings.Repeat("e", 100))
	})
}

// TestIngestionQuota: a principal has at most Limits.Ingestions files
// being ingested at once; an attachment or batch past it is a 429 with
// Retry-After that starts nothing, attaching a file attached already is
// not a new ingestion, and one ending makes room.
func TestIngestionQuota(t *testing.T) {
	base, docs, tc := docsServerQuotas(t, 1<<20, documents.Quotas{Ingestions: 2})
	f1 := uploadText(t, base, aliceAuth, "1.txt", "one")
	f2 := uploadText(t, base, aliceAuth, "2.txt", "two")
	f3 := uploadText(t, base, aliceAuth, "3.txt", "three")
	vs := decode[wire.VectorStoreObject](t, doAt(t, base, "POST", "/v1/vector_stores", map[string]any{"file_ids": []string{f1.ID, f2.ID}}, aliceAuth))
	attach := func(id string) *http.Response {
		return doAt(t, base, "POST", "/v1/vector_stores/"+vs.ID+"/files", map[string]any{"file_id": id}, aliceAuth)
	}
	resp := attach(f3.ID)
	wantError(t, resp, http.StatusTooManyRequests, "you have 2 in progress, at most 2 at once (LONGHAUL_MAX_INGESTIONS)")
	if resp.Header.Get("Retry-After") != "30" {
		t.Errorf("Retry-After %q", resp.Header.Get("Retry-After"))
	}
	wantError(t, doAt(t, base, "POST", "/v1/vector_stores/"+vs.ID+"/file_batches", map[string]any{"file_ids": []string{f3.ID}}, aliceAuth),
		http.StatusTooManyRequests, "LONGHAUL_MAX_INGESTIONS")
	wantError(t, doAt(t, base, "POST", "/v1/vector_stores", map[string]any{"file_ids": []string{f3.ID}}, aliceAuth),
		http.StatusTooManyRequests, "LONGHAUL_MAX_INGESTIONS")
	if n := tc.starts("ingest-" + vs.ID + "-" + f3.ID); n != 0 {
		t.Errorf("%d ingestions of the refused file started", n)
	}
	if resp := attach(f1.ID); resp.StatusCode != http.StatusOK {
		t.Errorf("attaching an attached file again = %d", resp.StatusCode)
	}
	// Bob's ingestions are his own.
	g := uploadText(t, base, bobAuth, "g.txt", "bob")
	if resp := doAt(t, base, "POST", "/v1/vector_stores", map[string]any{"file_ids": []string{g.ID}}, bobAuth); resp.StatusCode != http.StatusOK {
		t.Errorf("bob's vector store = %d", resp.StatusCode)
	}
	if err := docs.SetStatus(context.Background(), "alice", vs.ID, f1.ID, docstore.StatusCompleted, nil); err != nil {
		t.Fatal(err)
	}
	if resp := attach(f3.ID); resp.StatusCode != http.StatusOK {
		t.Errorf("attaching after one ended = %d", resp.StatusCode)
	}
}
