package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"github.com/longhaul-dev/longhaul/skills"
)

// ingestStarts is a Temporal client that records the ingestion runs the
// API starts and cancels (and answers nothing else).
type ingestStarts struct {
	client.Client
	mu       sync.Mutex
	started  map[string]int
	inputs   map[string]contract.IngestInput
	opts     map[string]client.StartWorkflowOptions
	canceled []string
}

func (f *ingestStarts) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if wf != contract.IngestWorkflow || len(args) != 1 {
		return nil, fmt.Errorf("unexpected workflow %v", wf)
	}
	in, ok := args[0].(contract.IngestInput)
	if !ok {
		return nil, fmt.Errorf("unexpected input %T", args[0])
	}
	f.started[o.ID]++
	f.inputs[o.ID] = in
	f.opts[o.ID] = o
	return nil, nil
}

func (*ingestStarts) WorkflowService() workflowservice.WorkflowServiceClient { return nil }

func (f *ingestStarts) CancelWorkflow(_ context.Context, id, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.canceled = append(f.canceled, id)
	return serviceerror.NewNotFound("no such workflow")
}

func (f *ingestStarts) starts(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.started[id]
}

// last is the input and options of the last start of workflow id.
func (f *ingestStarts) last(id string) (contract.IngestInput, client.StartWorkflowOptions) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inputs[id], f.opts[id]
}

var (
	aliceAuth = map[string]string{"Authorization": "Bearer sk-alice"}
	bobAuth   = map[string]string{"Authorization": "Bearer sk-bob"}
)

// docsServer serves the API over a SQLite document store, with Temporal
// faked by ingestStarts.
func docsServer(t *testing.T, maxFile int64) (string, docstore.Store, *ingestStarts) {
	t.Helper()
	return docsServerLimits(t, maxFile, api.Limits{})
}

