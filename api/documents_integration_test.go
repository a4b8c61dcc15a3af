package api_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-pdf/fpdf"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/docsearch"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/owuitest"
)

// reportPDF is a generated three-page PDF whose one fact (the Zorblax
// coefficient) no model could know without reading it.
func reportPDF(t *testing.T) []byte {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	f.SetFont("Helvetica", "", 11)
	for _, page := range []string{
		"Northwind Quarterly Report. This report covers the shipping volumes of the northern region, the staffing of the three depots and the maintenance of the fleet. " + strings.Repeat("Volumes were steady across the quarter and the depots kept their schedules. ", 30),
		"Measurements. The Zorblax coefficient of the Northwind plant was 42.7 percent in March. " + strings.Repeat("Other measurements stayed within their usual ranges. ", 30),
		"Outlook. " + strings.Repeat("The next quarter is expected to bring more of the same. ", 30),
	} {
		f.AddPage()
		f.MultiCell(0, 5, page, "", "L", false)
	}
	var buf bytes.Buffer
	if err := f.Output(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestAgentAnswersFromAnAttachedPDF is the "done when": a user
// attaches a PDF in a chat and the assistant answers a question only the
// PDF can answer, citing it. The request is Open WebUI's (owuitest: its
// headers, its signed user, its chat id, its body) with the PDF as a Chat
// Completions file part in the user's message, the shape OpenAI defines
// (openai-python v3.3.1, src/openai/types/chat/
// chat_completion_content_part_param.py:15-47). Open WebUI v0.10.2 itself
// never builds such a part for an OpenAI connection (commit 4b55e6964:
// attached documents become its own RAG text, utils/middleware.py:
// 2781-2788, or <attached_files> URL tags, :1508-1556; images become
// image_url parts, :2232-2254), so the part stands for any OpenAI client
// that sends one (openai-python, openai-node, a pipe). The file is stored,
// ingested into the chat's vector store by the IngestFile workflow, and
// the scripted model calls document_search, reads the fact in the tool
// result and answers citing [report.pdf, chunk N].
func TestAgentAnswersFromAnAttachedPDF(t *testing.T) {
	env := owuiEnv(t)
	chat := owuiConn(env).NewChat(ann, "assistant")
	req := chat.Ask("What was the Zorblax coefficient of the Northwind plant in March?")
	msgs := req.Messages()
	last := msgs[len(msgs)-1]
	last["content"] = []map[string]any{
		{"type": "text", "text": last["content"]},
		{"type": "file", "file": map[string]any{
			"filename":  "report.pdf",
			"file_data": "data:application/pdf;base64," + base64.StdEncoding.EncodeToString(reportPDF(t)),
		}},
	}

	var toolResult string
	var cited string
	env.Model.Enqueue(
		llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			if names := toolNames(r); !slices.Contains(names, longhaul.DocumentSearchTool) {
				t.Errorf("the model is not offered %s: %v", longhaul.DocumentSearchTool, names)
			}
			if p := r.SystemPrompt(); !strings.Contains(p, "## documents") || !strings.Contains(p, "[filename, chunk N]") {
				t.Errorf("the system prompt lacks the documents skill:\n%s", p)
			}
			if u := r.LastUserMessage(); !strings.Contains(u, "[attached file report.pdf — searchable with document_search]") || strings.Contains(u, "base64") {
				t.Errorf("the user message the model reads: %q", u)
			}
			return llmtest.ToolCalls(llmtest.ToolCall{ID: "call_docs", Name: longhaul.DocumentSearchTool, Arguments: `{"query":"Zorblax coefficient Northwind March"}`})
		}),
		llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			toolResult = lastToolMessage(r)
			var res docsearch.Result
			if err := json.Unmarshal([]byte(toolResult), &res); err != nil {
				return llmtest.Text("The tool result is not JSON: " + err.Error())
			}
			for _, h := range res.Results {
				if h.Filename == "report.pdf" && strings.Contains(h.Text, "42.7") {
					cited = fmt.Sprintf("[%s, chunk %d]", h.Filename, h.Chunk)
					return llmtest.Text("The Zorblax coefficient of the Northwind plant was 42.7 percent in March " + cited + ".")
				}
			}
			return llmtest.Text("The documents do not say.")
		}),
	)
	a := owuitest.OK(t, req)
	if !strings.Contains(toolResult, "42.7") || !strings.Contains(toolResult, `"filename":"report.pdf"`) {
		t.Fatalf("document_search's result lacks the fact:\n%s", toolResult)
	}
	if cited == "" || !strings.Contains(a.Content, "42.7 percent in March "+cited) {
		t.Fatalf("the answer does not cite the report: %q (citation %q)", a.Content, cited)
	}

	// The file went into the chat's own store, owned by the chat's user.
	// (The principal of a user behind the proxy key, as identity names
	// it: runs, memory and documents are scoped by it.)
	owner := "owui/" + identity.Part(ann.ID)
	chatKey := identity.ChatKey(owner, chat.ID)
	ctx := context.Background()
	vs, err := env.Docs.ChatVectorStore(ctx, owner, chatKey)
	if err != nil {
		t.Fatal(err)
	}
	files, _, err := env.Docs.ListVectorStoreFiles(ctx, owner, vs.ID, "", "", docstore.Page{})
	if err != nil || len(files) != 1 || files[0].Status != docstore.StatusCompleted {
		t.Fatalf("the chat's store holds %+v (%v), want the report, completed", files, err)
	}

	// The next turn sends the whole conversation again, the file part
	// included: it is not stored a second time.
	chat.Answer(a.Content)
	req2 := chat.Ask("Thanks. Which month was that?")
	m2 := req2.Messages()
	m2[len(m2)-3]["content"] = last["content"]
	env.Model.Enqueue(llmtest.Text("March " + cited + "."))
	owuitest.OK(t, req2)
	all, _, err := env.Docs.ListFiles(ctx, owner, "", docstore.Page{})
	if err != nil || len(all) != 1 {
		t.Errorf("after a second turn the user has %d files (%v), want 1", len(all), err)
	}

	// Another user's run cannot read the chat's store: document_search
	// reports it as not found (the tool is scoped by the run's user).
	if _, err := env.Docs.GetVectorStore(ctx, "owui/"+identity.Part(bob.ID), vs.ID); err == nil {
		t.Errorf("bob finds ann's chat store")
	}

	// Deleting the chat deletes its store and the file stored from the
	// part.
	del, err := http.NewRequestWithContext(ctx, http.MethodDelete, env.URL+"/v1/conversations/"+chat.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	del.Header = req.Header.Clone()
	resp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE the conversation: %d", resp.StatusCode)
	}
	if _, err := env.Docs.GetVectorStore(ctx, owner, vs.ID); err == nil {
		t.Errorf("the chat's store outlived the chat")
	}
	if all, _, _ := env.Docs.ListFiles(ctx, owner, "", docstore.Page{}); len(all) != 0 {
		t.Errorf("the chat's file outlived the chat: %+v", all)
	}
}

