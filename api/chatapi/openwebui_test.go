package chatapi_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/owuitest"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
)

// Open WebUI's requests, built as Open WebUI v0.11.0 builds them
// (owuitest), served from runsfake: which run each request of a chat
// starts or attaches to. What the model is asked, and Open WebUI's
// signed users, are checked on the whole stack in package api.

// owuiConn is a connection of Open WebUI as Alice, forwarding its users
// and chats, over the chat route of fake.
func owuiConn(t *testing.T, fake *runsfake.Service) *owuitest.Connection {
	return &owuitest.Connection{
		BaseURL: "http://longhaul/v1", Key: "sk-alice", ForwardUserInfo: true,
		Headers: owuitest.ForwardMessageID(), HTTP: webtest.Client(serve(t, fake)),
	}
}

var owuiUser = owuitest.User{ID: "0f6c-ann", Email: "ann@example.com", Name: "Ann Lee", Role: "user"}

// Which run a step's answer comes from.
const (
	newRun  = iota // a run no earlier step had
	sameRun        // the previous step's
	retake         // a new run whose id is the first step's, retaken
)

// owuiStep is one request of a chat and what it gets.
type owuiStep struct {
	name string
	// req is the request; nil sends the previous step's again (a network
	// retry).
	req func(*owuitest.Chat) *owuitest.Request
	// task marks a background task (a title, tags): its own run, not a
	// chat turn's.
	task bool
	// want is the answer; run, which run gives it.
	want string
	run  int
	// keep puts the answer into the chat's history.
	keep bool
	// twice sends the request twice at once: both get the one answer.
	twice bool
}

var (
	ask = func(q string) func(*owuitest.Chat) *owuitest.Request {
		return func(c *owuitest.Chat) *owuitest.Request { return c.Ask(q) }
	}
	regenerate = (*owuitest.Chat).Regenerate
)

// TestOpenWebUIChatRuns follows a chat through the turns Open WebUI
// sends. With the message id forwarded: a follow-up is a new run of the
// next turn; Regenerate a new run and a new answer; a network retry of
// the same request attaches to its run (no new run); the title and tags
// tasks get runs of their own, with the chat's id and an empty message
// id. Without it (Open WebUI's environment alone never sends it),
// Regenerate looks exactly like a retry, so a finished run is not handed
// back: each take is a new run of the turn, "<turn's run>-r…", and a
// task with the chat's headers never takes the turn's run; but two
// identical requests while the answer is written share its run.
func TestOpenWebUIChatRuns(t *testing.T) {
	for _, tc := range []struct {
		name       string
		messageIDs bool
		// hold is how long a run takes to answer.
		hold  time.Duration
		steps []owuiStep
	}{
		{name: "with message ids", messageIDs: true, steps: []owuiStep{
			{name: "first turn", req: ask("What time is it?"), want: "take 1", run: newRun, keep: true},
			{name: "follow-up", req: ask("And what day is tomorrow?"), want: "take 2", run: newRun, keep: true},
			{name: "regenerate", req: regenerate, want: "take 3", run: newRun},
			{name: "retry", want: "take 3", run: sameRun, keep: true},
			{name: "title", req: (*owuitest.Chat).Title, task: true, want: "task 4", run: newRun},
			{name: "tags", req: (*owuitest.Chat).Tags, task: true, want: "task 5", run: newRun},
		}},
		{name: "without message ids", steps: []owuiStep{
			{name: "first turn", req: ask("hi"), want: "take 1", run: newRun, keep: true},
			{name: "regenerate", req: regenerate, want: "take 2", run: retake},
			{name: "regenerate again", want: "take 3", run: retake},
			{name: "title", req: (*owuitest.Chat).Title, task: true, want: "task 4", run: newRun},
		}},
		{name: "a retry while the answer is written", hold: time.Second, steps: []owuiStep{
			{name: "two at once", req: ask("hi"), twice: true, want: "take 1", run: newRun},
			{name: "the same once answered", want: "take 2", run: retake},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := runsfake.New()
			var starts int
			fake.OnStart = func(r *runsfake.Run) {
				starts++
				what := "take"
				if r.Input.Background {
					what = "task"
				}
				answer := runsfake.Answered(fmt.Sprintf("%s %d", what, starts))
				if tc.hold == 0 {
					answer(r)
					return
				}
				go func() {
					time.Sleep(tc.hold)
					answer(r)
				}()
			}
			conn := owuiConn(t, fake)
			if !tc.messageIDs {
				conn.Headers = nil
			}
			runChatSteps(t, conn.NewChat(owuiUser, "assistant"), tc.messageIDs, tc.steps)
		})
	}
}

