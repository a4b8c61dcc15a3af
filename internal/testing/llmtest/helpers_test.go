package llmtest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	openai "github.com/sashabaranov/go-openai"
)

// testTimeout bounds waits that should end almost immediately; reaching it
// means the behaviour under test is broken, not that the machine is slow.
const testTimeout = 10 * time.Second

// newClient returns a real go-openai client for srv, configured the way
// production code configures one.
func newClient(srv *llmtest.Server) *openai.Client {
	cfg := openai.DefaultConfig("sk-test")
	cfg.BaseURL = srv.URL()
	return openai.NewClientWithConfig(cfg)
}

// userRequest returns a chat request with a system prompt and one user
// message.
func userRequest(user string) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{
		Model: "test-model",
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: "You are terse."},
			{Role: openai.ChatMessageRoleUser, Content: user},
		},
	}
}

// streamRequest is userRequest with streaming and include_usage turned on.
func streamRequest(user string) openai.ChatCompletionRequest {
	req := userRequest(user)
	req.Stream = true
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	return req
}

// readStream reads chunks until the stream ends. It returns a nil error only
// when the stream ended with [DONE].
func readStream(s *openai.ChatCompletionStream) ([]openai.ChatCompletionStreamResponse, error) {
	defer s.Close()
	var out []openai.ChatCompletionStreamResponse
	for {
		r, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
}

// streamChat opens a stream and reads it to the end.
func streamChat(t *testing.T, c *openai.Client, req openai.ChatCompletionRequest) ([]openai.ChatCompletionStreamResponse, error) {
	t.Helper()
	s, err := c.CreateChatCompletionStream(context.Background(), req)
	if err != nil {
		return nil, err
	}
	return readStream(s)
}

// content concatenates the content deltas of chunks.
func content(chunks []openai.ChatCompletionStreamResponse) string {
	var s string
	for _, c := range chunks {
		for _, ch := range c.Choices {
			s += ch.Delta.Content
		}
	}
	return s
}

// finishReason returns the last non-empty finish_reason in chunks.
func finishReason(chunks []openai.ChatCompletionStreamResponse) openai.FinishReason {
	var r openai.FinishReason
	for _, c := range chunks {
		for _, ch := range c.Choices {
			if ch.FinishReason != "" {
				r = ch.FinishReason
			}
		}
	}
	return r
}

// waitCtx returns a context bounded by testTimeout.
func waitCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// apiError asserts that err is an *openai.APIError and returns it.
func apiError(t *testing.T, err error) *openai.APIError {
	t.Helper()
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("error = %v (%T), want *openai.APIError", err, err)
	}
	return apiErr
}

// diff returns "" when want and got are deeply equal and a description of
// both otherwise.
func diff(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return fmt.Sprintf("want: %#v\n got: %#v", want, got)
}
