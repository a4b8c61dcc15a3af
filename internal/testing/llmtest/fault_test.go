package llmtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	openai "github.com/sashabaranov/go-openai"
)

func TestStatusErrors(t *testing.T) {
	tests := []struct {
		name     string
		reply    llmtest.Reply
		wantCode int
		wantType string
		wantMsg  string
		wantErr  any // the envelope's code as go-openai decodes it (null becomes 0)
	}{
		{name: "429", reply: llmtest.Status(429, "slow down"), wantCode: 429, wantType: "rate_limit_error", wantMsg: "slow down", wantErr: "rate_limit_exceeded"},
		{name: "500", reply: llmtest.Status(500, "boom"), wantCode: 500, wantType: "server_error", wantMsg: "boom", wantErr: "server_error"},
		{name: "503 default message", reply: llmtest.Status(503, ""), wantCode: 503, wantType: "server_error", wantMsg: "Service Unavailable", wantErr: "server_error"},
		{name: "400", reply: llmtest.Status(400, "context too long"), wantCode: 400, wantType: "invalid_request_error", wantMsg: "context too long", wantErr: 0},
		{
			name:     "overridden type and code",
			reply:    llmtest.Status(400, "too long", llmtest.ErrorType("invalid_request_error"), llmtest.ErrorCode("context_length_exceeded")),
			wantCode: 400, wantType: "invalid_request_error", wantMsg: "too long", wantErr: "context_length_exceeded",
		},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				srv := llmtest.New(t)
				srv.Enqueue(tt.reply)
				c := newClient(srv)
				var err error
				if stream {
					_, err = c.CreateChatCompletionStream(context.Background(), streamRequest("x"))
				} else {
					_, err = c.CreateChatCompletion(context.Background(), userRequest("x"))
				}
				e := apiError(t, err)
				if e.HTTPStatusCode != tt.wantCode || e.Type != tt.wantType || e.Message != tt.wantMsg || e.Code != tt.wantErr {
					t.Errorf("APIError = {status %d, type %q, message %q, code %#v}, want {%d, %q, %q, %#v}",
						e.HTTPStatusCode, e.Type, e.Message, e.Code, tt.wantCode, tt.wantType, tt.wantMsg, tt.wantErr)
				}
			})
		}
	}
}

func TestFailTimesQueued(t *testing.T) {
	srv := llmtest.New(t)
	ok := llmtest.Text("finally")
	flaky := llmtest.FailTimes(2, 500, ok)
	srv.Enqueue(flaky, llmtest.Text("next entry"))
	c := newClient(srv)

	for attempt := 1; attempt <= 2; attempt++ {
		_, err := c.CreateChatCompletion(context.Background(), userRequest("x"))
		e := apiError(t, err)
		if e.HTTPStatusCode != 500 || !strings.Contains(e.Message, fmt.Sprintf("scripted failure %d of 2", attempt)) {
			t.Errorf("attempt %d: error = %v, want scripted 500", attempt, e)
		}
		if p := srv.Pending(); p != 2 {
			t.Errorf("attempt %d: Pending() = %d; a failing attempt must not consume the entry", attempt, p)
		}
	}
	for _, want := range []string{"finally", "next entry"} {
		resp, err := c.CreateChatCompletion(context.Background(), userRequest("x"))
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Choices[0].Message.Content; got != want {
			t.Errorf("reply = %q, want %q", got, want)
		}
	}
	if p := srv.Pending(); p != 0 {
		t.Errorf("Pending() = %d, want 0", p)
	}
	if flaky.Calls() != 3 || ok.Calls() != 1 {
		t.Errorf("Calls: FailTimes %d (want 3), inner %d (want 1)", flaky.Calls(), ok.Calls())
	}
}

func TestFailTimesAsRuleAndStream(t *testing.T) {
	srv := llmtest.New(t)
	srv.On(llmtest.LastUserContains("flaky"),
		llmtest.FailTimes(1, 429, llmtest.Text("recovered")).With(llmtest.Header("Retry-After", "3")))
	c := newClient(srv)

	_, err := c.CreateChatCompletionStream(context.Background(), streamRequest("flaky"))
	if e := apiError(t, err); e.HTTPStatusCode != 429 || e.Type != "rate_limit_error" {
		t.Errorf("first attempt: %v, want 429 rate_limit_error", e)
	}
	for range 2 {
		chunks, err := streamChat(t, c, streamRequest("flaky"))
		if err != nil {
			t.Fatal(err)
		}
		if got := content(chunks); got != "recovered" {
			t.Errorf("reply = %q, want recovered", got)
		}
	}
}

