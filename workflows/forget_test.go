package workflows_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// TestRunNotKeptMarksItselfDeleted: a run not to be kept (a Responses
// request with store: false) marks itself deleted at its end, however it
// ends, so that it reads as gone even if the API that was to delete it
// died; a run to be kept does not.
func TestRunNotKeptMarksItselfDeleted(t *testing.T) {
	rejected := temporal.NewNonRetryableApplicationError("model endpoint answered 400", longhaul.ErrTypeModelRejected, nil)
	for _, tc := range []struct {
		name   string
		forget bool
		model  reply
		want   []string
	}{
		{"not kept, completed", true, answer("Secret.", usage(1, 1)), []string{"run-forget"}},
		{"not kept, failed", true, reply{err: rejected}, []string{"run-forget"}},
		{"kept", false, answer("Kept.", usage(1, 1)), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.resolve(spec)
			h.scriptModel(tc.model).Once()
			var mu sync.Mutex
			var marked []string
			h.env.OnActivity(h.acts.MarkDeleted, mock.Anything, mock.Anything).Return(func(_ context.Context, run string) error {
				mu.Lock()
				defer mu.Unlock()
				marked = append(marked, run)
				return nil
			}).Maybe()
			h.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "run-forget"})
			in := input(hi...)
			in.Forget = tc.forget
			h.run(in)
			mu.Lock()
			defer mu.Unlock()
			diff(t, "runs marked deleted", tc.want, marked)
		})
	}
}

// TestRunNotKeptRemembersNothing: a run not to be kept extracts no
// memories from its conversation, though its agent remembers.
func TestRunNotKeptRemembersNothing(t *testing.T) {
	h := newHarness(t)
	s := spec
	s.Remember = true
	h.resolve(s)
	h.scriptModel(answer("Noted.", usage(1, 1))).Once()
	h.env.OnActivity(h.acts.MarkDeleted, mock.Anything, mock.Anything).Return(nil).Once()
	var extracted atomic.Int32
	h.env.OnActivity(h.acts.ExtractMemories, mock.Anything, mock.Anything).Return(
		func(context.Context, contract.ExtractRequest) (contract.ExtractResponse, error) {
			extracted.Add(1)
			return contract.ExtractResponse{}, nil
		}).Maybe()
	in := input(longhaul.Message{Role: longhaul.RoleUser, Content: "I'm allergic to peanuts"})
	in.Forget = true
	h.run(in)
	if res := h.result(); res.Content != "Noted." {
		t.Errorf("result %q", res.Content)
	}
	if n := extracted.Load(); n != 0 {
		t.Errorf("memories extracted %d times from a run not to be kept", n)
	}
}
