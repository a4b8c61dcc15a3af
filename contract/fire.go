package contract

import "github.com/longhaul-dev/longhaul"

// SearchAttrScheduledBy is the search attribute Temporal's scheduler sets
// on each run a schedule starts: the schedule's id
// (go.temporal.io/server v1.32.1, service/worker/scheduler/workflow.go:
// 1586-1599, addSearchAttributes).
const SearchAttrScheduledBy = "TemporalScheduledById"

// FireCheck is the request of the AdmitFire activity: a run schedule
// Schedule started, of agent Agent, for the owner User as the schedule
// stored them.
type FireCheck struct {
	Schedule string        `json:"schedule"`
	Run      string        `json:"run"`
	Agent    string        `json:"agent"`
	User     longhaul.User `json:"user"`
}

// FireAdmitted is AdmitFire's answer: the owner as they are now, whom the
// run acts for.
type FireAdmitted struct {
	User longhaul.User `json:"user"`
}
