package documents_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/api/documents"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

func TestFilesRoutes(t *testing.T) {
	base, docs, _ := docsServer(t, 0)
	content := "The treaty was signed in 1648 at Münster.\n"
	ct, body := multipartBody(t, "notes.txt", []byte(content), "purpose", "user_data", "expires_after[anchor]", "created_at", "expires_after[seconds]", "7200")
	resp := upload(t, base, aliceAuth, ct, body)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("upload = %d %s", resp.StatusCode, b)
	}
	f := decode[wire.FileObject](t, resp)
	if !strings.HasPrefix(f.ID, "file-") || f.Object != "file" || f.Filename != "notes.txt" || f.Purpose != "user_data" ||
		f.Bytes != int64(len(content)) || f.Status != "processed" || f.ExpiresAt == nil || *f.ExpiresAt-f.CreatedAt < 7199 || *f.ExpiresAt-f.CreatedAt > 7200 {
		t.Errorf("file = %+v", f)
	}
	// The file part came before its purpose: stored once, not twice.
	if n := webtest.CountFiles(t, docs, "alice"); n != 1 {
		t.Errorf("alice has %d files, want 1", n)
	}
	other := uploadText(t, base, aliceAuth, "b.md", "# B")

	list := decode[wire.CursorPage[wire.FileObject]](t, doAt(t, base, "GET", "/v1/files?purpose=user_data", nil, aliceAuth))
	if len(list.Data) != 1 || list.Data[0].ID != f.ID || list.HasMore {
		t.Errorf("list by purpose = %+v", list)
	}
	list = decode[wire.CursorPage[wire.FileObject]](t, doAt(t, base, "GET", "/v1/files?limit=1&order=asc", nil, aliceAuth))
	if len(list.Data) != 1 || list.Data[0].ID != f.ID || !list.HasMore || *list.LastID != f.ID {
		t.Errorf("first page = %+v", list)
	}
	list = decode[wire.CursorPage[wire.FileObject]](t, doAt(t, base, "GET", "/v1/files?limit=1&order=asc&after="+f.ID, nil, aliceAuth))
	if len(list.Data) != 1 || list.Data[0].ID != other.ID || list.HasMore {
		t.Errorf("second page = %+v", list)
	}
	got := decode[wire.FileObject](t, doAt(t, base, "GET", "/v1/files/"+f.ID, nil, aliceAuth))
	if diff := cmp.Diff(f, got); diff != "" {
		t.Errorf("get (-want +got):\n%s", diff)
	}
	resp = doAt(t, base, "GET", "/v1/files/"+f.ID+"/content", nil, aliceAuth)
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || string(b) != content {
		t.Errorf("content = %d %q", resp.StatusCode, b)
	}
	del := decode[wire.DeletedObject](t, doAt(t, base, "DELETE", "/v1/files/"+f.ID, nil, aliceAuth))
	if del != (wire.DeletedObject{ID: f.ID, Object: "file", Deleted: true}) {
		t.Errorf("delete = %+v", del)
	}
	wantError(t, doAt(t, base, "GET", "/v1/files/"+f.ID, nil, aliceAuth), 404, "no file")
	wantError(t, doAt(t, base, "GET", "/v1/files?order=up", nil, aliceAuth), 400, "order")
	wantError(t, doAt(t, base, "GET", "/v1/files?limit=1000", nil, aliceAuth), 400, "limit")
}