func TestFailTimesHeaderOnlyOnFailures(t *testing.T) {
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.FailTimes(1, 429, llmtest.Text("ok")).With(llmtest.Header("Retry-After", "3")))

	for i, want := range []string{"3", ""} {
		resp, err := rawPost(t, srv.URL()+"/chat/completions", "", `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Retry-After"); got != want {
			t.Errorf("response %d Retry-After = %q, want %q", i, got, want)
		}
	}
}

func TestCutAfter(t *testing.T) {
	tests := []struct {
		name      string
		reply     llmtest.Reply
		wantText  string
		wantTools int
	}{
		{name: "text", reply: llmtest.Text("one two three four five", llmtest.CutAfter(2)), wantText: "one two"},
		{name: "zero chunks", reply: llmtest.Text("one two", llmtest.CutAfter(0))},
		{name: "past the end", reply: llmtest.Text("one two", llmtest.CutAfter(10)), wantText: "one two"},
		{
			name:      "tool call",
			reply:     llmtest.ToolCalls(llmtest.ToolCall{Name: "f", Arguments: `{"a":"bcdefghijklmnop"}`}).With(llmtest.CutAfter(2)),
			wantTools: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Enqueue(tt.reply)
			chunks, err := streamChat(t, newClient(srv), streamRequest("x"))
			if err == nil {
				t.Fatal("stream ended cleanly; want an error because [DONE] never came")
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("error = %v, want unexpected EOF", err)
			}
			if got := content(chunks); got != tt.wantText {
				t.Errorf("partial content = %q, want %q", got, tt.wantText)
			}
			if fr := finishReason(chunks); fr != "" {
				t.Errorf("finish_reason = %q, want none", fr)
			}
			calls, _ := accumulateToolCalls(t, chunks)
			if len(calls) != tt.wantTools {
				t.Errorf("tool calls started = %d, want %d", len(calls), tt.wantTools)
			}
		})
	}

	t.Run("non-stream", func(t *testing.T) {
		srv := llmtest.New(t)
		srv.Enqueue(llmtest.Text("one two three", llmtest.CutAfter(1)))
		_, err := newClient(srv).CreateChatCompletion(context.Background(), userRequest("x"))
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("error = %v, want unexpected EOF", err)
		}
	})
}

func TestMalformedChunk(t *testing.T) {
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.Text("one two three", llmtest.MalformedChunk()))
	chunks, err := streamChat(t, newClient(srv), streamRequest("x"))
	var syntaxErr *json.SyntaxError
	if !errors.As(err, &syntaxErr) {
		t.Fatalf("error = %v (%T), want a *json.SyntaxError from decoding the chunk", err, err)
	}
	if got := content(chunks); got != "one" {
		t.Errorf("content before the broken frame = %q, want %q", got, "one")
	}

	t.Run("non-stream", func(t *testing.T) {
		srv := llmtest.New(t)
		srv.Enqueue(llmtest.Text("one two three", llmtest.MalformedChunk()))
		_, err := newClient(srv).CreateChatCompletion(context.Background(), userRequest("x"))
		if err == nil {
			t.Fatal("got a response, want a decoding error")
		}
		var apiErr *openai.APIError
		if errors.As(err, &apiErr) {
			t.Fatalf("error = %v, want a decoding error, not an API error", err)
		}
	})
}

func TestDrop(t *testing.T) {
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.Drop(), llmtest.Text("after"))
	c := newClient(srv)
	if _, err := c.CreateChatCompletion(context.Background(), userRequest("x")); !errors.Is(err, io.EOF) {
		t.Errorf("error = %v, want EOF", err)
	}
	resp, err := c.CreateChatCompletion(context.Background(), userRequest("x"))
	if err != nil || resp.Choices[0].Message.Content != "after" {
		t.Errorf("after a drop: %v, %v", resp, err)
	}
}

func TestDelayClientTimeout(t *testing.T) {
	srv := llmtest.New(t)
	slow := llmtest.Delay(time.Hour, llmtest.Text("too late"))
	srv.Enqueue(slow)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := newClient(srv).CreateChatCompletion(ctx, userRequest("x"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want context.DeadlineExceeded", err)
	}
	if err := srv.WaitIdle(waitCtx(t)); err != nil {
		t.Fatalf("handler still running after the client gave up: %v", err)
	}
	if slow.Calls() != 1 {
		t.Errorf("Calls() = %d, want 1", slow.Calls())
	}
}

// TestCancellationStopsHandler proves that every kind of wait in the server
// ends when the client goes away: WaitIdle returns only once the handler
// goroutine has returned.
func TestCancellationStopsHandler(t *testing.T) {
	tests := []struct {
		name   string
		reply  llmtest.Reply
		stream bool
		// recv is how many chunks to receive before cancelling; with 0 the
		// test cancels as soon as the server has recorded the request.
		recv int
	}{
		{name: "chunk delay", reply: llmtest.Text("one two three", llmtest.ChunkDelay(time.Hour)), stream: true, recv: 1},
		{name: "chunk delay mid-text", reply: llmtest.Text("one two three", llmtest.ChunkDelay(time.Hour), llmtest.ChunkSize(1)), stream: true, recv: 1},
		{name: "first byte delay", reply: llmtest.Text("one", llmtest.FirstByteDelay(time.Hour)), stream: true},
		{name: "delay", reply: llmtest.Delay(time.Hour, llmtest.Text("one")), stream: false},
		{name: "hang stream", reply: llmtest.Hang(), stream: true},
		{name: "hang", reply: llmtest.Hang(), stream: false},
		{name: "stall after", reply: llmtest.Text("one two three", llmtest.StallAfter(1)), stream: true, recv: 2},
		{name: "stall non-stream", reply: llmtest.Text("one two three", llmtest.StallAfter(1)), stream: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Enqueue(tt.reply)
			c := newClient(srv)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()

			errc := make(chan error, 1)
			if tt.recv > 0 {
				s, err := c.CreateChatCompletionStream(ctx, streamRequest("x"))
				if err != nil {
					t.Fatal(err)
				}
				for range tt.recv {
					if _, err := s.Recv(); err != nil {
						t.Fatalf("Recv: %v", err)
					}
				}
				go func() {
					_, err := readStream(s)
					errc <- err
				}()
			} else {
				go func() {
					var err error
					if tt.stream {
						var s *openai.ChatCompletionStream
						if s, err = c.CreateChatCompletionStream(ctx, streamRequest("x")); err == nil {
							_, err = readStream(s)
						}
					} else {
						_, err = c.CreateChatCompletion(ctx, userRequest("x"))
					}
					errc <- err
				}()
				if err := srv.WaitRequests(waitCtx(t), 1); err != nil {
					t.Fatal(err)
				}
			}
			cancel()

			select {
			case err := <-errc:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("client error = %v, want context.Canceled", err)
				}
			case <-time.After(testTimeout):
				t.Fatal("client did not return after cancellation")
			}
			if err := srv.WaitIdle(waitCtx(t)); err != nil {
				t.Fatalf("handler did not stop after the client went away: %v", err)
			}
		})
	}
}

func TestCloseDoesNotHangOnStuckRequests(t *testing.T) {
	srv, err := llmtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	srv.Enqueue(llmtest.Hang(), llmtest.Text("a b c", llmtest.StallAfter(1)))
	c := newClient(srv)

	errc := make(chan error, 2)
	go func() {
		_, err := c.CreateChatCompletion(context.Background(), userRequest("x"))
		errc <- err
	}()
	go func() {
		_, err := streamChat(t, c, streamRequest("x"))
		errc <- err
	}()
	if err := srv.WaitRequests(waitCtx(t), 2); err != nil {
		t.Fatal(err)
	}

	closed := make(chan struct{})
	go func() {
		srv.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(testTimeout):
		t.Fatal("Close hung on requests in flight")
	}
	for range 2 {
		if err := <-errc; err == nil {
			t.Error("a request in flight at Close succeeded; want an error")
		}
	}
	srv.Close() // idempotent
	if err := srv.WaitRequests(context.Background(), 3); !errors.Is(err, llmtest.ErrClosed) {
		t.Errorf("WaitRequests after Close = %v, want ErrClosed", err)
	}
}
