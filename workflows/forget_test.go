package workflows_test

import (
	"context"
	"sync"
	"testing"

	"github.com/longhaul-dev/longhaul"
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