func TestUploadRefusals(t *testing.T) {
	const limit = 256 << 10
	base, docs, _ := docsServer(t, limit)
	hello := []byte("hello")
	for _, tt := range []struct {
		name, ct string
		body     []byte
		status   int
		msg      string
	}{
		{"not multipart", "application/json", []byte(`{"purpose":"assistants"}`), 400, "multipart/form-data"},
		{"malformed multipart", "multipart/form-data; boundary=xyz", []byte("--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nhello"), 400, "malformed multipart"},
		{"no file", "", nil, 400, "file: required"},
		{"no purpose", "", nil, 400, "purpose: required"},
		{"unknown purpose", "", nil, 400, `purpose: must be one of assistants, user_data, got "homework"`},
		{"unsupported purpose", "", nil, 400, `purpose "fine-tune" is not supported`},
		{"bad expiry", "", nil, 400, "expires_after[seconds]"},
		{"unknown field", "", nil, 400, `unknown multipart field "model"`},
		{"over the limit", "", nil, 413, "LONGHAUL_MAX_FILE_BYTES"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ct, body := tt.ct, tt.body
			switch tt.name {
			case "no file":
				ct, body = multipartBody(t, "", nil, "purpose", "assistants")
			case "no purpose":
				ct, body = multipartBody(t, "a.txt", hello)
			case "unknown purpose":
				ct, body = multipartBody(t, "a.txt", hello, "purpose", "homework")
			case "unsupported purpose":
				ct, body = multipartBody(t, "a.txt", hello, "purpose", "fine-tune")
			case "bad expiry":
				ct, body = multipartBody(t, "a.txt", hello, "purpose", "assistants", "expires_after[anchor]", "created_at", "expires_after[seconds]", "60")
			case "unknown field":
				ct, body = multipartBody(t, "a.txt", hello, "purpose", "assistants", "model", "x")
			case "over the limit":
				ct, body = multipartBody(t, "big.txt", bytes.Repeat([]byte("a"), limit+1), "purpose", "assistants")
			}
			wantError(t, upload(t, base, aliceAuth, ct, body), tt.status, tt.msg)
			if n := webtest.CountFiles(t, docs, "alice"); n != 0 {
				t.Errorf("alice has %d files after a refused upload, want 0", n)
			}
		})
	}
}

