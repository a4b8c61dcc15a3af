package documents_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/longhaul-dev/longhaul/api/documents"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/identity"
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

var (
	aliceAuth = map[string]string{"Authorization": "Bearer sk-alice"}
	bobAuth   = map[string]string{"Authorization": "Bearer sk-bob"}
)

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

// app serves h's routes as the server's routes table does, behind a key
// check standing in for the server's authentication, with its errors
// written as OpenAI's envelope.
func app(t *testing.T, h *documents.Handlers) *fiber.App {
	t.Helper()
	a := fiber.New(fiber.Config{ErrorHandler: writeError, StreamRequestBody: true, DisablePreParseMultipartForm: true})
	keys := identity.Resolver{Keys: []identity.Key{{Name: "alice", Secret: "sk-alice"}, {Name: "bob", Secret: "sk-bob"}}}
	v1 := a.Group("/v1", func(c *fiber.Ctx) error {
		p, err := keys.Resolve(c.Get(fiber.HeaderAuthorization), func(name string) string { return c.Get(name) })
		if err != nil {
			return web.Unauthorized(err.Error())
		}
		web.SetPrincipal(c, p)
		return c.Next()
	}, h.Require)
	v1.Post("/files", h.UploadFile)
	v1.Get("/files", h.ListFiles)
	v1.Get("/files/:id", h.GetFile)
	v1.Get("/files/:id/content", h.FileContent)
	v1.Delete("/files/:id", h.DeleteFile)
	v1.Post("/vector_stores", h.CreateVectorStore)
	v1.Get("/vector_stores", h.ListVectorStores)
	v1.Get("/vector_stores/:id", h.GetVectorStore)
	v1.Post("/vector_stores/:id", h.UpdateVectorStore)
	v1.Delete("/vector_stores/:id", h.DeleteVectorStore)
	v1.Post("/vector_stores/:id/search", h.SearchVectorStore)
	v1.Post("/vector_stores/:id/files", h.AttachVectorStoreFile)
	v1.Get("/vector_stores/:id/files", h.ListVectorStoreFiles)
	v1.Get("/vector_stores/:id/files/:file_id", h.GetVectorStoreFile)
	v1.Post("/vector_stores/:id/files/:file_id", h.UpdateVectorStoreFile)
	v1.Delete("/vector_stores/:id/files/:file_id", h.DetachVectorStoreFile)
	v1.Get("/vector_stores/:id/files/:file_id/content", h.VectorStoreFileContent)
	v1.Post("/vector_stores/:id/file_batches", h.CreateFileBatch)
	v1.Get("/vector_stores/:id/file_batches/:batch_id", h.GetFileBatch)
	v1.Get("/vector_stores/:id/file_batches/:batch_id/files", h.ListVectorStoreFiles)
	v1.Post("/vector_stores/:id/file_batches/:batch_id/cancel", h.CancelFileBatch)
	return a
}

// writeError writes err as the server's error handler does.
func writeError(c *fiber.Ctx, err error) error {
	var e *web.Error
	if !errors.As(err, &e) {
		e = &web.Error{Status: http.StatusInternalServerError, Type: "server_error", Message: err.Error()}
	}
	if e.RetryAfter > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(e.RetryAfter))
	}
	return c.Status(e.Status).JSON(wire.ErrorBody{Error: wire.ErrorDetail{Message: e.Message, Type: e.Type, Code: e.Code}})
}

// doAt sends a request to a (a JSON body unless body is a string) and
// returns the answer.
func doAt(t *testing.T, a *fiber.App, method, path string, body any, headers map[string]string) *http.Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, path, rd)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return send(t, a, req)
}

func send(t *testing.T, a *fiber.App, req *http.Request) *http.Response {
	t.Helper()
	resp, err := a.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func decode[T any](t *testing.T, resp *http.Response) T {
	t.Helper()
	var v T
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return v
}

// multipartBody is an upload as openai-node sends one: the file part
// first, then the fields (internal/uploads.js:235, createForm in the
// order of the params object).
func multipartBody(t *testing.T, filename string, content []byte, fields ...string) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if filename != "" {
		fw, err := w.CreateFormFile("file", filename)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(content)
	}
	for i := 0; i+1 < len(fields); i += 2 {
		w.WriteField(fields[i], fields[i+1])
	}
	w.Close()
	return w.FormDataContentType(), buf.Bytes()
}

func upload(t *testing.T, a *fiber.App, key map[string]string, ct string, body []byte) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", "/v1/files", bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	for k, v := range key {
		req.Header.Set(k, v)
	}
	return send(t, a, req)
}

func uploadText(t *testing.T, a *fiber.App, key map[string]string, name, text string) wire.FileObject {
	t.Helper()
	ct, body := multipartBody(t, name, []byte(text), "purpose", "assistants")
	resp := upload(t, a, key, ct, body)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("upload = %d %s", resp.StatusCode, b)
	}
	return decode[wire.FileObject](t, resp)
}

func countFiles(t *testing.T, docs docstore.Store, owner string) int {
	t.Helper()
	files, _, err := docs.ListFiles(context.Background(), owner, "", docstore.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(files)
}

func wantError(t *testing.T, resp *http.Response, status int, msg string) {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	var e wire.ErrorBody
	if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != status || !strings.Contains(e.Error.Message, msg) || e.Error.Type == "" {
		t.Errorf("%s %s = %d %s, want %d with %q", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, b, status, msg)
	}
}
