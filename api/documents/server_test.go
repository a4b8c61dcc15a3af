package documents_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/longhaul-dev/longhaul/api/documents"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// fakeIngester records the ingestions the handlers start and cancel, and
// runs none.
type fakeIngester struct {
	mu       sync.Mutex
	started  map[string]int
	inputs   map[string]contract.IngestInput
	fresh    map[string]bool
	canceled []string
}

var _ documents.Ingester = (*fakeIngester)(nil)

func (f *fakeIngester) StartIngest(_ context.Context, in contract.IngestInput, fresh bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := contract.IngestWorkflowID(in.VectorStoreID, in.FileID)
	f.started[id]++
	f.inputs[id], f.fresh[id] = in, fresh
	return nil
}

func (f *fakeIngester) AwaitIngest(context.Context, string) (contract.IngestResult, error) {
	return contract.IngestResult{}, errors.New("the fake runs no ingestion")
}

func (f *fakeIngester) CancelIngest(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.canceled = append(f.canceled, id)
	return nil
}

func (f *fakeIngester) starts(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.started[id]
}

// last is the input of the last start of workflow id, and whether it
// was of a fresh attachment.
func (f *fakeIngester) last(id string) (contract.IngestInput, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inputs[id], f.fresh[id]
}

func (f *fakeIngester) cancelled() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.canceled, " ")
}

// docsServer is the documents routes over a SQLite document store, with
// the ingestions faked.
func docsServer(t *testing.T, maxFile int64) (*fiber.App, docstore.Store, *fakeIngester) {
	t.Helper()
	return docsServerQuotas(t, maxFile, documents.Quotas{})
}

// docsServerQuotas is docsServer holding its principals to quotas.
func docsServerQuotas(t *testing.T, maxFile int64, quotas documents.Quotas) (*fiber.App, docstore.Store, *fakeIngester) {
	t.Helper()
	docs, err := docstore.Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "docs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { docs.Close() })
	ing := &fakeIngester{started: map[string]int{}, inputs: map[string]contract.IngestInput{}, fresh: map[string]bool{}}
	if maxFile == 0 {
		maxFile = 50 << 20
	}
	h := &documents.Handlers{Docs: docs, Ingest: ing, MaxFileBytes: maxFile, Quotas: quotas, Log: slog.New(slog.DiscardHandler)}
	return app(t, h), docs, ing
}

// app serves h's routes as the server's routes table does.
func app(t *testing.T, h *documents.Handlers) *fiber.App {
	t.Helper()
	return webtest.App(t, func(_, v1 fiber.Router) {
		r := v1.Group("", h.Require)
		r.Post("/files", h.UploadFile)
		r.Get("/files", h.ListFiles)
		r.Get("/files/:id", h.GetFile)
		r.Get("/files/:id/content", h.FileContent)
		r.Delete("/files/:id", h.DeleteFile)
		r.Post("/vector_stores", h.CreateVectorStore)
		r.Get("/vector_stores", h.ListVectorStores)
		r.Get("/vector_stores/:id", h.GetVectorStore)
		r.Post("/vector_stores/:id", h.UpdateVectorStore)
		r.Delete("/vector_stores/:id", h.DeleteVectorStore)
		r.Post("/vector_stores/:id/search", h.SearchVectorStore)
		r.Post("/vector_stores/:id/files", h.AttachVectorStoreFile)
		r.Get("/vector_stores/:id/files", h.ListVectorStoreFiles)
		r.Get("/vector_stores/:id/files/:file_id", h.GetVectorStoreFile)
		r.Post("/vector_stores/:id/files/:file_id", h.UpdateVectorStoreFile)
		r.Delete("/vector_stores/:id/files/:file_id", h.DetachVectorStoreFile)
		r.Get("/vector_stores/:id/files/:file_id/content", h.VectorStoreFileContent)
		r.Post("/vector_stores/:id/file_batches", h.CreateFileBatch)
		r.Get("/vector_stores/:id/file_batches/:batch_id", h.GetFileBatch)
		r.Get("/vector_stores/:id/file_batches/:batch_id/files", h.ListVectorStoreFiles)
		r.Post("/vector_stores/:id/file_batches/:batch_id/cancel", h.CancelFileBatch)
	})
}

var (
	aliceAuth = webtest.Alice
	bobAuth   = webtest.Bob
)

func doAt(t *testing.T, a *fiber.App, method, path string, body any, headers map[string]string) *http.Response {
	t.Helper()
	return webtest.Do(t, a, method, path, body, headers)
}

func decode[T any](t *testing.T, resp *http.Response) T {
	t.Helper()
	return webtest.Decode[T](t, resp)
}

func wantError(t *testing.T, resp *http.Response, status int, msg string) {
	t.Helper()
	webtest.WantError(t, resp, status, msg)
}

func multipartBody(t *testing.T, filename string, content []byte, fields ...string) (string, []byte) {
	t.Helper()
	return webtest.MultipartBody(t, filename, content, fields...)
}

func upload(t *testing.T, a *fiber.App, key map[string]string, ct string, body []byte) *http.Response {
	t.Helper()
	return webtest.Send(t, a, webtest.UploadRequest("/v1/files", key, ct, body))
}

func uploadText(t *testing.T, a *fiber.App, key map[string]string, name, text string) wire.FileObject {
	t.Helper()
	ct, body := multipartBody(t, name, []byte(text), "purpose", "assistants")
	return webtest.Uploaded(t, upload(t, a, key, ct, body))
}