// TestFilePartErrors: a file part that cannot be read is a clear 400, and
// the run does not start.
func TestFilePartErrors(t *testing.T) {
	env := owuiEnv(t)
	for _, c := range []struct {
		name string
		file map[string]any
		want string
	}{
		{"neither data nor id", map[string]any{"filename": "a.pdf"}, "file.file_data or file.file_id"},
		{"bad base64", map[string]any{"filename": "a.pdf", "file_data": "data:application/pdf;base64,%%%"}, "not valid base64"},
		{"another's file id", map[string]any{"file_id": "file-0123456789abcdef01234567"}, "no file"},
		{"not a PDF", map[string]any{"filename": "broken.pdf", "file_data": "data:application/pdf;base64," + base64.StdEncoding.EncodeToString([]byte("%PDF-1.4 not really"))}, "could not be read"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := modelCalls(env)
			req := owuiConn(env).NewChat(ann, "assistant").Ask("Summarise it.")
			msgs := req.Messages()
			last := msgs[len(msgs)-1]
			last["content"] = []map[string]any{{"type": "text", "text": "Summarise it."}, {"type": "file", "file": c.file}}
			ctx := within(t, 2*time.Minute)
			a, err := req.Exchange(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if a.Status != http.StatusBadRequest && a.Status != http.StatusNotFound || !strings.Contains(a.Error, c.want) {
				t.Errorf("status %d, error %q; want a 400 or 404 saying %q", a.Status, a.Error, c.want)
			}
			if n := modelCalls(env); n != before {
				t.Errorf("the model was called %d times", n-before)
			}
		})
	}
}