func TestVectorStoreRoutes(t *testing.T) {
	base, docs, tc := docsServer(t, 0)
	ctx := context.Background()
	f1 := uploadText(t, base, aliceAuth, "one.txt", "alpha")
	f2 := uploadText(t, base, aliceAuth, "two.txt", "beta")

	vs := decode[wire.VectorStoreObject](t, doAt(t, base, "POST", "/v1/vector_stores", map[string]any{
		"name": "papers", "metadata": map[string]string{"team": "a"}, "file_ids": []string{f1.ID},
		"expires_after":     map[string]any{"anchor": "last_active_at", "days": 7},
		"chunking_strategy": map[string]any{"type": "static", "static": map[string]int{"max_chunk_size_tokens": 200, "chunk_overlap_tokens": 50}},
	}, aliceAuth))
	if !strings.HasPrefix(vs.ID, "vs_") || vs.Object != "vector_store" || vs.Name != "papers" || vs.Metadata["team"] != "a" ||
		vs.FileCounts.InProgress != 1 || vs.FileCounts.Total != 1 || vs.Status != "in_progress" || vs.ExpiresAfter == nil || vs.ExpiresAfter.Days != 7 {
		t.Errorf("created = %+v", vs)
	}
	id1 := contract.IngestWorkflowID(vs.ID, f1.ID)
	if tc.starts(id1) != 1 {
		t.Fatalf("ingestion of %s started %d times, want 1", f1.ID, tc.starts(id1))
	}
	in, fresh := tc.last(id1)
	if in != (contract.IngestInput{Owner: "alice", VectorStoreID: vs.ID, FileID: f1.ID, MaxChunkSizeTokens: 200, ChunkOverlapTokens: 50}) {
		t.Errorf("ingest input = %+v", in)
	}
	// A new attachment's run replaces any of an earlier one.
	if !fresh {
		t.Error("a new attachment's ingestion started as not fresh")
	}

	// Attaching again while in progress is the same attachment, and asks
	// the ingester for the running run (not fresh), or a new one only if
	// the last one failed.
	att := decode[wire.VectorStoreFileObject](t, doAt(t, base, "POST", "/v1/vector_stores/"+vs.ID+"/files", map[string]any{"file_id": f1.ID}, aliceAuth))
	if att.ID != f1.ID || att.Object != "vector_store.file" || att.Status != "in_progress" || att.ChunkingStrategy.Static.MaxChunkSizeTokens != 200 {
		t.Errorf("re-attach = %+v", att)
	}
	if _, fresh = tc.last(id1); fresh || tc.starts(id1) != 2 {
		t.Errorf("re-attach: %d starts, the last fresh=%v; want 2, not fresh", tc.starts(id1), fresh)
	}
	// Once its ingestion ended, attaching again starts nothing.
	if err := docs.SetStatus(ctx, "alice", vs.ID, f1.ID, docstore.StatusCompleted, nil); err != nil {
		t.Fatal(err)
	}
	before := tc.starts(id1)
	att = decode[wire.VectorStoreFileObject](t, doAt(t, base, "POST", "/v1/vector_stores/"+vs.ID+"/files", map[string]any{"file_id": f1.ID}, aliceAuth))
	if tc.starts(id1) != before || att.Status != "completed" {
		t.Errorf("re-attaching a completed file: %d starts (was %d), status %s", tc.starts(id1), before, att.Status)
	}

	att = decode[wire.VectorStoreFileObject](t, doAt(t, base, "POST", "/v1/vector_stores/"+vs.ID+"/files", map[string]any{
		"file_id": f2.ID, "attributes": map[string]any{"year": 2024, "lang": "en"}}, aliceAuth))
	if att.Attributes["lang"] != "en" || att.ChunkingStrategy.Static.MaxChunkSizeTokens != 800 || att.ChunkingStrategy.Static.ChunkOverlapTokens != 400 {
		t.Errorf("attach with attributes = %+v", att)
	}
	att = decode[wire.VectorStoreFileObject](t, doAt(t, base, "POST", "/v1/vector_stores/"+vs.ID+"/files/"+f2.ID, map[string]any{
		"attributes": map[string]any{"year": 2025}}, aliceAuth))
	if att.Attributes["year"] != float64(2025) || att.Attributes["lang"] != nil {
		t.Errorf("updated attributes = %+v", att.Attributes)
	}
	files := decode[wire.CursorPage[wire.VectorStoreFileObject]](t, doAt(t, base, "GET", "/v1/vector_stores/"+vs.ID+"/files?filter=completed", nil, aliceAuth))
	if len(files.Data) != 1 || files.Data[0].ID != f1.ID {
		t.Errorf("completed files = %+v", files.Data)
	}

	// Search, full text (no embedder): the chunks of completed files.
	if err := docs.PutChunks(ctx, "alice", []docstore.Chunk{{VectorStoreID: vs.ID, FileID: f1.ID, Index: 0, Text: "alpha particles and the treaty of Westphalia", Tokens: 8}}); err != nil {
		t.Fatal(err)
	}
	page := decode[wire.SearchPage](t, doAt(t, base, "POST", "/v1/vector_stores/"+vs.ID+"/search", map[string]any{"query": "Westphalia treaty", "max_num_results": 5}, aliceAuth))
	if page.Object != "vector_store.search_results.page" || len(page.SearchQuery) != 1 || len(page.Data) != 1 ||
		page.Data[0].FileID != f1.ID || page.Data[0].Filename != "one.txt" || page.Data[0].Content[0].Text != "alpha particles and the treaty of Westphalia" || page.Data[0].Score <= 0 {
		t.Errorf("search = %+v", page)
	}
	content := decode[wire.ContentPage](t, doAt(t, base, "GET", "/v1/vector_stores/"+vs.ID+"/files/"+f1.ID+"/content", nil, aliceAuth))
	if len(content.Data) != 1 || content.Data[0].Text != "alpha particles and the treaty of Westphalia" {
		t.Errorf("file content = %+v", content)
	}
	for _, tt := range []struct {
		body map[string]any
		msg  string
	}{
		{map[string]any{"query": ""}, "query[0]: must not be empty"},
		{map[string]any{"query": 3}, "query: must be a string or an array of strings"},
		{map[string]any{"query": "x", "max_num_results": 51}, "max_num_results"},
		{map[string]any{"query": "x", "rewrite_query": true}, "rewrite_query is not supported"},
		{map[string]any{"query": "x", "ranking_options": map[string]any{"ranker": "default-2024-11-15"}}, "not supported"},
		{map[string]any{"query": "x", "ranking_options": map[string]any{"score_threshold": 2}}, "score_threshold"},
		{map[string]any{"query": "x", "filters": map[string]any{"type": "eq", "key": "year"}}, "filters.value: required"},
		{map[string]any{"query": "x", "filters": map[string]any{"type": "like", "key": "year", "value": 1}}, "filters.type"},
		{map[string]any{"query": "x", "filters": map[string]any{"type": "and", "filters": []any{}}}, "at least one filter"},
		{map[string]any{"query": "x", "filters": map[string]any{"type": "in", "key": "year", "value": 2024}}, "in and nin take an array"},
		{map[string]any{"query": "x", "top_k": 3}, "unknown field"},
	} {
		wantError(t, doAt(t, base, "POST", "/v1/vector_stores/"+vs.ID+"/search", tt.body, aliceAuth), 400, tt.msg)
	}
	page = decode[wire.SearchPage](t, doAt(t, base, "POST", "/v1/vector_stores/"+vs.ID+"/search", map[string]any{
		"query": []string{"alpha", "treaty"}, "filters": map[string]any{"type": "eq", "key": "lang", "value": "fr"}}, aliceAuth))
	if len(page.Data) != 0 || len(page.SearchQuery) != 2 {
		t.Errorf("search filtered out = %+v", page)
	}

	// A batch, its files, its cancellation.
	f3 := uploadText(t, base, aliceAuth, "three.txt", "gamma")
	b := decode[wire.FileBatchObject](t, doAt(t, base, "POST", "/v1/vector_stores/"+vs.ID+"/file_batches", map[string]any{"file_ids": []string{f3.ID}}, aliceAuth))
	if !strings.HasPrefix(b.ID, "vsfb_") || b.Object != "vector_store.files_batch" || b.Status != "in_progress" || b.FileCounts.Total != 1 {
		t.Errorf("batch = %+v", b)
	}
	bf := decode[wire.CursorPage[wire.VectorStoreFileObject]](t, doAt(t, base, "GET", "/v1/vector_stores/"+vs.ID+"/file_batches/"+b.ID+"/files", nil, aliceAuth))
	if len(bf.Data) != 1 || bf.Data[0].ID != f3.ID {
		t.Errorf("batch files = %+v", bf.Data)
	}
	b = decode[wire.FileBatchObject](t, doAt(t, base, "POST", "/v1/vector_stores/"+vs.ID+"/file_batches/"+b.ID+"/cancel", nil, aliceAuth))
	if b.Status != "cancelled" || b.FileCounts.Cancelled != 1 {
		t.Errorf("cancelled batch = %+v", b)
	}
	wantError(t, doAt(t, base, "POST", "/v1/vector_stores/"+vs.ID+"/file_batches", map[string]any{"file_ids": []string{"file-000000000000000000000000"}}, aliceAuth), 404, "no file")
	wantError(t, doAt(t, base, "POST", "/v1/vector_stores/"+vs.ID+"/file_batches", map[string]any{}, aliceAuth), 400, "file_ids or files")

	// Detach: the run is cancelled, the file stays.
	del := decode[wire.DeletedObject](t, doAt(t, base, "DELETE", "/v1/vector_stores/"+vs.ID+"/files/"+f2.ID, nil, aliceAuth))
	if del != (wire.DeletedObject{ID: f2.ID, Object: "vector_store.file.deleted", Deleted: true}) {
		t.Errorf("detach = %+v", del)
	}
	canceled := tc.cancelled()
	if !strings.Contains(canceled, contract.IngestWorkflowID(vs.ID, f2.ID)) || !strings.Contains(canceled, contract.IngestWorkflowID(vs.ID, f3.ID)) {
		t.Errorf("cancelled runs = %s", canceled)
	}
	// Attached anew after the detach: a fresh run.
	doAt(t, base, "POST", "/v1/vector_stores/"+vs.ID+"/files", map[string]any{"file_id": f2.ID}, aliceAuth)
	if n := tc.starts(contract.IngestWorkflowID(vs.ID, f2.ID)); n != 2 {
		t.Errorf("runs of a file attached, detached and attached again = %d, want 2", n)
	}

	upd := decode[wire.VectorStoreObject](t, doAt(t, base, "POST", "/v1/vector_stores/"+vs.ID, map[string]any{"name": "renamed", "expires_after": nil}, aliceAuth))
	if upd.Name != "renamed" || upd.ExpiresAfter != nil {
		t.Errorf("updated = %+v", upd)
	}
	for _, tt := range []struct {
		body any
		msg  string
	}{
		{map[string]any{"description": "x"}, "description is not supported"},
		{map[string]any{"expires_after": map[string]any{"anchor": "created_at", "days": 1}}, "expires_after.anchor"},
		{map[string]any{"file_ids": []string{f1.ID}, "chunking_strategy": map[string]any{"type": "static", "static": map[string]int{"max_chunk_size_tokens": 100, "chunk_overlap_tokens": 60}}}, "chunk_overlap_tokens"},
		{map[string]any{"metadata": map[string]any{"k": 1}}, "invalid"},
	} {
		wantError(t, doAt(t, base, "POST", "/v1/vector_stores", tt.body, aliceAuth), 400, tt.msg)
	}
	del = decode[wire.DeletedObject](t, doAt(t, base, "DELETE", "/v1/vector_stores/"+vs.ID, nil, aliceAuth))
	if del != (wire.DeletedObject{ID: vs.ID, Object: "vector_store.deleted", Deleted: true}) {
		t.Errorf("delete store = %+v", del)
	}
	wantError(t, doAt(t, base, "GET", "/v1/vector_stores/"+vs.ID, nil, aliceAuth), 404, "no vector store")
	if n := webtest.CountFiles(t, docs, "alice"); n != 3 {
		t.Errorf("files after deleting the store = %d, want 3", n)
	}
}

