package longhaul_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
)

func TestModelList(t *testing.T) {
	for _, tc := range []struct {
		ref     string
		want    []string
		primary string
	}{
		{"", nil, ""},
		{"llama3.1:8b", []string{"llama3.1:8b"}, "llama3.1:8b"},
		{"remote:big-model,llama3.1:8b", []string{"remote:big-model", "llama3.1:8b"}, "remote:big-model"},
		{" remote:big-model , llama3.1:8b ,", []string{"remote:big-model", "llama3.1:8b"}, "remote:big-model"},
	} {
		if diff := cmp.Diff(tc.want, longhaul.ModelList(tc.ref)); diff != "" {
			t.Errorf("ModelList(%q) (-want +got):\n%s", tc.ref, diff)
		}
		if got := longhaul.PrimaryModel(tc.ref); got != tc.primary {
			t.Errorf("PrimaryModel(%q) = %q, want %q", tc.ref, got, tc.primary)
		}
	}
}
