package runs_test

import (
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/runs"
)

// TestCheckSpec checks schedule specs as Temporal's scheduler reads them,
// against a least interval of a minute.
func TestCheckSpec(t *testing.T) {
	now := time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		spec runs.ScheduleSpec
		want string // a piece of the error; "" is none
	}{
		{"every hour", runs.ScheduleSpec{Every: time.Hour}, ""},
		{"every minute", runs.ScheduleSpec{Every: time.Minute}, ""},
		{"every 30s", runs.ScheduleSpec{Every: 30 * time.Second}, "every: must be at least 1m0s"},
		{"daily in Berlin", runs.ScheduleSpec{Cron: "0 7 * * *", TimeZone: "Europe/Berlin"}, ""},
		{"every minute of one hour", runs.ScheduleSpec{Cron: "* 3 * * *"}, ""},
		{"seconds field", runs.ScheduleSpec{Cron: "*/30 * * * * * *"}, "30s apart"},
		{"@every", runs.ScheduleSpec{Cron: "@every 10s"}, "10s apart"},
		{"@hourly", runs.ScheduleSpec{Cron: "@hourly"}, ""},
		{"both", runs.ScheduleSpec{Every: time.Hour, Cron: "0 7 * * *"}, "either every or cron"},
		{"neither", runs.ScheduleSpec{}, "every or cron: required"},
		{"hour 25", runs.ScheduleSpec{Cron: "0 25 * * *"}, "cron"},
		{"too many fields", runs.ScheduleSpec{Cron: "1 2 3 4 5 6 7 8"}, "5-7 fields"},
		{"bad zone", runs.ScheduleSpec{Every: time.Hour, TimeZone: "Mars/Olympus"}, "timezone"},
		{"never", runs.ScheduleSpec{Cron: "0 0 30 2 *"}, "never fires"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runs.CheckSpec(tc.spec, time.Minute, now)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("CheckSpec(%+v) = %v, want %q", tc.spec, err, tc.want)
			}
		})
	}
}

// TestNextFires computes a Berlin morning cron across the change to
// summer time (29 March 2026): 07:00 local is 06:00 UTC before, 05:00
// after.
func TestNextFires(t *testing.T) {
	now := time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)
	got := runs.NextFires(runs.ScheduleSpec{Cron: "0 7 * * *", TimeZone: "Europe/Berlin"}, now, 2)
	want := []time.Time{time.Date(2026, 3, 29, 5, 0, 0, 0, time.UTC), time.Date(2026, 3, 30, 5, 0, 0, 0, time.UTC)}
	if len(got) != 2 || !got[0].Equal(want[0]) || !got[1].Equal(want[1]) {
		t.Errorf("NextFires = %v, want %v", got, want)
	}
	if got := runs.NextFires(runs.ScheduleSpec{Every: time.Hour}, now, 1); len(got) != 1 || got[0].Sub(now) > time.Hour || !got[0].After(now) {
		t.Errorf("hourly from %v = %v", now, got)
	}
}