// TestDocsIsolation checks that alice's files, stores, attachments and
// batches do not exist for bob on any route: 404 (an empty list), and
// nothing of hers changes.
func TestDocsIsolation(t *testing.T) {
	base, docs, tc := docsServer(t, 0)
	f := uploadText(t, base, aliceAuth, "secret.txt", "the launch code")
	vs := decode[wire.VectorStoreObject](t, doAt(t, base, "POST", "/v1/vector_stores", map[string]any{"name": "alice's", "file_ids": []string{f.ID}}, aliceAuth))
	b := decode[wire.FileBatchObject](t, doAt(t, base, "POST", "/v1/vector_stores/"+vs.ID+"/file_batches", map[string]any{"file_ids": []string{f.ID}}, aliceAuth))
	ctx := context.Background()
	if err := docs.SetStatus(ctx, "alice", vs.ID, f.ID, docstore.StatusCompleted, nil); err != nil {
		t.Fatal(err)
	}
	if err := docs.PutChunks(ctx, "alice", []docstore.Chunk{{VectorStoreID: vs.ID, FileID: f.ID, Text: "the launch code is 0000", Tokens: 6}}); err != nil {
		t.Fatal(err)
	}
	bobFile := uploadText(t, base, bobAuth, "mine.txt", "bob's")
	vsp, fp := "/v1/vector_stores/"+vs.ID, "/v1/files/"+f.ID
	for _, r := range []struct {
		method, path string
		body         any
	}{
		{"GET", fp, nil},
		{"GET", fp + "/content", nil},
		{"DELETE", fp, nil},
		{"GET", vsp, nil},
		{"POST", vsp, map[string]any{"name": "bob's now"}},
		{"DELETE", vsp, nil},
		{"POST", vsp + "/search", map[string]any{"query": "launch code"}},
		{"POST", vsp + "/files", map[string]any{"file_id": f.ID}},
		{"POST", vsp + "/files", map[string]any{"file_id": bobFile.ID}},
		{"GET", vsp + "/files", nil},
		{"GET", vsp + "/files/" + f.ID, nil},
		{"POST", vsp + "/files/" + f.ID, map[string]any{"attributes": map[string]any{"x": "y"}}},
		{"DELETE", vsp + "/files/" + f.ID, nil},
		{"GET", vsp + "/files/" + f.ID + "/content", nil},
		{"POST", vsp + "/file_batches", map[string]any{"file_ids": []string{bobFile.ID}}},
		{"GET", vsp + "/file_batches/" + b.ID, nil},
		{"GET", vsp + "/file_batches/" + b.ID + "/files", nil},
		{"POST", vsp + "/file_batches/" + b.ID + "/cancel", nil},
	} {
		resp := doAt(t, base, r.method, r.path, r.body, bobAuth)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 404 || strings.Contains(string(body), "launch") {
			t.Errorf("bob's %s %s = %d %s, want 404", r.method, r.path, resp.StatusCode, body)
		}
	}
	// Bob attaching alice's file to a store of his own: not found either.
	bvs := decode[wire.VectorStoreObject](t, doAt(t, base, "POST", "/v1/vector_stores", map[string]any{"name": "bob's"}, bobAuth))
	wantError(t, doAt(t, base, "POST", "/v1/vector_stores/"+bvs.ID+"/files", map[string]any{"file_id": f.ID}, bobAuth), 404, "no file")
	wantError(t, doAt(t, base, "POST", "/v1/vector_stores", map[string]any{"file_ids": []string{f.ID}}, bobAuth), 404, "no file")
	for _, path := range []string{"/v1/files", "/v1/vector_stores"} {
		body, _ := io.ReadAll(doAt(t, base, "GET", path, nil, bobAuth).Body)
		if strings.Contains(string(body), f.ID) || strings.Contains(string(body), vs.ID) {
			t.Errorf("bob's GET %s lists alice's: %s", path, body)
		}
	}
	// Nothing of alice's changed.
	got := decode[wire.VectorStoreObject](t, doAt(t, base, "GET", vsp, nil, aliceAuth))
	if got.Name != "alice's" || got.FileCounts.Completed != 1 {
		t.Errorf("alice's store after bob = %+v", got)
	}
	page := decode[wire.SearchPage](t, doAt(t, base, "POST", vsp+"/search", map[string]any{"query": "launch code"}, aliceAuth))
	if len(page.Data) != 1 {
		t.Errorf("alice's search after bob = %+v", page)
	}
	if tc.starts(contract.IngestWorkflowID(bvs.ID, f.ID)) != 0 {
		t.Error("bob started an ingestion of alice's file")
	}
}

