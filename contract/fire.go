package contract

import (
	"strings"

	"github.com/longhaul-dev/longhaul"
)

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

// ScheduleIDPrefix starts the id of every schedule of runs the API makes
// (runs.NewScheduleID). The blobs a schedule stores (its messages' big
// images, which each of its runs reads) are stored under its id, and the
// retention job tells them from a run's by it.
const ScheduleIDPrefix = "sched-"

// IsScheduleID reports whether id names a schedule of runs rather than a
// run.
func IsScheduleID(id string) bool { return strings.HasPrefix(id, ScheduleIDPrefix) }
