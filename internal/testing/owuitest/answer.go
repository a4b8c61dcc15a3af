package owuitest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
)

// Answer is what a connection answered, read as Open WebUI reads it: the
// text it shows, the tool calls it must run, the finish reason and usage.
type Answer struct {
	Status  int
	RunID   string // X-Longhaul-Run-Id
	Content string
	// Reasoning is what Open WebUI shows as the answer's thinking: the
	// deltas' reasoning_content, reasoning or thinking, the first of them
	// a chunk has (utils/middleware.py:4550-4554 of v0.11.0), or a whole
	// answer's reasoning_content or reasoning (:3639).
	Reasoning string
	// Statuses are the descriptions of the status events, in order
	// (utils/middleware.py:4270-4271 hands a chunk's "event" to the page).
	Statuses     []string
	ToolCalls    []ToolCall
	FinishReason string
	Usage        map[string]any
	// Error is the message of an error answer or error frame.
	Error string
}

// chunk is the part of a chat.completion.chunk or chat.completion Open
// WebUI reads.
type chunk struct {
	Choices []struct {
		Delta   *wireMessage `json:"delta"`
		Message *wireMessage `json:"message"`
		Finish  *string      `json:"finish_reason"`
	} `json:"choices"`
	Usage map[string]any `json:"usage"`
	Event *struct {
		Type string `json:"type"`
		Data struct {
			Description string `json:"description"`
		} `json:"data"`
	} `json:"event"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

type wireMessage struct {
	Content          string `json:"content"`
	ReasoningContent string `json:"reasoning_content"`
	Reasoning        string `json:"reasoning"`
	Thinking         string `json:"thinking"`
	ToolCalls        []struct {
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// Read reads resp whole, streamed or not, and closes its body.
func Read(resp *http.Response) (Answer, error) {
	defer resp.Body.Close()
	a := Answer{Status: resp.StatusCode, RunID: resp.Header.Get("X-Longhaul-Run-Id")}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return a, fmt.Errorf("owuitest: read answer: %w", err)
		}
		var c chunk
		if err := json.Unmarshal(b, &c); err != nil {
			return a, fmt.Errorf("owuitest: answer is not JSON: %q", b)
		}
		a.add(c, false)
		return a, nil
	}
	events, err := ssetest.ReadAll(resp.Body)
	if err != nil {
		return a, fmt.Errorf("owuitest: read stream: %w", err)
	}
	for _, e := range events {
		if e.Data == ssetest.Done {
			break
		}
		var c chunk
		if json.Unmarshal([]byte(e.Data), &c) != nil {
			continue
		}
		a.add(c, true)
	}
	return a, nil
}

func (a *Answer) add(c chunk, delta bool) {
	if c.Error != nil {
		a.Error = c.Error.Message
	}
	if c.Usage != nil {
		a.Usage = c.Usage
	}
	if c.Event != nil && c.Event.Type == "status" {
		a.Statuses = append(a.Statuses, c.Event.Data.Description)
	}
	for _, ch := range c.Choices {
		m := ch.Message
		if delta {
			m = ch.Delta
		}
		if ch.Finish != nil && *ch.Finish != "" {
			a.FinishReason = *ch.Finish
		}
		if m == nil {
			continue
		}
		a.Content += m.Content
		switch {
		case m.ReasoningContent != "":
			a.Reasoning += m.ReasoningContent
		case m.Reasoning != "":
			a.Reasoning += m.Reasoning
		case delta && m.Thinking != "":
			a.Reasoning += m.Thinking
		}
		for _, tc := range m.ToolCalls {
			i := tc.Index
			if !delta {
				i = len(a.ToolCalls)
			}
			for len(a.ToolCalls) <= i {
				a.ToolCalls = append(a.ToolCalls, ToolCall{})
			}
			t := &a.ToolCalls[i]
			if tc.ID != "" {
				t.ID = tc.ID
			}
			if tc.Function.Name != "" {
				t.Name = tc.Function.Name
			}
			t.Arguments += tc.Function.Arguments
		}
	}
}

// Exchange sends the request and reads its answer, as Open WebUI does.
func (r *Request) Exchange(ctx context.Context) (Answer, error) {
	resp, err := r.Send(ctx)
	if err != nil {
		return Answer{}, err
	}
	return Read(resp)
}

// OK is the answer to req, given a minute; an answer that is not a 200
// without an error fails t.
func OK(t testing.TB, req *Request) Answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := req.Exchange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != http.StatusOK || a.Error != "" {
		t.Fatalf("answer: status %d, error %q", a.Status, a.Error)
	}
	return a
}
