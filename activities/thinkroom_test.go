package activities_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/modelcheck"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/window"
)

// TestKnownThinkersFromOllama: the models the start-up check finds
// thinking (Ollama's /api/show capabilities, modelcheck.Probe), told to
// the activities as the worker tells them, keep room to think from their
// first call: its context event reserves DefaultThinkReserve beside the
// answer's share before the model has answered with any reasoning. Not
// told, the first call keeps only the answer's share. (The call reads
// three long pages, so that it is shortened either way and reports its
// context.)
func TestKnownThinkersFromOllama(t *testing.T) {
	const tokens = 32768
	conv := userMessage("What do the pages say?")
	for _, id := range []string{"call_a", "call_b", "call_c"} {
		conv = append(conv,
			longhaul.Message{Role: longhaul.RoleAssistant, ToolCalls: []longhaul.ToolCall{{ID: id, Name: "current_time", Arguments: `{}`}}},
			longhaul.Message{Role: longhaul.RoleTool, ToolCallID: id, Name: "current_time", Content: id + " " + strings.Repeat("The river runs past the old mill. ", 1500)})
	}
	for _, told := range []bool{false, true} {
		f := newFixture(t, nil, nil)
		f.srv.SetFlavour(llmtest.FlavourOllama)
		f.srv.SetOllamaModel(llmtest.OllamaModel{Name: "llmtest", Thinking: true})
		f.acts.Windows = window.NewResolver(window.Settings{"llmtest": tokens}, nil)
		r := modelcheck.Probe(t.Context(), &http.Client{}, f.srv.URL(), "", []string{"llmtest"})
		if !slices.Equal(r.Thinking, []string{"llmtest"}) {
			t.Fatalf("probe's Thinking = %q, want [llmtest] (result %+v)", r.Thinking, r)
		}
		if told {
			activities.KnownThinkers(f.acts, "", r.Thinking...)
		}
		f.srv.Enqueue(llmtest.Text("Paris.", llmtest.Reasoning("The capital.")))
		resp, err := chat(t, f.activityEnv(), f.acts, contract.ModelRequest{Call: "turn-1", Agent: "naked", Messages: conv})
		if err != nil {
			t.Fatalf("told %v: %v", told, err)
		}
		want := activities.DefaultAnswerReserve(tokens)
		if told {
			want += activities.DefaultThinkReserve
		}
		if resp.Context == nil || resp.Context.Reserved != want {
			t.Fatalf("told %v: the first call's context %+v, want %d reserved", told, resp.Context, want)
		}
		if resp.Context.Excerpted == 0 {
			t.Errorf("told %v: nothing excerpted (%+v)", told, resp.Context)
		}
	}
}
