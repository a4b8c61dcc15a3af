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

// Filter is which runs a listing or a count finds, in this package's
// words: a handler, the gate and the fake speak it; only the Temporal
// implementation turns it into a visibility query (Query).
type Filter struct {
	// Owner is whose runs; AllOwners instead counts every principal's
	// (the metrics' count of waiting runs).
	Owner     string
	AllOwners bool
	Agent     string
	// Status is a run's status as the API says it (contract.Status*);
	// empty is any.
	Status string
	// Chat, Schedule and ForkedFrom narrow to a chat's runs, the runs a
	// schedule started and the forks of a run.
	Chat, Schedule, ForkedFrom string
	// Running keeps only the runs that are still going.
	Running bool
}

// Query is f as a visibility query of Temporal's SQL visibility. The runs
// of a chain continued as new are found once, by their open or last
// execution.
func (f Filter) Query() string {
	var q []string
	if !f.AllOwners {
		q = append(q, is(contract.SearchAttrUser, f.Owner))
	}
	if f.Chat != "" {
		q = append(q, is(contract.SearchAttrChat, f.Chat))
	}
	if f.ForkedFrom != "" {
		q = append(q, is(contract.SearchAttrForkedFrom, f.ForkedFrom))
	}
	if f.Agent != "" {
		q = append(q, is(contract.SearchAttrAgent, f.Agent))
	}
	open := f.Running
	switch f.Status {
	case "":
	case contract.StatusRunning, contract.StatusWaiting:
		// A terminated run never recorded its end: it is not running.
		q = append(q, is(contract.SearchAttrStatus, f.Status))
		open = true
	case contract.StatusFailed:
		q = append(q, "("+contract.SearchAttrStatus.GetName()+" = 'failed' OR ExecutionStatus IN ('Failed', 'Terminated', 'TimedOut'))")
	default:
		q = append(q, is(contract.SearchAttrStatus, f.Status))
	}
	if open {
		q = append(q, "ExecutionStatus = 'Running'")
	} else {
		q = append(q, "ExecutionStatus != 'ContinuedAsNew'")
	}
	if f.Schedule != "" {
		q = append(q, SearchAttrScheduledBy+" = "+QuoteLiteral(f.Schedule))
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
