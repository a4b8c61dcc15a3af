package api

import (
	"strconv"
	"strings"

	"github.com/longhaul-dev/longhaul/contract"
)

// The metadata keys under which runs started before
// contract.AgentInput.Response existed keep their Responses state (see
// responseState); they are never echoed in a response's metadata.
const (
	metaPrefix        = "longhaul.responses."
	metaInstructions  = metaPrefix + "instructions"
	metaPrevious      = metaPrefix + "previous_response_id"
	metaStore         = metaPrefix + "store"
	metaBackground    = metaPrefix + "background"
	metaInputFrom     = metaPrefix + "input_from"
	metaCreated       = metaPrefix + "created_at"
	metaSearchResults = metaPrefix + "file_search_results"
)

// responseState is what the Responses API kept of the request that
// started a run with in: its typed state, or for a run started before
// there was one, what its metadata keys say.
func responseState(in contract.AgentInput) contract.ResponseState {
	if in.Response != nil {
		return *in.Response
	}
	m := in.Metadata
	from, _ := strconv.Atoi(m[metaInputFrom])
	created, _ := strconv.ParseInt(m[metaCreated], 10, 64)
	return contract.ResponseState{
		Instructions:       m[metaInstructions] == "1",
		PreviousResponseID: m[metaPrevious],
		Store:              m[metaStore] != "false",
		Background:         m[metaBackground] == "true",
		InputFrom:          from,
		CreatedAt:          created,
		SearchResults:      m[metaSearchResults] == "1",
	}
}

// callerMetadata is the metadata the client gave the run: without the
// Responses state an older run keeps there.
func callerMetadata(in contract.AgentInput) map[string]string {
	out := map[string]string{}
	for k, v := range in.Metadata {
		if !strings.HasPrefix(k, metaPrefix) {
			out[k] = v
		}
	}
	return out
}
