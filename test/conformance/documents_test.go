package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"
	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
)

// The documents scenario's question, the one fact the PDF holds that
// answers it, and the query the scripted model searches with.
const (
	docsQuestion = "What was the Quillfeather index of the Harbourside depot in May?"
	docsFact     = "17.3 points"
	docsQuery    = "Quillfeather index Harbourside depot May"
)

// reportPDF writes a three-page PDF to dir whose second page alone holds
// docsFact, and returns its path and bytes.
func reportPDF(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	f.SetFont("Helvetica", "", 11)
	for _, page := range []string{
		"Harbourside Monthly Report. This report covers the shipping volumes of the harbour, the staffing of the depots and the upkeep of the cranes. " +
			strings.Repeat("Volumes were steady through the month and the depots kept their schedules. ", 30),
		"Measurements. The Quillfeather index of the Harbourside depot was " + docsFact + " in May. " +
			strings.Repeat("Other measurements stayed within their usual ranges. ", 30),
		"Outlook. " + strings.Repeat("The coming month is expected to bring more of the same. ", 30),
	} {
		f.AddPage()
		f.MultiCell(0, 5, page, "", "L", false)
	}
	var buf bytes.Buffer
	if err := f.Output(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "report.pdf")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, buf.Bytes()
}

// searchHit is one result of document_search as the model reads it.
type searchHit struct {
	FileID   string `json:"file_id"`
	Filename string `json:"filename"`
	Chunk    int    `json:"chunk"`
	Text     string `json:"text"`
}

// scriptDocuments answers the documents question: document_search first,
// then, from the result the model reads, the fact citing the chunk that
// holds it as the documents skill asks ([filename, chunk N]); without the
// fact in the result, an answer that says so (and fails the test).
func (s *stack) scriptDocuments() {
	s.env.Model.On(llmtest.AnyMessageContains(docsQuestion), llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		results := toolResults(r)
		if len(results) == 0 {
			return llmtest.ToolCalls(llmtest.ToolCall{Name: longhaul.DocumentSearchTool, Arguments: fmt.Sprintf(`{"query":%q}`, docsQuery)})
		}
		var res struct {
			Results []searchHit `json:"results"`
		}
		if err := json.Unmarshal([]byte(results[len(results)-1]), &res); err != nil {
			return llmtest.Text("The tool result is not JSON: " + err.Error())
		}
		for _, h := range res.Results {
			if strings.Contains(h.Text, docsFact) {
				return llmtest.Text(fmt.Sprintf("The Quillfeather index of the Harbourside depot was %s in May [%s, chunk %d].", docsFact, h.Filename, h.Chunk))
			}
		}
		return llmtest.Text("The documents do not say.")
	}))
}

// fileObject is openai-node's FileObject (resources/files.d.ts:80-121).
type fileObject struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Bytes     int    `json:"bytes"`
	CreatedAt int64  `json:"created_at"`
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"`
	Status    string `json:"status"`
}

// documents: a user uploads a PDF through openai-node, and an agent of the
// Agents SDK with fileSearchTool on its vector store answers a question
// only the PDF answers, citing it.
func (s *stack) documents(t *testing.T) {
	pdfPath, pdf := reportPDF(t, t.TempDir())
	var vsID, attachedID string
	t.Run("openai-node files and vector stores", func(t *testing.T) {
		vsID, attachedID = s.openaiFiles(t, pdfPath, pdf)
	})
	if vsID == "" {
		t.Fatal("no vector store to search: the openai-node scenario failed")
	}
	for _, st := range streams {
		t.Run("agents fileSearchTool/"+st.name, func(t *testing.T) {
			last := st.value == streams[len(streams)-1].value
			s.agentsFileSearch(t, st.value, vsID, attachedID, last)
		})
	}
}

