package contract_test

import (
	"testing"

	"github.com/longhaul-dev/longhaul/contract"
)

func TestPinnedMatch(t *testing.T) {
	calls := []contract.PinnedCall{
		{Name: "web_fetch", Arguments: `{"url":"a"}`},
		{Name: "web_fetch", Arguments: `{"url":"b","max_chars":10}`},
		{Name: "current_time", Arguments: `{}`},
	}
	used := make([]bool, len(calls))
	for _, tc := range []struct {
		name, args string
		want       int
		how        string
	}{
		{"web_fetch", `{ "max_chars": 10.0, "url": "b" }`, 1, contract.MatchExact},
		{"web_fetch", `{"url":"c"}`, 0, contract.MatchOrder},
		{"web_fetch", `{"url":"a"}`, -1, contract.MatchNone},
		{"web_search", `{}`, -1, contract.MatchNone},
		{"current_time", `not json`, 2, contract.MatchOrder},
	} {
		i, how := contract.PinnedMatch(calls, used, tc.name, tc.args)
		if i != tc.want || how != tc.how {
			t.Errorf("%s %s: %d %s, want %d %s", tc.name, tc.args, i, how, tc.want, tc.how)
		}
		if i >= 0 {
			used[i] = true
		}
	}
}
