package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// The visibility queries of the API — a user's runs, the runs of a chat
// that wait for a person, the runs a principal has running — and what
// reads their records. Every query names Longhaul's search attributes
// through the workflow contract.

const (
	// memoSummary is the memo field holding a run's summary, so a listing
	// shows it without describing each run.
	memoSummary = runs.MemoSummary
	// memoOwner is the memo field holding the principal a run was started
	// for.
	memoOwner = runs.MemoOwner
)

// quoteLiteral quotes s as a string literal of Temporal's visibility query
// language. Temporal reads the query with its sqlparser, whose tokenizer
// decodes backslash escapes (github.com/temporalio/sqlparser@v0.1.0
// token.go:755-811), so an escaped quote is one quote of the value. What
// the value becomes after that depends on the server, and literalOK tells
// which values come through whole.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
}

// literalOK reports whether a value can be matched exactly in a visibility
// query of Temporal's SQL visibility (go.temporal.io/server@v1.32.1):
//
//   - Not one beginning or ending with a single quote. The query converter
//     puts the parsed value back between quotes
//     (common/persistence/visibility/store/query/converter.go:612-618) and
//     sqlquery.ParseValue takes them off with strings.Trim
//     (common/sqlquery/query.go:56-58), which strips every quote at either
//     end: `x'` is matched as `x`, another principal's value, and
//     `x' OR LonghaulUser != '` as one that matches nothing.
//   - No backslash, double quote or control character. The SQL store
//     escapes the value for its database MySQL's way, a backslash before
//     each of these (common/persistence/visibility/store/sql/
//     query_converter.go:26-34, 275-277); SQLite (the embedded server)
//     and PostgreSQL read those backslashes as part of the value.
//
// identity.Bounded gives every principal and chat a name that passes.
func literalOK(s string) bool {
	return !strings.HasPrefix(s, "'") && !strings.HasSuffix(s, "'") &&
		!strings.ContainsFunc(s, func(r rune) bool { return r == '\\' || r == '"' || r < ' ' || r == 0x7f })
}

// waitingQuery is the visibility query of a user's runs of a chat that wait
// for a person.
func waitingQuery(chat, user string) string {
	return strings.Join([]string{
		"WorkflowType = " + quoteLiteral(contract.AgentWorkflowName),
		contract.SearchAttrChat.GetName() + " = " + quoteLiteral(chat),
		contract.SearchAttrUser.GetName() + " = " + quoteLiteral(user),
		contract.SearchAttrStatus.GetName() + " = " + quoteLiteral(contract.StatusWaiting),
		"ExecutionStatus = 'Running'",
	}, " AND ")
}

// runningQuery is the visibility query of the runs principal has running,
// which its limit of runs counts.
func runningQuery(principal string) string {
	return "WorkflowType = " + quoteLiteral(contract.AgentWorkflowName) + " AND " +
		contract.SearchAttrUser.GetName() + " = " + quoteLiteral(principal) + " AND ExecutionStatus = 'Running'"
}

// allWaitingQuery is the visibility query of every run of the namespace
// that waits for a person.
func allWaitingQuery() string {
	return "ExecutionStatus = 'Running' AND " + contract.SearchAttrStatus.GetName() + " = " + quoteLiteral(contract.StatusWaiting)
}

// listQuery is the visibility query of a user's runs, optionally of one
// agent and in one status. The runs of a chain continued as new are listed
// once, by their open or last execution.
func listQuery(user, agent, status string) string {
	q := []string{
		"WorkflowType = " + quoteLiteral(contract.AgentWorkflowName),
		contract.SearchAttrUser.GetName() + " = " + quoteLiteral(user),
		"ExecutionStatus != 'ContinuedAsNew'",
	}
	if agent != "" {
		q = append(q, contract.SearchAttrAgent.GetName()+" = "+quoteLiteral(agent))
	}
	st := contract.SearchAttrStatus.GetName()
	switch status {
	case "":
	case contract.StatusRunning, contract.StatusWaiting:
		// A terminated run never recorded its end: it is not running.
		q = append(q, st+" = "+quoteLiteral(status), "ExecutionStatus = 'Running'")
	case contract.StatusFailed:
		q = append(q, "("+st+" = 'failed' OR ExecutionStatus IN ('Failed', 'Terminated', 'TimedOut'))")
	default:
		q = append(q, st+" = "+quoteLiteral(status))
	}
	return strings.Join(q, " AND ")
}

// runStatuses are the statuses a listing may be filtered by.
var runStatuses = []string{contract.StatusRunning, contract.StatusWaiting, contract.StatusCompleted, contract.StatusFailed, contract.StatusCancelled}

// summaryOf converts one visibility record.
func summaryOf(e runs.Info) wire.RunSummary {
	return wire.RunSummary{
		ID:         e.ID,
		Agent:      e.Attrs[contract.SearchAttrAgent.GetName()],
		Status:     statusOf(e.Attrs[contract.SearchAttrStatus.GetName()], e),
		CreatedAt:  e.Started,
		FinishedAt: e.Closed,
		Summary:    e.Memo[memoSummary],
	}
}

// pageCheckLen is the length of the check that starts a page token.
const pageCheckLen = 8

// sealPageToken wraps Temporal's page token with a check of the query it
// belongs to. Temporal answers a damaged token with an internal error that
// clients retry until they give up, and a token of other filters with a
// wrong page; the check turns both into a 400. It is not a secret: the
// query always holds the caller's user, so no token reaches other runs.
func sealPageToken(query string, token []byte) string {
	sum := pageCheck(query, token)
	return base64.RawURLEncoding.EncodeToString(append(sum[:pageCheckLen:pageCheckLen], token...))
}

// openPageToken unwraps a page token sealed for query.
func openPageToken(query, v string) ([]byte, bool) {
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(b) <= pageCheckLen {
		return nil, false
	}
	token := b[pageCheckLen:]
	sum := pageCheck(query, token)
	return token, bytes.Equal(sum[:pageCheckLen], b[:pageCheckLen])
}

func pageCheck(query string, token []byte) [sha256.Size]byte {
	return sha256.Sum256(append([]byte(query+"\x00"), token...))
}