// openaiFiles runs openai-files.mjs and returns the vector store and the
// file uploadAndPoll attached to it.
func (s *stack) openaiFiles(t *testing.T, pdfPath string, pdf []byte) (string, string) {
	var out struct {
		Created, Retrieved fileObject
		Listed             []string
		ContentBytes       int  `json:"content_bytes"`
		ContentIsPDF       bool `json:"content_is_pdf"`
		SameBytes          bool `json:"same_bytes"`
		VectorStore        struct {
			ID, Object, Name, Status string
		} `json:"vector_store"`
		// VectorStoreFile (resources/vector-stores/files.d.ts:78-128).
		Attached struct {
			ID, Object, Status string
			VectorStoreID      string `json:"vector_store_id"`
			LastError          any    `json:"last_error"`
			UsageBytes         int    `json:"usage_bytes"`
		}
		// VectorStoreSearchResponse (resources/vector-stores/
		// vector-stores.d.ts:205-244).
		Results []struct {
			FileID     string         `json:"file_id"`
			Filename   string         `json:"filename"`
			Score      float64        `json:"score"`
			Attributes map[string]any `json:"attributes"`
			Content    []struct {
				Type, Text string
			}
		}
		VSFiles []struct{ ID, Status string } `json:"vs_files"`
		// FileContentResponse (resources/vector-stores/files.d.ts:150).
		Parsed           []struct{ Type, Text string }
		VectorStoreAfter struct {
			ID, Status string
			FileCounts struct {
				InProgress int `json:"in_progress"`
				Completed  int
				Failed     int
				Total      int
			} `json:"file_counts"`
		} `json:"vector_store_after"`
		Stores  []string
		Deleted struct {
			ID, Object string
			Deleted    bool
		}
		Gone int
	}
	embedsBefore := len(s.env.Model.EmbeddingRequests())
	reqs := s.run(t, "openai-files.mjs", map[string]string{"PDF_PATH": pdfPath, "QUESTION": docsQuestion}, &out)
	if len(reqs) != 0 {
		t.Errorf("the files and vector stores routes made %d chat requests:\n%s", len(reqs), describe(reqs))
	}

	c := out.Created
	if !strings.HasPrefix(c.ID, "file-") || c.Object != "file" || c.Purpose != "assistants" || c.Filename != "report.pdf" ||
		c.Bytes != len(pdf) || c.Status != "processed" || c.CreatedAt == 0 {
		t.Errorf("files.create answered %+v, want a processed assistants file report.pdf of %d bytes", c, len(pdf))
	}
	if out.Retrieved != c {
		t.Errorf("files.retrieve answered %+v, files.create %+v", out.Retrieved, c)
	}
	if !slices.Contains(out.Listed, c.ID) {
		t.Errorf("files.list has %v, not %s", out.Listed, c.ID)
	}
	if out.ContentBytes != len(pdf) || !out.ContentIsPDF || !out.SameBytes {
		t.Errorf("files.content: %d bytes, a PDF: %v, the bytes uploaded: %v", out.ContentBytes, out.ContentIsPDF, out.SameBytes)
	}

	vs := out.VectorStore
	if !strings.HasPrefix(vs.ID, "vs_") || vs.Object != "vector_store" || vs.Name != "Harbourside reports" {
		t.Errorf("vectorStores.create answered %+v", vs)
	}
	a := out.Attached
	if a.Object != "vector_store.file" || a.Status != "completed" || a.VectorStoreID != vs.ID || a.LastError != nil {
		t.Fatalf("uploadAndPoll ended with %+v, want a completed vector_store.file of %s", a, vs.ID)
	}
	if !strings.HasPrefix(a.ID, "file-") || a.ID == c.ID {
		t.Errorf("uploadAndPoll attached %q, want a new upload (not files.create's %s)", a.ID, c.ID)
	}
	// The chunks went through the scripted model's /v1/embeddings (the
	// IngestFile workflow's embed activity), and so did the search query.
	var embeddedFact, embeddedQuery bool
	for _, e := range s.env.Model.EmbeddingRequests()[embedsBefore:] {
		for _, in := range e.Input {
			embeddedFact = embeddedFact || strings.Contains(in, docsFact)
			embeddedQuery = embeddedQuery || in == docsQuestion
		}
	}
	if !embeddedFact || !embeddedQuery {
		t.Errorf("embedded the chunk with the fact: %v, the search query: %v", embeddedFact, embeddedQuery)
	}

	found := false
	for i, r := range out.Results {
		if r.Score <= 0 || r.Score > 1 || len(r.Content) == 0 {
			t.Errorf("search result %d: %+v", i, r)
		}
		if i > 0 && r.Score > out.Results[i-1].Score {
			t.Errorf("search result %d scores %v, more than the one before (%v)", i, r.Score, out.Results[i-1].Score)
		}
		for _, p := range r.Content {
			if p.Type != "text" {
				t.Errorf("search result %d has content of type %q", i, p.Type)
			}
			if r.FileID == a.ID && r.Filename == "report.pdf" && strings.Contains(p.Text, docsFact) {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("vectorStores.search did not find %q in report.pdf (%s): %+v", docsFact, a.ID, out.Results)
	}

	if !cmp.Equal(out.VSFiles, []struct{ ID, Status string }{{a.ID, "completed"}}) {
		t.Errorf("vectorStores.files.list = %+v, want %s completed", out.VSFiles, a.ID)
	}
	var parsed strings.Builder
	for _, p := range out.Parsed {
		if p.Type != "text" {
			t.Errorf("vectorStores.files.content has a part of type %q", p.Type)
		}
		parsed.WriteString(p.Text)
	}
	if len(out.Parsed) == 0 || !strings.Contains(parsed.String(), docsFact) || !strings.Contains(parsed.String(), "Harbourside Monthly Report") {
		t.Errorf("vectorStores.files.content: %d parts without the PDF's text: %q", len(out.Parsed), parsed.String())
	}

	after := out.VectorStoreAfter
	if after.ID != vs.ID || after.Status != "completed" || after.FileCounts.Completed != 1 || after.FileCounts.Total != 1 || after.FileCounts.InProgress != 0 {
		t.Errorf("vectorStores.retrieve after the upload: %+v, want completed with 1 file completed", after)
	}
	if !slices.Contains(out.Stores, vs.ID) {
		t.Errorf("vectorStores.list has %v, not %s", out.Stores, vs.ID)
	}
	if !cmp.Equal(out.Deleted, struct {
		ID, Object string
		Deleted    bool
	}{c.ID, "file", true}) || out.Gone != 404 {
		t.Errorf("files.delete answered %+v, then files.retrieve %d; want deleted, then 404", out.Deleted, out.Gone)
	}
	return vs.ID, a.ID
}

// agentsFileSearch runs agents-files.mjs on the vector store: the SDK's
// fileSearchTool becomes the run's store, the agent's document_search
// finds the fact, and the answer and a file_search_call item with its
// results reach the SDK. The last run deletes the store.
func (s *stack) agentsFileSearch(t *testing.T, stream, vsID, fileID string, last bool) {
	var out struct {
		FinalOutput string `json:"final_output"`
		Searches    []struct {
			Name, Status, ID, Type string
			Queries                []string
			Results                []struct {
				FileID   string  `json:"file_id"`
				Filename string  `json:"filename"`
				Score    float64 `json:"score"`
				Text     string  `json:"text"`
			}
		}
		Deleted *struct {
			ID, Object string
			Deleted    bool
		}
	}
	env := map[string]string{"STREAM": stream, "VECTOR_STORE_ID": vsID, "QUESTION": docsQuestion}
	if last {
		env["DELETE_STORE"] = "1"
	}
	reqs := s.run(t, "agents-files.mjs", env, &out)
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2:\n%s", len(reqs), describe(reqs))
	}
	offered(t, reqs, longhaul.DocumentSearchTool)
	if p := reqs[0].SystemPrompt(); !strings.Contains(p, "[filename, chunk N]") {
		t.Errorf("the system prompt lacks the documents skill:\n%s", p)
	}
	results := toolResults(reqs[1])
	if len(results) != 1 || !strings.Contains(results[0], docsFact) || !strings.Contains(results[0], `"file_id":"`+fileID+`"`) {
		t.Fatalf("document_search's result lacks the fact of %s: %q", fileID, results)
	}
	var res struct {
		Results []searchHit `json:"results"`
	}
	if err := json.Unmarshal([]byte(results[0]), &res); err != nil {
		t.Fatal(err)
	}
	cite := ""
	for _, h := range res.Results {
		if strings.Contains(h.Text, docsFact) {
			cite = fmt.Sprintf("[report.pdf, chunk %d]", h.Chunk)
			break
		}
	}
	if want := "The Quillfeather index of the Harbourside depot was " + docsFact + " in May " + cite + "."; cite == "" || out.FinalOutput != want {
		t.Errorf("final output %q, want %q", out.FinalOutput, want)
	}

	if len(out.Searches) != 1 {
		t.Fatalf("the SDK saw %d hosted tool calls, want one file_search_call: %+v", len(out.Searches), out.Searches)
	}
	fs := out.Searches[0]
	if fs.Name != "file_search_call" || fs.Status != "completed" || !strings.HasPrefix(fs.ID, "fs_") || !cmp.Equal(fs.Queries, []string{docsQuery}) {
		t.Errorf("file_search_call %+v, want completed with queries [%q]", fs, docsQuery)
	}
	found := false
	for _, r := range fs.Results {
		if r.FileID == fileID && r.Filename == "report.pdf" && r.Score > 0 && strings.Contains(r.Text, docsFact) {
			found = true
		}
	}
	if !found {
		t.Errorf("the file_search_call's results lack the fact of %s: %+v", fileID, fs.Results)
	}
	if last && (out.Deleted == nil || out.Deleted.ID != vsID || out.Deleted.Object != "vector_store.deleted" || !out.Deleted.Deleted) {
		t.Errorf("vectorStores.delete answered %+v", out.Deleted)
	}
}
