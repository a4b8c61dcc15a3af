package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/longhaul-dev/longhaul/internal/textcut"
	"github.com/longhaul-dev/longhaul/internal/tools"
)

// Names of the memory tools.
const (
	SearchToolName = "memory_search"
	SaveToolName   = "memory_save"
	ForgetToolName = "memory_forget"
)

// ToolNames are the memory tools, as the built-in memory skill lists them.
var ToolNames = []string{SearchToolName, SaveToolName, ForgetToolName}

// Tools returns memory_search, memory_save and memory_forget on svc. Each
// acts for the user the engine names in the call (tools.Call.User, the
// run's user), never for one the model names: their arguments have no
// user.
func Tools(svc *Service) []tools.Tool {
	return []tools.Tool{&searchTool{svc}, &saveTool{svc}, &forgetTool{svc}}
}

// parseCall returns the call's user and decodes its arguments into v. A
// call without a user is refused (a bug, not the model's doing).
func parseCall(call tools.Call, v any) (string, error) {
	if call.User == "" {
		return "", fmt.Errorf("memory tools need the run's user: %w", tools.ErrPermanent)
	}
	if err := json.Unmarshal(call.Arguments, v); err != nil {
		return "", fmt.Errorf("%w: %v", tools.ErrInvalidArguments, err)
	}
	return call.User, nil
}

// The tools' arguments.
type (
	searchArgs struct {
		Query string `json:"query"`
	}
	saveArgs struct {
		Text string `json:"text"`
	}
	forgetArgs struct {
		ID string `json:"id"`
	}
)

type searchTool struct{ svc *Service }

func (*searchTool) Name() string { return SearchToolName }
func (*searchTool) Description() string {
	return "Search your long-term memory of this user (facts saved in earlier conversations) by meaning. " +
		"Returns the closest memories with their ids and similarity scores (1 = same meaning)."
}
func (*searchTool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","minLength":1,"description":"what to look for, in a few words"}},"required":["query"],"additionalProperties":false}`)
}
func (t *searchTool) Target(args json.RawMessage) string {
	var a searchArgs
	_ = json.Unmarshal(args, &a)
	return clipTarget(a.Query)
}

func (t *searchTool) Call(ctx context.Context, call tools.Call) (tools.Result, error) {
	var a searchArgs
	user, err := parseCall(call, &a)
	if err != nil {
		return tools.Result{}, err
	}
	found, err := t.svc.Search(ctx, user, a.Query, 0)
	if err != nil {
		return tools.Result{}, toolError(err)
	}
	if len(found) == 0 {
		return tools.Result{Content: "No memories about this user yet.", Target: clipTarget(a.Query)}, nil
	}
	var b strings.Builder
	for _, m := range found {
		fmt.Fprintf(&b, "- [%s] %s (score %.2f, saved %s)\n", m.ID, m.Text, m.Score, m.UpdatedAt.Format("2006-01-02"))
	}
	return tools.Result{Content: strings.TrimSpace(b.String()), Target: clipTarget(a.Query)}, nil
}

type saveTool struct{ svc *Service }

func (*saveTool) Name() string { return SaveToolName }
func (*saveTool) Description() string {
	return "Save one lasting fact about the user (a preference, a detail of their life or work) to long-term memory, " +
		"as one short sentence in the third person. A restatement of a fact already saved updates it."
}
func (*saveTool) Parameters() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"text":{"type":"string","minLength":1,"maxLength":%d,"description":"the fact, e.g. \"The user is vegetarian.\""}},"required":["text"],"additionalProperties":false}`, MaxTextBytes))
}
func (t *saveTool) Target(args json.RawMessage) string {
	var a saveArgs
	_ = json.Unmarshal(args, &a)
	return clipTarget(a.Text)
}

func (t *saveTool) Call(ctx context.Context, call tools.Call) (tools.Result, error) {
	var a saveArgs
	user, err := parseCall(call, &a)
	if err != nil {
		return tools.Result{}, err
	}
	saved, err := t.svc.Remember(ctx, user, call.Chat, call.Run, []string{a.Text})
	if err != nil {
		return tools.Result{}, toolError(err)
	}
	if len(saved) == 0 {
		return tools.Result{}, fmt.Errorf("%w: text is empty", tools.ErrInvalidArguments)
	}
	verb := "Saved"
	if saved[0].Updated {
		verb = "Updated"
	}
	return tools.Result{Content: fmt.Sprintf("%s memory %s: %s", verb, saved[0].ID, saved[0].Text), Target: clipTarget(a.Text)}, nil
}

type forgetTool struct{ svc *Service }

func (*forgetTool) Name() string { return ForgetToolName }
func (*forgetTool) Description() string {
	return "Delete one memory of this user by its id (from memory_search), when the user asks you to forget it or it is wrong."
}
func (*forgetTool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","minLength":1,"description":"the memory's id, mem_…"}},"required":["id"],"additionalProperties":false}`)
}
func (*forgetTool) Target(args json.RawMessage) string {
	var a forgetArgs
	_ = json.Unmarshal(args, &a)
	return clipTarget(a.ID)
}

func (t *forgetTool) Call(ctx context.Context, call tools.Call) (tools.Result, error) {
	var a forgetArgs
	user, err := parseCall(call, &a)
	if err != nil {
		return tools.Result{}, err
	}
	err = t.svc.Store.Delete(ctx, user, strings.TrimSpace(a.ID))
	if errors.Is(err, ErrNotFound) {
		// Another user's id is not found either: the model learns nothing.
		return tools.Result{}, fmt.Errorf("%w: no memory %q", tools.ErrInvalidArguments, a.ID)
	}
	if err != nil {
		return tools.Result{}, err
	}
	return tools.Result{Content: "Forgot memory " + a.ID + ".", Target: clipTarget(a.ID)}, nil
}

// toolError marks the store's refusals as the model's to fix.
func toolError(err error) error {
	if IsInvalid(err) {
		return fmt.Errorf("%w: %v", tools.ErrInvalidArguments, err)
	}
	return err
}

func clipTarget(s string) string {
	return textcut.Ellipsis(strings.Join(strings.Fields(s), " "), 41)
}
