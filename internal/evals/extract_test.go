package evals_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/evals"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
)

// events reads a committed history of the workflows' replay tests.
func events(t *testing.T, name string) []*historypb.HistoryEvent {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "workflows", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return h.GetEvents()
}

// history is the case of a committed history.
func history(t *testing.T, name string) *evals.Case {
	t.Helper()
	c, err := evals.Extract("replay-1", events(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

func TestExtractAgenticHistory(t *testing.T) {
	c := history(t, "agentic_history.json")
	if c.Agent != "researcher" || c.Mode != contract.ModeAgentic || c.ID != "replay-1" {
		t.Fatalf("case %+v", c)
	}
	if len(c.Messages) != 1 || c.Messages[0].Content != "How long is a pelican's bill?" {
		t.Errorf("messages %+v", c.Messages)
	}
	if diff := cmp.Diff([]string{"Read the page", "Answer"}, c.Plan); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if len(c.Calls) != 1 || c.Calls[0].Name != "web_fetch" || !strings.Contains(c.Calls[0].Content, "47 cm") {
		t.Fatalf("calls %+v", c.Calls)
	}
	if a := c.Calls[0].Arguments; a != contract.CanonicalJSON(a) || !strings.HasPrefix(a, `{"url":"http://`) {
		t.Errorf("arguments are not canonical: %s", a)
	}
	if !strings.HasPrefix(c.Answer, "Up to 47 cm") || c.Usage.TotalTokens == 0 || len(c.Models) == 0 {
		t.Errorf("answer %q, usage %+v, models %v", c.Answer, c.Usage, c.Models)
	}
}

func TestExtractChatHistory(t *testing.T) {
	c := history(t, "agent_history.json")
	if c.Mode != contract.ModeChat || len(c.Plan) != 0 || c.Answer == "" {
		t.Fatalf("case %+v", c)
	}
}

func TestCaseFilesRoundTrip(t *testing.T) {
	c := history(t, "agentic_history.json")
	dir := t.TempDir()
	if _, err := evals.WriteCase(dir, *c); err != nil {
		t.Fatal(err)
	}
	got, err := evals.ReadCases(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]evals.Case{*c}, got); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
	if _, err := evals.ReadCases(t.TempDir()); err == nil {
		t.Error("an empty directory read without error")
	}
}

func TestExtractRefusesOtherWorkflows(t *testing.T) {
	if _, err := evals.Extract("r", events(t, "retention_history.json")); err == nil {
		t.Error("a retention history made a case")
	}
}
