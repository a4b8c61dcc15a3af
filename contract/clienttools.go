package contract

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// DefaultClientToolTimeout is how long a run waits for a client's tool
// results when AgentInput.ClientToolTimeout is zero.
const DefaultClientToolTimeout = time.Hour

// clientCallPrefix starts the id of every client tool call.
const clientCallPrefix = "call_lh_"

// ClientCallID is the id a client tool call gets: it names the run that
// waits for its result and the call's sequence number in the run, so the
// client's next request, which carries only the result and the id, finds
// the run again on any API process. The id is not a secret: a request
// naming another principal's run is refused by the owner check.
func ClientCallID(runID string, seq int64) string {
	return clientCallPrefix + base64.RawURLEncoding.EncodeToString([]byte(runID)) + "." + strconv.FormatInt(seq, 10)
}

// ParseClientCallID is the run a ClientCallID names.
func ParseClientCallID(id string) (runID string, ok bool) {
	rest, found := strings.CutPrefix(id, clientCallPrefix)
	if !found {
		return "", false
	}
	enc, seq, found := strings.Cut(rest, ".")
	if !found {
		return "", false
	}
	if _, err := strconv.ParseInt(seq, 10, 64); err != nil {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(b) == 0 {
		return "", false
	}
	return string(b), true
}
