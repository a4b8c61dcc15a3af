package api

import (
	"net/url"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
)

// Helpers of the runs API (see runs.go) over its wire types (internal/wire's
// runs.go): no fiber, no Temporal, so they read and test on their own.

// Limits of GET /v1/runs's pages.
const (
	defaultListLimit = 20
	maxListLimit     = 100
)

// currentSteps are the steps of the plan being carried out (or carried out
// last): the last revision that is active or done.
func currentSteps(plans []contract.PlanRevision) []longhaul.PlanStep {
	for i := len(plans) - 1; i >= 0; i-- {
		if p := plans[i]; p.Status == contract.PlanActive || p.Status == contract.PlanDone {
			return p.Steps
		}
	}
	return nil
}

// nonNil makes an absent list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func eventsURL(id string) string { return "/v1/runs/" + url.PathEscape(id) + "/events" }

var decodeStrict = web.DecodeStrict
