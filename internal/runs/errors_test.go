package runs

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"
)

// TestClassify proves Temporal's errors reach the handlers as this
// package's kinds, saying what Temporal said.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		kind error
		msg  string
	}{
		{"not found", serviceerror.NewNotFound("workflow not found"), ErrNotFound, "workflow not found"},
		{"no namespace", serviceerror.NewNamespaceNotFound("ns"), ErrNoNamespace, ""},
		{"invalid, wrapped", fmt.Errorf("start: %w", serviceerror.NewInvalidArgument("blob size exceeds limit")), ErrInvalid, "blob size exceeds limit"},
		{"already started", serviceerror.NewWorkflowExecutionAlreadyStarted("started", "", ""), ErrAlreadyStarted, "started"},
		{"deadline", serviceerror.NewDeadlineExceeded("deadline"), ErrTimeout, "deadline"},
		{"context deadline", context.DeadlineExceeded, ErrTimeout, context.DeadlineExceeded.Error()},
		{"unavailable", serviceerror.NewUnavailable("down"), ErrUnreachable, "down"},
		{"cancelled", temporal.NewCanceledError(), ErrCanceled, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := classify(tc.err)
			if !errors.Is(got, tc.kind) {
				t.Errorf("classify(%v) = %v, not %v", tc.err, got, tc.kind)
			}
			if tc.msg != "" && got.Error() != tc.msg {
				t.Errorf("classify(%v) says %q, want %q", tc.err, got.Error(), tc.msg)
			}
			if !errors.Is(got, tc.err) {
				t.Errorf("classify(%v) lost its cause", tc.err)
			}
		})
	}
	var f *Failure
	app := temporal.NewApplicationError("model down", "ModelUnavailable")
	if got := classify(fmt.Errorf("run: %w", app)); !errors.As(got, &f) || f.Type != "ModelUnavailable" || f.Message != "model down" {
		t.Errorf("classify(application error) = %#v", got)
	}
	if classify(nil) != nil {
		t.Error("classify(nil) is not nil")
	}
	if !Unreachable(classify(serviceerror.NewUnavailable("down"))) || Unreachable(classify(serviceerror.NewNotFound("x"))) {
		t.Error("Unreachable tells an unreachable Temporal from an answer wrongly")
	}
}
