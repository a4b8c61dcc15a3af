package tools_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/storetest"
	"github.com/longhaul-dev/longhaul/internal/tools"
)

// backlogRegistry is the backlog tools on a fresh SQLite store capped at
// max active items, in a registry that checks arguments as the engine does.
func backlogRegistry(t *testing.T, max int) (*tools.Registry, store.Store) {
	t.Helper()
	st := storetest.SQLiteStore(t, store.WithMaxBacklogItems(max))
	reg, err := tools.NewRegistry(tools.BacklogTools(st)...)
	if err != nil {
		t.Fatal(err)
	}
	return reg, st
}

// call validates args as the activity does, then runs the tool.
func call(t *testing.T, reg *tools.Registry, name, user, key, args string) (string, error) {
	t.Helper()
	if err := reg.Validate(name, json.RawMessage(args)); err != nil {
		return "", err
	}
	tl, _ := reg.Get(name)
	res, err := tl.Call(t.Context(), tools.Call{ID: key, IdempotencyKey: "run-1/" + key, Arguments: json.RawMessage(args),
		User: user, Chat: "chat-1", Run: "run-1"})
	return res.Content, err
}

func TestBacklogToolsRetriedAddAddsOnce(t *testing.T) {
	reg, st := backlogRegistry(t, 10)
	first, err := call(t, reg, "backlog_add", "alice", "7", `{"title":"Renew passport"}`)
	if err != nil {
		t.Fatal(err)
	}
	// The activity's retry: the same call, the same idempotency key.
	again, err := call(t, reg, "backlog_add", "alice", "7", `{"title":"Renew passport"}`)
	if err != nil || again != first {
		t.Errorf("retried add = %q, %v; want %q", again, err, first)
	}
	if _, total, _ := st.BacklogItems(t.Context(), "alice", store.BacklogQuery{}); total != 1 {
		t.Errorf("%d items after a retried add, want 1", total)
	}
	// A retried close answers the same too.
	c1, err1 := call(t, reg, "backlog_close", "alice", "8", `{"id":1}`)
	c2, err2 := call(t, reg, "backlog_close", "alice", "8", `{"id":1}`)
	if err1 != nil || err2 != nil || c1 != c2 || c1 != "Closed #1 [done, normal] Renew passport." {
		t.Errorf("close twice = %q %v, %q %v", c1, err1, c2, err2)
	}
}

func TestBacklogToolsRefusals(t *testing.T) {
	reg, _ := backlogRegistry(t, 1)
	if _, err := call(t, reg, "backlog_add", "alice", "1", `{"title":"one"}`); err != nil {
		t.Fatal(err)
	}
	_, err := call(t, reg, "backlog_add", "alice", "2", `{"title":"two"}`)
	if !errors.Is(err, tools.ErrPermanent) || !strings.Contains(err.Error(), "backlog is full") {
		t.Errorf("add past the cap: %v, want a permanent refusal", err)
	}
	for _, c := range []struct{ name, user, args, want string }{
		{"backlog_close", "bob", `{"id":1}`, "no backlog item #1"},
		{"backlog_update", "alice", `{"id":1}`, "nothing to change"},
		{"backlog_update", "alice", `{"id":1,"priority":"urgent"}`, "invalid arguments"},
		{"backlog_add", "alice", `{"title":""}`, "invalid arguments"},
		{"backlog_add", "alice", `{"title":"` + strings.Repeat("x", store.MaxBacklogTitle+1) + `"}`, "invalid arguments"},
		{"backlog_add", "alice", `{"title":"x","user":"bob"}`, "invalid arguments"},
		{"backlog_list", "alice", `{"limit":51}`, "invalid arguments"},
		{"backlog_close", "alice", `{"id":"B1"}`, "invalid arguments"},
	} {
		_, err := call(t, reg, c.name, c.user, "9", c.args)
		if !errors.Is(err, tools.ErrInvalidArguments) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s as %s: %v, want invalid arguments with %q", c.name, c.args, c.user, err, c.want)
		}
	}
	tl, _ := reg.Get("backlog_list")
	if _, err := tl.Call(t.Context(), tools.Call{Arguments: json.RawMessage(`{}`)}); !errors.Is(err, tools.ErrPermanent) {
		t.Errorf("a call without a user: %v, want a permanent error", err)
	}
}

func TestBacklogListIsBounded(t *testing.T) {
	reg, _ := backlogRegistry(t, 100)
	long := strings.Repeat("word ", 400)
	for i := range 60 {
		if _, err := call(t, reg, "backlog_add", "alice", string(rune('A'+i)), `{"title":"task","notes":"`+long+`"}`); err != nil {
			t.Fatal(err)
		}
	}
	out, err := call(t, reg, "backlog_list", "alice", "x", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(out, "\n- "); lines != tools.BacklogListDefault {
		t.Errorf("default listing has %d items, want %d", lines, tools.BacklogListDefault)
	}
	if !strings.HasPrefix(out, "60 active items (showing 20;") {
		t.Errorf("listing does not say it is partial: %q", out[:80])
	}
	out, _ = call(t, reg, "backlog_list", "alice", "y", `{"limit":50}`)
	if len(out) > 50*300 {
		t.Errorf("a listing of 50 items is %d bytes; notes are not clipped", len(out))
	}
}
