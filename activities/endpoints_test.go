package activities_test

import (
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/endpoints"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
)

// namedEndpoint gives the fixture's activities a second scripted model as
// the endpoint "remote", with its own key.
func namedEndpoint(t *testing.T) (*llmtest.Server, func(*activities.LLMConfig)) {
	remote := llmtest.New(t)
	remote.RequireKey("sk-remote")
	return remote, func(c *activities.LLMConfig) {
		c.Endpoints = []endpoints.Endpoint{{Name: "remote", BaseURL: remote.URL(), APIKey: "sk-remote"}}
	}
}

// TestChatCompletionOnANamedEndpoint: "remote:big" goes to the endpoint
// named remote as model big, with its key, streamed and published like a
// call to the default endpoint; the answer names the model as a reference
// to remote, so a run that goes on with it stays there. "llama3.1:8b"
// stays on the default endpoint.
func TestChatCompletionOnANamedEndpoint(t *testing.T) {
	remote, withRemote := namedEndpoint(t)
	f := newFixture(t, nil, withRemote)
	remote.Enqueue(llmtest.Text("from the remote model", llmtest.ChunkSize(5), llmtest.Usage(3, 4)))
	env, fl := f.followedEnv(t)
	got, err := chat(t, env, f.acts, contract.ModelRequest{Call: "answer", Agent: "assistant", Model: "remote:big", Messages: userMessage("hi"), Publish: true})
	if err != nil {
		t.Fatalf("ChatCompletion: %v", err)
	}
	if got.Message.Content != "from the remote model" || got.Model != "remote:big" || got.Usage != (longhaul.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}) {
		t.Errorf("response = %+v", got)
	}
	rr := remote.Requests()
	if len(rr) != 1 || rr[0].Chat.Model != "big" || !rr[0].Chat.Stream {
		t.Fatalf("remote requests = %+v", rr)
	}
	if n := len(f.srv.Requests()); n != 0 {
		t.Errorf("the default endpoint got %d requests", n)
	}
	checkContent(t, fl.drain(t), "answer", 1, 0, "from the remote model")

	f.srv.Enqueue(llmtest.Text("local"))
	if _, err := chat(t, f.activityEnv(), f.acts, contract.ModelRequest{Call: "turn-1", Agent: "assistant", Model: "llama3.1:8b", Messages: userMessage("hi")}); err != nil {
		t.Fatal(err)
	}
	if lr := f.srv.Requests(); len(lr) != 1 || lr[0].Chat.Model != "llama3.1:8b" {
		t.Errorf("llama3.1:8b did not go to the default endpoint as written: %+v", lr)
	}
}

// TestNamedEndpointFaultsAreClassifiedAlike: a named endpoint's 429 and
// 5xx are retryable and its 401 is not, as on the default endpoint; a
// reference to an endpoint the worker does not have is not retried.
func TestNamedEndpointFaultsAreClassifiedAlike(t *testing.T) {
	for _, tt := range []struct {
		name         string
		reply        llmtest.Reply
		typ          string
		nonRetryable bool
	}{
		{"429", llmtest.Status(429, "slow down"), longhaul.ErrTypeModelUnavailable, false},
		{"503", llmtest.Status(503, "overloaded"), longhaul.ErrTypeModelUnavailable, false},
		{"401", llmtest.Status(401, "invalid api key"), longhaul.ErrTypeModelRejected, true},
		{"cut", llmtest.Text("one two three").With(llmtest.CutAfter(1)), longhaul.ErrTypeModelUnavailable, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			remote, withRemote := namedEndpoint(t)
			f := newFixture(t, nil, withRemote)
			remote.Enqueue(tt.reply)
			_, err := chat(t, f.activityEnv(), f.acts, contract.ModelRequest{Call: "turn-1", Agent: "assistant", Model: "remote:big", Messages: userMessage("hi")})
			wantAppError(t, err, tt.typ, tt.nonRetryable, "")
		})
	}
	f := newFixture(t, nil, nil)
	_, err := chat(t, f.activityEnv(), f.acts, contract.ModelRequest{Call: "turn-1", Agent: "assistant", Model: "remote:big", Messages: userMessage("hi")})
	wantAppError(t, err, longhaul.ErrTypeModelRejected, true, `unknown model endpoint "remote"`)
	if n := len(f.srv.Requests()); n != 0 {
		t.Errorf("an unknown endpoint's call reached the default endpoint %d times", n)
	}
}
