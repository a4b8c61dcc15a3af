package runs_test

import (
	"context"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
)

// chatInput is a chat turn's input of user asking q.
func chatInput(user, q string) contract.AgentInput {
	return contract.AgentInput{Agent: "naked", User: longhaul.User{Principal: user}, ChatID: user + "/chat",
		Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: q}}}
}

// TestStartOrAttach: a new run starts with its owner, summary and asked
// key in its memo; the same request attaches to it; another principal's
// run under the id is unknown; a chat turn's request without a message id
// gets a retake once the turn's run finished, and attaches to a retake
// still running that answers the same conversation.
func TestStartOrAttach(t *testing.T) {
	fake := runsfake.New()
	g := runs.NewGate(fake, runs.GateConfig{})
	ctx := context.Background()
	in := chatInput("alice", "hi")
	id, err := g.StartOrAttach(ctx, runs.StartRequest{ID: "run-a", Input: in, Question: "hi"})
	if err != nil || id != "run-a" {
		t.Fatalf("start = %q, %v", id, err)
	}
	r := fake.Run("run-a")
	if r == nil || r.Memo[runs.MemoOwner] != in.User.Key() || r.Memo[runs.MemoSummary] != "naked: hi" || r.Memo[runs.MemoAsked] != runs.AskedKey(in.Messages) {
		t.Fatalf("started %+v", r)
	}
	if id, err := g.StartOrAttach(ctx, runs.StartRequest{ID: "run-a", Input: in}); err != nil || id != "run-a" {
		t.Fatalf("attach = %q, %v", id, err)
	}
	_, err = g.StartOrAttach(ctx, runs.StartRequest{ID: "run-a", Input: chatInput("bob", "hi")})
	refusal(t, err, runs.ErrNotFound)

	if id, _ := g.StartOrAttach(ctx, runs.StartRequest{ID: "run-a", Input: in, Retake: true}); id != "run-a" {
		t.Errorf("a retry while the run goes on got %q, want run-a", id)
	}
	r.Finish(contract.AgentResult{Content: "hello"})
	retake := contract.ChatRetakeID("run-a", 2)
	if id, _ := g.StartOrAttach(ctx, runs.StartRequest{ID: "run-a", Input: in, Retake: true}); id != retake {
		t.Errorf("a Regenerate got %q, want %s", id, retake)
	}
	if id, _ := g.StartOrAttach(ctx, runs.StartRequest{ID: "run-a", Input: in, Retake: true}); id != retake {
		t.Errorf("a retry of the Regenerate got %q, want %s", id, retake)
	}
}

// TestStartOrAttachRefusals: a start past the principal's runs is refused
// before anything starts, and one the engine refuses as invalid is said so.
func TestStartOrAttachRefusals(t *testing.T) {
	fake := runsfake.New()
	g := runs.NewGate(fake, runs.GateConfig{Limits: runs.Limits{Runs: 1}})
	ctx := context.Background()
	if _, err := g.StartOrAttach(ctx, runs.StartRequest{ID: "run-1", Input: chatInput("alice", "one")}); err != nil {
		t.Fatal(err)
	}
	_, err := g.StartOrAttach(ctx, runs.StartRequest{ID: "run-2", Input: chatInput("alice", "two")})
	refusal(t, err, runs.ErrTooMany)
	if fake.Run("run-2") != nil {
		t.Error("a refused run started")
	}
	fake.StartErr = runs.ErrInvalid
	_, err = g.StartOrAttach(ctx, runs.StartRequest{ID: "run-3", Input: chatInput("bob", "three")})
	if r := refusal(t, err, runs.ErrInvalid); r.Message != "Temporal refused the run: "+runs.ErrInvalid.Error() {
		t.Errorf("said %q", r.Message)
	}
}

// TestAskedKey: moving an image to the blob store keeps a conversation's
// key; an edit changes it.
func TestAskedKey(t *testing.T) {
	base := []longhaul.Message{{Role: longhaul.RoleUser, Content: "hi", Parts: []longhaul.Part{{Type: longhaul.PartImage, URL: "data:image/png;base64,AAAA"}}}}
	claimed := []longhaul.Message{{Role: longhaul.RoleUser, Content: "hi", Parts: []longhaul.Part{{Type: longhaul.PartImage, Ref: "blob-1"}}}}
	edited := []longhaul.Message{{Role: longhaul.RoleUser, Content: "hi!", Parts: base[0].Parts}}
	if runs.AskedKey(base) != runs.AskedKey(claimed) {
		t.Error("moving an image to the blob store changed the key")
	}
	if runs.AskedKey(base) == runs.AskedKey(edited) {
		t.Error("an edited message kept the key")
	}
}
