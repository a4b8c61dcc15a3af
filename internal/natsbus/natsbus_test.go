package natsbus_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/natsbus"
)

func TestSubjects(t *testing.T) {
	s := natsbus.NewSubjects("", "default")
	for _, tc := range []struct{ got, want string }{
		{s.Run("run-1"), "longhaul.default.run.run-1.>"},
		{s.Call("run-1", "turn-2", 3), "longhaul.default.run.run-1.call.turn-2.3"},
		{s.Tool("run-1"), "longhaul.default.run.run-1.tool"},
		{s.Snapshot("run-1"), "longhaul.default.snap.run-1"},
		{s.Cancel("run-1"), "longhaul.default.cancel.run-1"},
		{natsbus.NewSubjects("acme.lh", "prod").Tool("r"), "acme.lh.prod.run.r.tool"},
	} {
		if tc.got != tc.want {
			t.Errorf("subject %q, want %q", tc.got, tc.want)
		}
	}
	// Ids with dots or wildcards become one token, the same every time, and
	// two different ids never share one.
	a, b := s.Call("chat-a.b-turn-1", "turn-1", 1), s.Call("chat-a_b-turn-1", "turn-1", 1)
	if a == b || a != s.Call("chat-a.b-turn-1", "turn-1", 1) || strings.Count(a, ".") != strings.Count(b, ".") {
		t.Errorf("subjects %q and %q", a, b)
	}
	if got := s.Run("a*b>c d"); strings.ContainsAny(strings.TrimSuffix(got, ">"), "* ") {
		t.Errorf("unsafe id made %q", got)
	}
}

// TestNilBus: without NATS a call keeps its text and nothing fails.
func TestNilBus(t *testing.T) {
	var b *natsbus.Bus
	cs := b.OpenCall("r", "turn-1", 1, 0)
	cs.Write("Hel")
	cs.Write("lo")
	cs.Close()
	if got := cs.Snapshot(); got.Text != "Hello" || got.Call != "turn-1" || got.Attempt != 1 {
		t.Errorf("snapshot %+v", got)
	}
	b.ToolStatus("r", 1, longhaul.ToolStatusData{ToolCallID: "c1", Message: "half way"})
	if _, err := b.Snapshot(context.Background(), "r"); !errors.Is(err, natsbus.ErrNoCall) {
		t.Errorf("Snapshot = %v, want ErrNoCall", err)
	}
	stop, err := b.Follow("r", nil)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	b.Cancelled("r")
	b.OnCancel("r", func() { t.Error("cancelled without NATS") })()
}

// TestCancel: a run's cancellation reaches the call of that run that
// listens for it, once however often it is said, and not a call of
// another run or one that stopped listening (unsubscribed before anything
// was published, so it cannot be delivered).
func TestCancel(t *testing.T) {
	srv, err := natsbus.StartServer("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	subj := natsbus.NewSubjects("", "test")
	api := natsbus.New(connect(t, srv), subj, nil)
	worker := natsbus.New(connect(t, srv), subj, nil)
	heard := make(chan string, 8)
	defer worker.OnCancel("run-1", func() { heard <- "run-1" })()
	defer worker.OnCancel("chat-a.b", func() { heard <- "chat-a.b" })()
	defer worker.OnCancel("run-2", func() { heard <- "run-2" })()
	worker.OnCancel("run-1", func() { heard <- "stopped listening" })()
	if err := worker.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	api.Cancelled("run-1")
	api.Cancelled("run-1")
	api.Cancelled("chat-a.b")
	got := []string{<-heard, <-heard}
	slices.Sort(got)
	if got[0] != "chat-a.b" || got[1] != "run-1" || len(heard) > 0 {
		t.Errorf("heard %q and %d more, want run-1 and chat-a.b once each", got, len(heard))
	}
}
