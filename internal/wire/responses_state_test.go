package wire

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/contract"
)

// TestResponseStateReadsOldRuns proves a run started before
// AgentInput.Response existed reads as it did: its state from the
// metadata keys, which are not the caller's metadata.
func TestResponseStateReadsOldRuns(t *testing.T) {
	typed := contract.ResponseState{Instructions: true, PreviousResponseID: "resp_1", Store: true, InputFrom: 3, CreatedAt: 1700000000, SearchResults: true}
	for _, tc := range []struct {
		name   string
		in     contract.AgentInput
		want   contract.ResponseState
		caller map[string]string
	}{
		{"typed", contract.AgentInput{Response: &typed, Metadata: map[string]string{"k": "v"}}, typed, map[string]string{"k": "v"}},
		{"old run", contract.AgentInput{Metadata: map[string]string{
			metaInstructions: "1", metaPrevious: "resp_1", metaStore: "true", metaBackground: "false",
			metaInputFrom: "3", metaCreated: "1700000000", metaSearchResults: "1", "k": "v",
		}}, typed, map[string]string{"k": "v"}},
		{"old run, not stored, in the background", contract.AgentInput{Metadata: map[string]string{
			metaStore: "false", metaBackground: "true", metaInputFrom: "0", metaCreated: "1",
		}}, contract.ResponseState{Background: true, CreatedAt: 1}, map[string]string{}},
		{"old run without keys", contract.AgentInput{}, contract.ResponseState{Store: true}, map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ResponseStateOf(tc.in)); diff != "" {
				t.Errorf("responseState (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.caller, callerMetadata(tc.in)); diff != "" {
				t.Errorf("callerMetadata (-want +got):\n%s", diff)
			}
		})
	}
}
