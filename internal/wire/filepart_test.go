package wire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/longhaul-dev/longhaul"
)

// TestFileParts: a file part decodes in its place, holding it as a text
// part until the handler puts its note there; malformed ones are refused.
func TestFileParts(t *testing.T) {
	var m MessageContent
	in := `[{"type":"text","text":"Read this"},{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERg==","filename":"report.pdf"}},` +
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}},{"type":"file","file":{"file_id":"file-abc"}}]`
	if err := json.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	want := []FilePart{
		{FileData: "data:application/pdf;base64,JVBERg==", Filename: "report.pdf", text: 1, part: 1},
		{FileID: "file-abc", text: 2, part: 3},
	}
	if diff := cmp.Diff(want, m.Files, cmp.AllowUnexported(FilePart{})); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	m.NoteFile(0, "[attached file report.pdf — searchable with document_search]")
	m.NoteFile(1, "[attached file notes.txt — searchable with document_search]")
	if want := "Read this\n[attached file report.pdf — searchable with document_search]\n[attached file notes.txt — searchable with document_search]"; m.Text != want {
		t.Errorf("text = %q, want %q", m.Text, want)
	}
	wantParts := []longhaul.Part{
		{Type: longhaul.PartText, Text: "Read this"},
		{Type: longhaul.PartText, Text: "[attached file report.pdf — searchable with document_search]"},
		{Type: longhaul.PartImage, URL: "data:image/png;base64,iVBO"},
		{Type: longhaul.PartText, Text: "[attached file notes.txt — searchable with document_search]"},
	}
	if diff := cmp.Diff(wantParts, m.Parts, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("parts (-want +got):\n%s", diff)
	}

	// Without images the message is text alone, the note in the file's place.
	var plain MessageContent
	if err := json.Unmarshal([]byte(`[{"type":"file","file":{"file_id":"file-abc"}},{"type":"text","text":"What does it say?"}]`), &plain); err != nil {
		t.Fatal(err)
	}
	plain.NoteFile(0, "[attached file a.pdf]")
	if plain.Parts != nil || plain.Text != "[attached file a.pdf]\nWhat does it say?" {
		t.Errorf("plain = %+v", plain)
	}

	for _, bad := range []string{
		`[{"type":"file"}]`,
		`[{"type":"file","file":{}}]`,
		`[{"type":"file","file":{"file_id":"file-a","file_data":"AAAA"}}]`,
		`[{"type":"file","file":{"file_id":"file-a","filename":"` + strings.Repeat("x", 256) + `"}}]`,
	} {
		var m MessageContent
		if err := json.Unmarshal([]byte(bad), &m); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
