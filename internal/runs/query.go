package runs

import (
	"strings"

	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/temporal"
)

// QuoteLiteral quotes s as a string literal of Temporal's visibility query
// language. Temporal reads the query with its sqlparser, whose tokenizer
// decodes backslash escapes (github.com/temporalio/sqlparser@v0.1.0
// token.go:755-811), so an escaped quote is one quote of the value. What
// the value becomes after that depends on the server, and LiteralOK tells
// which values come through whole.
func QuoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
}

// LiteralOK reports whether a value can be matched exactly in a visibility
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
func LiteralOK(s string) bool {
	return !strings.HasPrefix(s, "'") && !strings.HasSuffix(s, "'") &&
		!strings.ContainsFunc(s, func(r rune) bool { return r == '\\' || r == '"' || r < ' ' || r == 0x7f })
}

// agentQuery is the visibility query of the agent runs that meet every
// clause.
func agentQuery(clauses ...string) string {
	return strings.Join(append([]string{"WorkflowType = " + QuoteLiteral(contract.AgentWorkflowName)}, clauses...), " AND ")
}

// is is the clause that search attribute attr is v.
func is(attr temporal.SearchAttributeKeyKeyword, v string) string {
	return attr.GetName() + " = " + QuoteLiteral(v)
}

// RunningQuery is the visibility query of the runs principal has running,
// which its limit of runs counts.
func RunningQuery(principal string) string {
	return agentQuery(is(contract.SearchAttrUser, principal), "ExecutionStatus = 'Running'")
}

// WaitingQuery is the visibility query of a user's runs of a chat that
// wait for a person.
func WaitingQuery(chat, user string) string {
	return agentQuery(is(contract.SearchAttrChat, chat), is(contract.SearchAttrUser, user),
		is(contract.SearchAttrStatus, contract.StatusWaiting), "ExecutionStatus = 'Running'")
}

// AllWaitingQuery is the visibility query of every run of the namespace
// that waits for a person.
func AllWaitingQuery() string {
	return "ExecutionStatus = 'Running' AND " + contract.SearchAttrStatus.GetName() + " = " + QuoteLiteral(contract.StatusWaiting)
}

// ListQuery is the visibility query of a user's runs, optionally of one
// agent and in one status. The runs of a chain continued as new are listed
// once, by their open or last execution.
func ListQuery(user, agent, status string) string {
	q := []string{is(contract.SearchAttrUser, user), "ExecutionStatus != 'ContinuedAsNew'"}
	if agent != "" {
		q = append(q, is(contract.SearchAttrAgent, agent))
	}
	switch status {
	case "":
	case contract.StatusRunning, contract.StatusWaiting:
		// A terminated run never recorded its end: it is not running.
		q = append(q, is(contract.SearchAttrStatus, status), "ExecutionStatus = 'Running'")
	case contract.StatusFailed:
		q = append(q, "("+contract.SearchAttrStatus.GetName()+" = 'failed' OR ExecutionStatus IN ('Failed', 'Terminated', 'TimedOut'))")
	default:
		q = append(q, is(contract.SearchAttrStatus, status))
	}
	return agentQuery(q...)
}

// SearchAttrScheduledBy is the search attribute Temporal's scheduler sets
// on each workflow a schedule starts, to the schedule's id: the built-in
// TemporalScheduledById (go.temporal.io/server v1.32.1,
// common/searchattribute/sadefs/constants.go:45, a keyword (line 161);
// set by service/worker/scheduler/workflow.go:1594-1596,
// addSearchAttributes, on every start the scheduler makes).
const SearchAttrScheduledBy = "TemporalScheduledById"

// ScheduledQuery narrows a runs query (ListQuery's) to the runs schedule
// started.
func ScheduledQuery(query, schedule string) string {
	return query + " AND " + SearchAttrScheduledBy + " = " + QuoteLiteral(schedule)
}
