package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	// The zone database is embedded so the tool works on hosts and in
	// containers that ship no tzdata.
	_ "time/tzdata"
)

// CurrentTimeName is the name of the current_time tool.
const CurrentTimeName = "current_time"

var currentTimeSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "timezone": {
      "type": "string",
      "description": "IANA time zone name such as Europe/Berlin or America/New_York. Defaults to UTC."
    }
  },
  "additionalProperties": false
}`)

// CurrentTime is the current_time tool: it tells the model the current
// date, time, weekday and zone, which a model cannot know by itself. The
// zero value is ready to use.
type CurrentTime struct {
	// Now returns the current time; nil means time.Now. Tests set it.
	Now func() time.Time
}

// Name implements Tool.
func (*CurrentTime) Name() string { return CurrentTimeName }

// Description implements Tool.
func (*CurrentTime) Description() string {
	return "Get the current date and time (RFC 3339), the weekday and the time zone. " +
		"Use it whenever the answer depends on today's date or the current time."
}

// Parameters implements Tool.
func (*CurrentTime) Parameters() json.RawMessage { return currentTimeSchema }

// Target implements Targeter: it names the requested zone.
func (*CurrentTime) Target(args json.RawMessage) string {
	var a currentTimeArgs
	_ = json.Unmarshal(args, &a)
	if a.Timezone == "" {
		return "UTC"
	}
	return a.Timezone
}

type currentTimeArgs struct {
	Timezone string `json:"timezone"`
}

// Call implements Tool.
func (t *CurrentTime) Call(_ context.Context, call Call) (Result, error) {
	if err := ValidateArguments(currentTimeSchema, call.Arguments); err != nil {
		return Result{}, err
	}
	var a currentTimeArgs
	if len(strings.TrimSpace(string(call.Arguments))) > 0 {
		if err := json.Unmarshal(call.Arguments, &a); err != nil {
			return Result{}, fmt.Errorf("%w: %v", ErrInvalidArguments, err)
		}
	}
	loc, err := loadZone(a.Timezone)
	if err != nil {
		return Result{}, err
	}
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	tm := now().In(loc).Truncate(time.Second)
	abbr, _ := tm.Zone()
	content := fmt.Sprintf("time: %s\nweekday: %s\nzone: %s (%s, UTC%s)",
		tm.Format(time.RFC3339), tm.Weekday(), loc, abbr, tm.Format("-07:00"))
	return Result{Content: content, Target: loc.String()}, nil
}

// loadZone resolves an IANA zone name. The empty name is UTC; "Local" is
// refused because the server's zone means nothing to the user.
func loadZone(name string) (*time.Location, error) {
	name = strings.TrimSpace(name)
	if name == "" || strings.EqualFold(name, "UTC") || strings.EqualFold(name, "Z") {
		return time.UTC, nil
	}
	if name != "Local" {
		if loc, err := time.LoadLocation(name); err == nil {
			return loc, nil
		}
	}
	return nil, fmt.Errorf(`%w: argument "timezone": unknown time zone %q; use an IANA name such as Europe/Berlin or America/New_York`,
		ErrInvalidArguments, name)
}
