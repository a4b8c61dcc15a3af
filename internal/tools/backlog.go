package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/textcut"
)

// Names of the backlog tools (the built-in skill backlog_manager).
const (
	BacklogAddName    = "backlog_add"
	BacklogListName   = "backlog_list"
	BacklogUpdateName = "backlog_update"
	BacklogCloseName  = "backlog_close"
)

// BacklogToolNames are the backlog tools, as the backlog_manager skill
// lists them.
var BacklogToolNames = []string{BacklogAddName, BacklogListName, BacklogUpdateName, BacklogCloseName}

// Bounds of backlog_list.
const (
	// BacklogListDefault is how many items backlog_list shows when the
	// model does not say, and BacklogListMax the most it may ask for.
	BacklogListDefault = 20
	BacklogListMax     = 50
	// backlogListNotes is how much of an item's notes a listing shows.
	backlogListNotes = 160
)

// BacklogTools returns backlog_add, backlog_list, backlog_update and
// backlog_close on st. Like the memory tools, each acts for the user the
// engine names in the call (Call.User, the run's user), never for one the
// model names: their arguments have no user, and an item of another user is
// not found. backlog_add is keyed on the call's IdempotencyKey, so a retried
// activity adds the item once.
func BacklogTools(st store.Backlog) []Tool {
	return []Tool{&backlogAdd{st}, &backlogList{st}, &backlogUpdate{st}, &backlogClose{st}}
}

var (
	backlogPriority = `{"type":"string","enum":["high","normal","low"]}`
	backlogID       = `"id":{"type":"integer","minimum":1,"description":"the item's number, as backlog_list shows it (#3 is 3)"}`
)

type (
	backlogAddArgs struct {
		Title    string `json:"title"`
		Notes    string `json:"notes"`
		Priority string `json:"priority"`
	}
	backlogListArgs struct {
		Status string `json:"status"`
		Text   string `json:"text"`
		Limit  int    `json:"limit"`
	}
	backlogUpdateArgs struct {
		ID       int64   `json:"id"`
		Title    *string `json:"title"`
		Notes    *string `json:"notes"`
		Priority *string `json:"priority"`
		Status   *string `json:"status"`
	}
	backlogCloseArgs struct {
		ID         int64  `json:"id"`
		Resolution string `json:"resolution"`
	}
)

// backlogCall returns the call's user and decodes its arguments into v. A
// call without a user is refused (a bug, not the model's doing).
func backlogCall(call Call, v any) (string, error) {
	if call.User == "" {
		return "", fmt.Errorf("backlog tools need the run's user: %w", ErrPermanent)
	}
	if err := json.Unmarshal(call.Arguments, v); err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalidArguments, err)
	}
	return call.User, nil
}

// backlogError tells the model what it can fix (bad fields, an unknown id)
// and what it cannot change by retrying (a full backlog).
func backlogError(err error, id int64) error {
	switch {
	case errors.Is(err, store.ErrNoBacklogItem):
		// Another user's id reads the same: the model learns nothing.
		return fmt.Errorf("%w: there is no backlog item #%d; use backlog_list to find the item's number", ErrInvalidArguments, id)
	case errors.Is(err, store.ErrInvalidBacklogItem):
		return fmt.Errorf("%w: %v", ErrInvalidArguments, err)
	case errors.Is(err, store.ErrBacklogFull):
		return fmt.Errorf("%v: %w", err, ErrPermanent)
	}
	return err
}

// describeItem is one item as the tools show it: "#3 [open, high] Title".
func describeItem(it store.BacklogItem) string {
	return fmt.Sprintf("#%d [%s, %s] %s", it.ID, it.Status, it.Priority, it.Title)
}

func backlogTarget(s string) string {
	return textcut.Ellipsis(strings.Join(strings.Fields(s), " "), 41)
}

type backlogAdd struct{ st store.Backlog }

func (*backlogAdd) Name() string { return BacklogAddName }
func (*backlogAdd) Description() string {
	return "Add an open item to the user's backlog (their list of things to do or follow up, kept across conversations). " +
		"Returns the item's number."
}
func (*backlogAdd) Parameters() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
		`"title":{"type":"string","minLength":1,"maxLength":%d,"description":"what is to be done, in a short line"},`+
		`"notes":{"type":"string","maxLength":%d,"description":"optional details: context, links, deadlines"},`+
		`"priority":%s},"required":["title"],"additionalProperties":false}`,
		store.MaxBacklogTitle, store.MaxBacklogNotes, backlogPriority))
}
func (*backlogAdd) Target(args json.RawMessage) string {
	var a backlogAddArgs
	_ = json.Unmarshal(args, &a)
	return backlogTarget(a.Title)
}

func (t *backlogAdd) Call(ctx context.Context, call Call) (Result, error) {
	var a backlogAddArgs
	user, err := backlogCall(call, &a)
	if err != nil {
		return Result{}, err
	}
	it, err := t.st.AddBacklogItem(ctx, store.BacklogItem{
		User: user, Title: a.Title, Notes: a.Notes, Priority: a.Priority, Chat: call.Chat, Run: call.Run,
	}, call.IdempotencyKey)
	if err != nil {
		return Result{}, backlogError(err, 0)
	}
	return Result{Content: "Added " + describeItem(it) + ".", Target: backlogTarget(it.Title)}, nil
}

type backlogList struct{ st store.Backlog }

