package api

import (
	"strings"

	"github.com/longhaul-dev/longhaul/api/web"
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

// The visibility query words the runs package owns, by the handlers' names.
var (
	quoteLiteral = runs.QuoteLiteral
	literalOK    = runs.LiteralOK
	runningQuery = runs.RunningQuery
)

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

// Temporal's page tokens go out sealed with the query they belong to:
// Temporal answers a damaged token with an internal error that clients
// retry until they give up, and a token of other filters with a wrong page;
// the seal turns both into a 400.
var (
	sealPageToken = web.SealPageToken
	openPageToken = web.OpenPageToken
)