// runChatSteps sends steps in order in chat and checks each answer.
func runChatSteps(t *testing.T, chat *owuitest.Chat, messageIDs bool, steps []owuiStep) {
	t.Helper()
	seen := map[string]bool{}
	var req *owuitest.Request
	var first, prev owuitest.Answer
	for i, s := range steps {
		if s.req != nil {
			req = s.req(chat)
		}
		msgID, chatID := req.Header.Get(owuitest.HeaderMessageID), req.Header.Get(owuitest.HeaderChatID)
		if chatID != chat.ID || (msgID != "") != (messageIDs && !s.task) {
			t.Fatalf("%s: the double sent chat id %q, message id %q", s.name, chatID, msgID)
		}
		var a owuitest.Answer
		if s.twice {
			a = sendTwice(t, req)
		} else {
			a = owuitest.OK(t, req)
		}
		if i == 0 {
			first = a
		}
		var ok bool
		switch s.run {
		case newRun:
			ok = !seen[a.RunID]
		case sameRun:
			ok = a.RunID == prev.RunID
		case retake:
			ok = !seen[a.RunID] && strings.HasPrefix(a.RunID, first.RunID+"-r")
		}
		if !ok || a.Content != s.want || strings.HasPrefix(a.RunID, "chat-") == s.task {
			t.Fatalf("%s: run %q (first %q, previous %q, seen %v), content %q, want %q", s.name, a.RunID, first.RunID, prev.RunID, seen, a.Content, s.want)
		}
		seen[a.RunID], prev = true, a
		if s.keep {
			chat.Answer(a.Content)
		}
	}
}

// sendTwice sends req twice at once: both answers must be one.
func sendTwice(t *testing.T, req *owuitest.Request) owuitest.Answer {
	t.Helper()
	first, second := sendAsync(req), sendAsync(req)
	a, b := <-first, <-second
	if a.Error != "" || a.RunID == "" || a.RunID != b.RunID || a.Content != b.Content {
		t.Fatalf("two at once: %+v and %+v", a, b)
	}
	return a
}

// sendAsync sends req and delivers its answer (a failure as its Error).
func sendAsync(req *owuitest.Request) <-chan owuitest.Answer {
	answer := make(chan owuitest.Answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		a, err := req.Exchange(ctx)
		if err != nil {
			a.Error = err.Error()
		}
		answer <- a
	}()
	return answer
}

// TestOpenWebUINewChatTitle: for a new chat Open WebUI asks for the title
// at once, while the first answer is still being written. The task gets
// its own run at once; the answer goes on in the turn's run.
func TestOpenWebUINewChatTitle(t *testing.T) {
	fake := runsfake.New()
	release, started := make(chan struct{}), make(chan struct{})
	var once sync.Once
	let := func() { once.Do(func() { close(release) }) }
	t.Cleanup(let)
	fake.OnStart = func(r *runsfake.Run) {
		if r.Input.Background {
			runsfake.Answered(`{ "title": "👋 Greeting" }`)(r)
			return
		}
		close(started)
		go func() {
			<-release
			runsfake.Answered("Hello!")(r)
		}()
	}
	chat := owuiConn(t, fake).NewChat(owuiUser, "naked")
	turn, title := chat.Ask("hi"), chat.Title()
	done := sendAsync(turn)
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the turn's run never started")
	}
	tl := owuitest.OK(t, title)
	let()
	a := <-done
	if tl.Content != `{ "title": "👋 Greeting" }` || a.Error != "" || a.Content != "Hello!" || tl.RunID == a.RunID {
		t.Fatalf("title %q in run %q; answer %q (error %q) in run %q", tl.Content, tl.RunID, a.Content, a.Error, a.RunID)
	}
}