func (*backlogList) Name() string { return BacklogListName }
func (*backlogList) Description() string {
	return "List the user's backlog items with their numbers, status and priority: by default the active ones (open or in progress), " +
		"highest priority first. Filter by status or by text in the title or notes."
}
func (*backlogList) Parameters() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
		`"status":{"type":"string","enum":["active","open","in_progress","done","wont_do","closed","all"],"description":"which items: active (the default) is open and in_progress; closed is done and wont_do"},`+
		`"text":{"type":"string","maxLength":%d,"description":"only items whose title or notes contain this, ignoring case"},`+
		`"limit":{"type":"integer","minimum":1,"maximum":%d,"description":"most items to show (default %d)"}},"additionalProperties":false}`,
		store.MaxBacklogTitle, BacklogListMax, BacklogListDefault))
}
func (*backlogList) Target(args json.RawMessage) string {
	var a backlogListArgs
	_ = json.Unmarshal(args, &a)
	return backlogTarget(strings.TrimSpace(a.Status + " " + a.Text))
}

func (t *backlogList) Call(ctx context.Context, call Call) (Result, error) {
	var a backlogListArgs
	user, err := backlogCall(call, &a)
	if err != nil {
		return Result{}, err
	}
	if a.Limit <= 0 {
		a.Limit = BacklogListDefault
	}
	a.Limit = min(a.Limit, BacklogListMax)
	if a.Status == "" {
		a.Status = store.BacklogActive
	}
	items, total, err := t.st.BacklogItems(ctx, user, store.BacklogQuery{Status: a.Status, Text: a.Text, Limit: a.Limit})
	if err != nil {
		return Result{}, backlogError(err, 0)
	}
	target := backlogTarget(strings.TrimSpace(a.Status + " " + a.Text))
	what := a.Status + " items"
	switch a.Status {
	case store.BacklogAll:
		what = "items"
	case store.BacklogInProgress:
		what = "items in progress"
	}
	if a.Text != "" {
		what += fmt.Sprintf(" matching %q", a.Text)
	}
	if total == 0 {
		return Result{Content: "The backlog has no " + what + ".", Target: target}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", total, what)
	if len(items) < total {
		fmt.Fprintf(&b, " (showing %d; narrow with status or text, or raise limit)", len(items))
	}
	b.WriteString(":\n")
	for _, it := range items {
		b.WriteString("- " + describeItem(it))
		if it.Notes != "" {
			b.WriteString(" — " + textcut.Ellipsis(strings.Join(strings.Fields(it.Notes), " "), backlogListNotes))
		}
		b.WriteString("\n")
	}
	return Result{Content: strings.TrimSpace(b.String()), Target: target}, nil
}

type backlogUpdate struct{ st store.Backlog }

func (*backlogUpdate) Name() string { return BacklogUpdateName }
func (*backlogUpdate) Description() string {
	return "Change one of the user's backlog items by its number: its title, notes, priority or status " +
		"(open, in_progress, done, wont_do; done or wont_do closes it, open reopens it). Fields left out stay as they are."
}
func (*backlogUpdate) Parameters() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+backlogID+`,`+
		`"title":{"type":"string","minLength":1,"maxLength":%d},`+
		`"notes":{"type":"string","maxLength":%d,"description":"replaces the notes; an empty string clears them"},`+
		`"priority":%s,`+
		`"status":{"type":"string","enum":["open","in_progress","done","wont_do"]}},"required":["id"],"additionalProperties":false}`,
		store.MaxBacklogTitle, store.MaxBacklogNotes, backlogPriority))
}
func (*backlogUpdate) Target(args json.RawMessage) string {
	var a backlogUpdateArgs
	_ = json.Unmarshal(args, &a)
	return fmt.Sprintf("#%d", a.ID)
}

func (t *backlogUpdate) Call(ctx context.Context, call Call) (Result, error) {
	var a backlogUpdateArgs
	user, err := backlogCall(call, &a)
	if err != nil {
		return Result{}, err
	}
	if a.Title == nil && a.Notes == nil && a.Priority == nil && a.Status == nil {
		return Result{}, fmt.Errorf("%w: nothing to change: give a title, notes, priority or status", ErrInvalidArguments)
	}
	it, err := t.st.UpdateBacklogItem(ctx, user, a.ID, store.BacklogPatch{Title: a.Title, Notes: a.Notes, Priority: a.Priority, Status: a.Status})
	if err != nil {
		return Result{}, backlogError(err, a.ID)
	}
	return Result{Content: "Updated " + describeItem(it) + ".", Target: fmt.Sprintf("#%d", it.ID)}, nil
}

type backlogClose struct{ st store.Backlog }

func (*backlogClose) Name() string { return BacklogCloseName }
func (*backlogClose) Description() string {
	return "Close one of the user's backlog items by its number, when it is done (the default) or will not be done."
}
func (*backlogClose) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{` + backlogID + `,` +
		`"resolution":{"type":"string","enum":["done","wont_do"],"description":"done (the default) or wont_do"}},"required":["id"],"additionalProperties":false}`)
}
func (*backlogClose) Target(args json.RawMessage) string {
	var a backlogCloseArgs
	_ = json.Unmarshal(args, &a)
	return fmt.Sprintf("#%d", a.ID)
}

func (t *backlogClose) Call(ctx context.Context, call Call) (Result, error) {
	var a backlogCloseArgs
	user, err := backlogCall(call, &a)
	if err != nil {
		return Result{}, err
	}
	status := store.BacklogDone
	if a.Resolution == store.BacklogWontDo {
		status = store.BacklogWontDo
	}
	// Closing a closed item again (a retried call) answers the same.
	it, err := t.st.UpdateBacklogItem(ctx, user, a.ID, store.BacklogPatch{Status: &status})
	if err != nil {
		return Result{}, backlogError(err, a.ID)
	}
	return Result{Content: "Closed " + describeItem(it) + ".", Target: fmt.Sprintf("#%d", it.ID)}, nil
}
