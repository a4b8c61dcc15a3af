package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCurrentTime(t *testing.T) {
	fixed := time.Date(2026, time.March, 14, 13, 26, 53, 987654321, time.UTC) // a Saturday
	tool := &CurrentTime{Now: func() time.Time { return fixed }}
	tests := []struct {
		name   string
		args   string
		want   []string
		target string
	}{
		{"default UTC", `{}`, []string{"time: 2026-03-14T13:26:53Z", "weekday: Saturday", "zone: UTC (UTC, UTC+00:00)"}, "UTC"},
		{"empty args", ``, []string{"time: 2026-03-14T13:26:53Z"}, "UTC"},
		{"lowercase utc", `{"timezone":"utc"}`, []string{"zone: UTC"}, "UTC"},
		{"new york DST", `{"timezone":"America/New_York"}`, []string{"time: 2026-03-14T09:26:53-04:00", "weekday: Saturday", "zone: America/New_York (EDT, UTC-04:00)"}, "America/New_York"},
		{"tokyo next day", `{"timezone":"Asia/Tokyo"}`, []string{"time: 2026-03-14T22:26:53+09:00", "zone: Asia/Tokyo (JST, UTC+09:00)"}, "Asia/Tokyo"},
		{"kathmandu", `{"timezone":"Asia/Kathmandu"}`, []string{"time: 2026-03-14T19:11:53+05:45"}, "Asia/Kathmandu"},
		{"date line", `{"timezone":"Pacific/Kiritimati"}`, []string{"time: 2026-03-15T03:26:53+14:00", "weekday: Sunday"}, "Pacific/Kiritimati"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tool.Call(context.Background(), Call{Arguments: json.RawMessage(tt.args)})
			if err != nil {
				t.Fatalf("Call(%s) error = %v", tt.args, err)
			}
			checkContains(t, "Content", res.Content, tt.want, nil)
			if res.Target != tt.target {
				t.Errorf("Target = %q, want %q", res.Target, tt.target)
			}
			if res.Truncated {
				t.Error("Truncated = true")
			}
		})
	}
}

func TestCurrentTimeBadArguments(t *testing.T) {
	tool := &CurrentTime{}
	tests := []badArgs{
		{`{"timezone":"Mars/Olympus_Mons"}`, `unknown time zone "Mars/Olympus_Mons"`},
		{`{"timezone":"Local"}`, `unknown time zone "Local"`},
		{`{"timezone":"../../etc/passwd"}`, "unknown time zone"},
		{`{"timezone":5}`, `argument "timezone": must be a string`},
		{`{"tz":"UTC"}`, `argument "tz": unknown argument`},
		{`{"timezone":`, "not valid JSON"},
	}
	checkBadArguments(t, tool, tests)
}

func TestCurrentTimeDefinition(t *testing.T) {
	tool := &CurrentTime{}
	checkDefinition(t, tool, CurrentTimeName)
	var _ Targeter = tool
	if got := tool.Target(json.RawMessage(`{"timezone":"Europe/Berlin"}`)); got != "Europe/Berlin" {
		t.Errorf("Target = %q", got)
	}
	if got := tool.Target(json.RawMessage(`{}`)); got != "UTC" {
		t.Errorf("Target({}) = %q, want UTC", got)
	}
	// The zero value uses the real clock.
	res, err := tool.Call(context.Background(), Call{Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(strings.TrimPrefix(res.Content, "time: "), "\n")
	got, err := time.Parse(time.RFC3339, line)
	if err != nil || time.Since(got) > time.Minute || time.Until(got) > time.Minute {
		t.Errorf("time line %q is not the current time (%v)", line, err)
	}
}

// badArgs is a call's arguments and what the refusal must say.
type badArgs struct {
	args string
	want string
}

// checkDefinition checks what every tool defines: its name, a description
// and a parameters schema that compiles.
func checkDefinition(t *testing.T, tool Tool, name string) {
	t.Helper()
	if tool.Name() != name || !ValidName(tool.Name()) {
		t.Errorf("Name() = %q", tool.Name())
	}
	if tool.Description() == "" {
		t.Error("Description() is empty")
	}
	if _, err := compileSchema(tool.Parameters()); err != nil {
		t.Errorf("Parameters() is not a valid schema: %v", err)
	}
}

// checkBadArguments calls tool with each case's arguments and expects an
// ErrInvalidArguments saying want.
func checkBadArguments(t *testing.T, tool Tool, tests []badArgs) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			_, err := tool.Call(context.Background(), Call{Arguments: json.RawMessage(tt.args)})
			if !errors.Is(err, ErrInvalidArguments) {
				t.Fatalf("Call(%s) error = %v, want ErrInvalidArguments", tt.args, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}