// TestVectorStoreFilePollAfter: a file or batch still in progress tells
// openai-node's poll helpers when to ask again (openai-poll-after-ms,
// which they read before falling back to five seconds: openai 7.57.0
// lib/polling.js:93-118); an ended one does not.
func TestVectorStoreFilePollAfter(t *testing.T) {
	base, docs, _ := docsServer(t, 0)
	f := uploadText(t, base, aliceAuth, "one.txt", "alpha")
	vs := decode[wire.VectorStoreObject](t, doAt(t, base, "POST", "/v1/vector_stores", map[string]any{"file_ids": []string{f.ID}}, aliceAuth))
	b := decode[wire.FileBatchObject](t, doAt(t, base, "POST", "/v1/vector_stores/"+vs.ID+"/file_batches",
		map[string]any{"file_ids": []string{uploadText(t, base, aliceAuth, "two.txt", "beta").ID}}, aliceAuth))
	get := func(path, want string) {
		t.Helper()
		resp := doAt(t, base, "GET", path, nil, aliceAuth)
		resp.Body.Close()
		if got := resp.Header.Get("openai-poll-after-ms"); resp.StatusCode != http.StatusOK || got != want {
			t.Errorf("GET %s = %d with openai-poll-after-ms %q, want 200 with %q", path, resp.StatusCode, got, want)
		}
	}
	fileURL, batchURL := "/v1/vector_stores/"+vs.ID+"/files/"+f.ID, "/v1/vector_stores/"+vs.ID+"/file_batches/"+b.ID
	get(fileURL, "500")
	get(batchURL, "500")
	if err := docs.SetStatus(context.Background(), "alice", vs.ID, f.ID, docstore.StatusCompleted, nil); err != nil {
		t.Fatal(err)
	}
	get(fileURL, "")
	decode[wire.FileBatchObject](t, doAt(t, base, "POST", batchURL+"/cancel", nil, aliceAuth))
	get(batchURL, "")
}

// TestDocsRoutesWithoutStore: on a server that keeps no documents, every
// documents route answers 404 with the reason, before any handler runs
// (an upload's body is not read).
func TestDocsRoutesWithoutStore(t *testing.T) {
	base := app(t, &documents.Handlers{Ingest: &fakeIngester{}, MaxFileBytes: 1 << 20})
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/files"}, {"POST", "/v1/vector_stores"}, {"GET", "/v1/vector_stores/vs_0/files"},
		{"POST", "/v1/vector_stores/vs_0/search"}, {"DELETE", "/v1/files/file-0"},
	} {
		resp := doAt(t, base, r.method, r.path, map[string]any{}, aliceAuth)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "no document store") {
			t.Errorf("%s %s = %d %s, want 404 naming the missing document store", r.method, r.path, resp.StatusCode, body)
		}
	}
}
