package docsearch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul/internal/docsearch"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/memory"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/tools"
)

var ctx = context.Background()

// openStore opens a real SQLite document store in the test's directory.
func openStore(t *testing.T) docstore.Store {
	t.Helper()
	st, err := docstore.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "docs.db"))
	if err != nil {
		t.Fatalf("docstore.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// addDoc stores a file for owner in a new vector store, with one chunk per
// text (embedded as llmtest's endpoint embeds them), completed.
func addDoc(t *testing.T, st docstore.Store, owner, filename string, texts ...string) docstore.VectorStore {
	t.Helper()
	vs, err := st.CreateVectorStore(ctx, docstore.VectorStore{Owner: owner, Name: filename})
	if err != nil {
		t.Fatal(err)
	}
	f, err := st.PutFile(ctx, docstore.File{Owner: owner, Filename: filename, Purpose: "assistants", ContentType: "text/plain"}, bytes.NewReader([]byte(strings.Join(texts, "\n"))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AttachFile(ctx, docstore.VectorStoreFile{Owner: owner, VectorStoreID: vs.ID, FileID: f.ID, Attributes: map[string]any{"lang": "en"}}); err != nil {
		t.Fatal(err)
	}
	var chunks []docstore.Chunk
	for i, text := range texts {
		chunks = append(chunks, docstore.Chunk{VectorStoreID: vs.ID, FileID: f.ID, Index: i, Text: text, Tokens: len(strings.Fields(text)), Vector: llmtest.Embed(text, 64)})
	}
	if err := st.PutChunks(ctx, owner, chunks); err != nil {
		t.Fatal(err)
	}
	if err := st.SetStatus(ctx, owner, vs.ID, f.ID, docstore.StatusCompleted, nil); err != nil {
		t.Fatal(err)
	}
	return vs
}

func call(t *testing.T, tool *docsearch.Tool, user string, stores []string, args string) (docsearch.Result, error) {
	t.Helper()
	res, err := tool.Call(ctx, tools.Call{ID: "c1", Arguments: json.RawMessage(args), User: user, VectorStores: stores})
	if err != nil {
		return docsearch.Result{}, err
	}
	var out docsearch.Result
	if err := json.Unmarshal([]byte(res.Content), &out); err != nil {
		t.Fatalf("the result is not JSON: %v\n%s", err, res.Content)
	}
	// The field names the model (and the Responses API) reads.
	var raw struct {
		Results []map[string]json.RawMessage `json:"results"`
	}
	_ = json.Unmarshal([]byte(res.Content), &raw)
	for _, r := range raw.Results {
		for _, k := range []string{"file_id", "filename", "vector_store_id", "chunk", "score", "text", "attributes"} {
			if _, ok := r[k]; !ok {
				t.Errorf("a result lacks %q: %s", k, res.Content)
			}
		}
	}
	return out, nil
}

func TestSearchFindsTheOwnersChunks(t *testing.T) {
	llm := llmtest.New(t)
	st := openStore(t)
	facts := []string{
		"The quarterly report covers shipping volumes in the northern region.",
		"The Zorblax coefficient measured in March was 42.7 percent.",
		"Staff numbers stayed flat over the period.",
	}
	vs := addDoc(t, st, "alice", "report.pdf", facts...)
	other := addDoc(t, st, "bob", "bob.txt", "Bob's Zorblax coefficient is secret: 99.")
	for _, mode := range []struct {
		name  string
		embed docsearch.Embedder
	}{
		{"hybrid", memory.NewOpenAIEmbedder(llm.URL(), "", "llmtest-embed", nil)},
		{"text only", nil},
	} {
		t.Run(mode.name, func(t *testing.T) {
			tool := docsearch.New(st, mode.embed, 0)
			res, err := call(t, tool, "alice", []string{vs.ID}, `{"query":"Zorblax coefficient"}`)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Results) == 0 || !strings.Contains(res.Results[0].Text, "42.7") {
				t.Fatalf("first result is not the fact: %+v", res)
			}
			h := res.Results[0]
			if h.Filename != "report.pdf" || h.Chunk != 1 || h.VectorStoreID != vs.ID || h.FileID == "" || h.Score <= 0 || h.Attributes["lang"] != "en" {
				t.Errorf("hit = %+v", h)
			}
			for _, h := range res.Results {
				if h.VectorStoreID != vs.ID || strings.Contains(h.Text, "99") {
					t.Errorf("a hit outside alice's store: %+v", h)
				}
			}

			// Bob names alice's store: it does not exist for him.
			res, err = call(t, tool, "bob", []string{vs.ID}, `{"query":"Zorblax coefficient"}`)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Results) != 0 || !strings.Contains(res.Message, "not found: "+vs.ID) {
				t.Errorf("bob searching alice's store got %+v", res)
			}
			// Bob's own store and alice's: only his is searched, and the
			// other is reported.
			res, err = call(t, tool, "bob", []string{other.ID, vs.ID}, `{"query":"Zorblax coefficient"}`)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Results) != 1 || !strings.Contains(res.Results[0].Text, "99") || !strings.Contains(res.Message, vs.ID) {
				t.Errorf("bob's search got %+v", res)
			}
		})
	}
}

func TestNoStoresIsAMessage(t *testing.T) {
	tool := docsearch.New(openStore(t), nil, 0)
	res, err := call(t, tool, "alice", nil, `{"query":"anything"}`)
	if err != nil {
		t.Fatalf("a run without stores gets an error: %v", err)
	}
	if len(res.Results) != 0 || !strings.Contains(res.Message, "no documents to search") {
		t.Errorf("result = %+v", res)
	}
	res, err = call(t, tool, "alice", []string{"vs_doesnotexist"}, `{"query":"anything"}`)
	if err != nil || len(res.Results) != 0 || !strings.Contains(res.Message, "not found: vs_doesnotexist") {
		t.Errorf("unknown store: %+v, %v", res, err)
	}
}

func TestBounds(t *testing.T) {
	st := openStore(t)
	var texts []string
	for i := range 60 {
		texts = append(texts, fmt.Sprintf("widget note %d: %s", i, strings.Repeat("lorem ipsum dolor ", 100)))
	}
	vs := addDoc(t, st, "alice", "long.txt", texts...)
	tool := docsearch.New(st, nil, 5000)
	res, err := call(t, tool, "alice", []string{vs.ID}, `{"query":"widget note"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != docsearch.DefaultResults {
		t.Errorf("%d results without max_num_results, want %d", len(res.Results), docsearch.DefaultResults)
	}
	total := 0
	for _, h := range res.Results {
		n := utf8.RuneCountInString(h.Text)
		total += n
		if n > 500 || !strings.HasSuffix(h.Text, "…") {
			t.Errorf("a hit of %d characters, not cut to its share: %q…", n, h.Text[:40])
		}
	}
	if total > 5000 {
		t.Errorf("%d characters of text, over the budget of 5000", total)
	}
	res, err = call(t, tool, "alice", []string{vs.ID}, `{"query":"widget note","max_num_results":50}`)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Results); n == 0 || n > 50 {
		t.Errorf("%d results for max_num_results 50", n)
	}
	for _, bad := range []string{`{"query":"x","max_num_results":0}`, `{"query":"x","max_num_results":51}`, `{"query":"  "}`, `{"query":`} {
		if _, err := call(t, tool, "alice", []string{vs.ID}, bad); !errors.Is(err, tools.ErrInvalidArguments) {
			t.Errorf("%s: err = %v, want ErrInvalidArguments", bad, err)
		}
	}
	if _, err := call(t, tool, "", []string{vs.ID}, `{"query":"x"}`); !errors.Is(err, tools.ErrPermanent) {
		t.Errorf("a call without a user: err = %v, want ErrPermanent", err)
	}
}

func TestSchema(t *testing.T) {
	tool := docsearch.New(openStore(t), nil, 0)
	reg, err := tools.NewRegistry(tool)
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Validate(tool.Name(), json.RawMessage(`{"query":"q","max_num_results":3}`)); err != nil {
		t.Errorf("valid arguments refused: %v", err)
	}
	for _, bad := range []string{`{}`, `{"query":"q","vector_store_ids":["vs_x"]}`, `{"query":"q","max_num_results":51}`} {
		if err := reg.Validate(tool.Name(), json.RawMessage(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if !strings.Contains(tool.Description(), "[filename, chunk N]") {
		t.Errorf("the description does not say how to cite: %s", tool.Description())
	}
}