// docsServerLimits is docsServer holding its principals to limits.
func docsServerLimits(t *testing.T, maxFile int64, limits api.Limits) (string, docstore.Store, *ingestStarts) {
	t.Helper()
	ctx := context.Background()
	docs, err := docstore.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "docs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { docs.Close() })
	tc := &ingestStarts{started: map[string]int{}, inputs: map[string]contract.IngestInput{}, opts: map[string]client.StartWorkflowOptions{}}
	catalog, err := skills.Load(skills.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	srv := api.New(api.Config{TaskQueue: "q", Docs: docs, MaxFileBytes: maxFile, MaxBodyBytes: 64 << 10, Limits: limits,
		Keys: []identity.Key{{Name: "alice", Secret: "sk-alice"}, {Name: "bob", Secret: "sk-bob"}}}, runs.NewTemporal(tc, runs.Config{TaskQueue: "q"}), catalog, slog.New(slog.DiscardHandler))
	return serve(t, srv), docs, tc
}

func multipartBody(t *testing.T, filename string, content []byte, fields ...string) (string, []byte) {
	t.Helper()
	return webtest.MultipartBody(t, filename, content, fields...)
}

func upload(t *testing.T, base string, key map[string]string, ct string, body []byte) *http.Response {
	t.Helper()
	resp, err := http.DefaultClient.Do(webtest.UploadRequest(base+"/v1/files", key, ct, body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func uploadText(t *testing.T, base string, key map[string]string, name, text string) wire.FileObject {
	t.Helper()
	ct, body := multipartBody(t, name, []byte(text), "purpose", "assistants")
	return webtest.Uploaded(t, upload(t, base, key, ct, body))
}

func wantError(t *testing.T, resp *http.Response, status int, msg string) {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	var e wire.ErrorBody
	if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != status || !strings.Contains(e.Error.Message, msg) || e.Error.Type == "" {
		t.Errorf("%s %s = %d %s, want %d with %q", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, b, status, msg)
	}
}

// TestUploadOfAHundredMegabytes sends the headers of a 100 MB upload and
// its first 8.5 KiB (what fasthttp reads before the handler runs, see
// api/bodylimit.go): the answer is a 413 at once, no more is read, and
// nothing is stored. A raw connection, so that the test reads the answer
// whatever the client would do with an unsent body.
func TestUploadOfAHundredMegabytes(t *testing.T) {
	base, docs, _ := docsServer(t, 0)
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const size = 100_000_000
	head := "POST /v1/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-alice\r\n" +
		"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: " + fmt.Sprint(size) + "\r\n\r\n"
	part := "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.bin\"\r\n\r\n"
	// fasthttp reads 8 KiB and one byte before it calls the handler
	// (readBodyIdentity, http.go:2200-2231); a little more is sent, which
	// its read buffer takes whole.
	first := append([]byte(part), bytes.Repeat([]byte{'x'}, 8<<10+512-len(part))...)
	if _, err := conn.Write(append([]byte(head), first...)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 413 || !strings.Contains(string(b), "request_too_large") || !strings.Contains(string(b), "52428800") || !resp.Close {
		t.Errorf("100 MB upload = %d close=%v %s, want a 413 closing the connection", resp.StatusCode, resp.Close, b)
	}
	if n := webtest.CountFiles(t, docs, "alice"); n != 0 {
		t.Errorf("alice has %d files, want 0", n)
	}
}

// TestBodyLimitWithStreamedBodies checks that every route but the upload
// keeps LONGHAUL_MAX_BODY_BYTES now that bodies are streams: a declared
// length over it and a chunked body over it are both 413s.
func TestBodyLimitWithStreamedBodies(t *testing.T) {
	base, _, _ := docsServer(t, 0)
	big := `{"name":"` + strings.Repeat("a", 70<<10) + `"}`
	wantError(t, doAt(t, base, "POST", "/v1/vector_stores", big, aliceAuth), 413, "LONGHAUL_MAX_BODY_BYTES")
	req, _ := http.NewRequest("POST", base+"/v1/vector_stores", io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1 // chunked
	req.Header.Set("Authorization", "Bearer sk-alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	wantError(t, resp, 413, "LONGHAUL_MAX_BODY_BYTES")
	// Under the limit, chunked or not, the body reads whole.
	small := `{"name":"` + strings.Repeat("a", 20) + `"}`
	req, _ = http.NewRequest("POST", base+"/v1/vector_stores", io.MultiReader(strings.NewReader(small)))
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer sk-alice")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if vs := decode[wire.VectorStoreObject](t, resp); vs.Name != strings.Repeat("a", 20) {
		t.Errorf("chunked create = %+v", vs)
	}
}

// TestIngestStartOptions checks the server's ingester, which the
// documents routes start and cancel ingestions through: a new
// attachment's run replaces any of an earlier one (TERMINATE_EXISTING,
// ALLOW_DUPLICATE), one attached again while in progress asks for the
// running run or a new one only if the last failed (USE_EXISTING,
// ALLOW_DUPLICATE_FAILED_ONLY), and a detach cancels its run, a run not
// there being no error.
func TestIngestStartOptions(t *testing.T) {
	base, _, tc := docsServer(t, 0)
	f := uploadText(t, base, aliceAuth, "one.txt", "alpha")
	vs := decode[wire.VectorStoreObject](t, doAt(t, base, "POST", "/v1/vector_stores", map[string]any{"file_ids": []string{f.ID}}, aliceAuth))
	id := contract.IngestWorkflowID(vs.ID, f.ID)
	in, o := tc.last(id)
	if in != (contract.IngestInput{Owner: "alice", VectorStoreID: vs.ID, FileID: f.ID, MaxChunkSizeTokens: 800, ChunkOverlapTokens: 400}) {
		t.Errorf("ingest input = %+v", in)
	}
	if o.ID != id || o.TaskQueue != "q" || o.WorkflowIDReusePolicy != enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE ||
		o.WorkflowIDConflictPolicy != enums.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING {
		t.Errorf("start options = %+v", o)
	}
	doAt(t, base, "POST", "/v1/vector_stores/"+vs.ID+"/files", map[string]any{"file_id": f.ID}, aliceAuth)
	if _, o = tc.last(id); tc.starts(id) != 2 || o.WorkflowIDConflictPolicy != enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING ||
		o.WorkflowIDReusePolicy != enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY {
		t.Errorf("re-attach: %d starts, options %+v", tc.starts(id), o)
	}
	resp := doAt(t, base, "DELETE", "/v1/vector_stores/"+vs.ID+"/files/"+f.ID, nil, aliceAuth)
	tc.mu.Lock()
	canceled := strings.Join(tc.canceled, " ")
	tc.mu.Unlock()
	if resp.StatusCode != http.StatusOK || canceled != id {
		t.Errorf("detach = %d, cancelled runs %q, want 200 and %s", resp.StatusCode, canceled, id)
	}
}
