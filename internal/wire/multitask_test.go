package wire

import (
	"strings"
	"testing"
)

// TestRunRequestMultitask: multitask_strategy is one of the strategies, and
// only with the metadata.chat_id it applies to.
func TestRunRequestMultitask(t *testing.T) {
	hi := "hi"
	for _, tt := range []struct {
		strategy string
		metadata map[string]string
		want     string
	}{
		{"", nil, ""},
		{"steer", map[string]string{"chat_id": "c1"}, ""},
		{"rollback", map[string]string{"chat_id": "c1"}, ""},
		{"later", map[string]string{"chat_id": "c1"}, "multitask_strategy: must be one of reject, enqueue, interrupt, steer, rollback"},
		{"reject", nil, "multitask_strategy: needs metadata.chat_id"},
		{"enqueue", map[string]string{"chat_id": " "}, "multitask_strategy: needs metadata.chat_id"},
	} {
		r := RunRequest{Agent: "a", Input: &hi, Metadata: tt.metadata, MultitaskStrategy: tt.strategy}
		err := r.Validate(nil)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q %v: %v", tt.strategy, tt.metadata, err)
		case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
			t.Errorf("%q %v: %v, want %q", tt.strategy, tt.metadata, err, tt.want)
		}
	}
}
