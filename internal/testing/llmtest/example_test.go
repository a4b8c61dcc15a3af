package llmtest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"strings"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	openai "github.com/sashabaranov/go-openai"
)

// This example scripts a tool call followed by a final answer, routes title
// requests through a rule and streams the answer with a real client.
func Example() {
	srv, err := llmtest.Start() // in tests: srv := llmtest.New(t)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	srv.On(llmtest.LastUserContains("### Task:"), llmtest.JSON(map[string]string{"title": "Weather"}))
	srv.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{Name: "get_weather", Arguments: `{"city":"Oslo"}`}),
		llmtest.Text("It is -3°C in Oslo."),
	)

	cfg := openai.DefaultConfig("sk-test")
	cfg.BaseURL = srv.URL()
	client := openai.NewClientWithConfig(cfg)
	ctx := context.Background()

	msgs := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "Weather in Oslo?"}}
	resp, err := client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "any", Messages: msgs})
	if err != nil {
		log.Fatal(err)
	}
	call := resp.Choices[0].Message.ToolCalls[0]
	fmt.Println(resp.Choices[0].FinishReason, call.ID, call.Function.Name, call.Function.Arguments)

	msgs = append(msgs, resp.Choices[0].Message,
		openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: call.ID, Content: "-3"})
	stream, err := client.CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{Model: "any", Messages: msgs})
	if err != nil {
		log.Fatal(err)
	}
	defer stream.Close()
	var pieces []string
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		pieces = append(pieces, fmt.Sprintf("%q", chunk.Choices[0].Delta.Content))
	}
	fmt.Println(strings.Join(pieces, " "))

	title, err := client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "any",
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "### Task: title"}}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(title.Choices[0].Message.Content, srv.Pending(), len(srv.Requests()))
	// Output:
	// tool_calls call_1 get_weather {"city":"Oslo"}
	// "" "It" " is" " -3°C" " in" " Oslo." ""
	// {"title":"Weather"} 0 3
}

// This example shows a transient failure that a client is expected to retry.
func ExampleFailTimes() {
	srv, err := llmtest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	srv.Enqueue(llmtest.FailTimes(2, 429, llmtest.Text("done")))

	client := openai.NewClientWithConfig(srv.ClientConfig())
	req := openai.ChatCompletionRequest{Model: "any",
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "hi"}}}
	for {
		resp, err := client.CreateChatCompletion(context.Background(), req)
		var apiErr *openai.APIError
		if errors.As(err, &apiErr) && apiErr.HTTPStatusCode == 429 {
			fmt.Println("retrying after", apiErr.Message)
			continue
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(resp.Choices[0].Message.Content)
		break
	}
	// Output:
	// retrying after llmtest: scripted failure 1 of 2
	// retrying after llmtest: scripted failure 2 of 2
	// done
}

// This example gives the scripted model Ollama's default window and
// behaviour: a chat that outgrows it loses its oldest turns without an
// error, and CutRequests is how a test catches that.
func ExampleServer_SetWindow() {
	srv, err := llmtest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	srv.SetWindow(4096, llmtest.BehaviourOllama)
	srv.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		// The script sees what the model read.
		return llmtest.Text(fmt.Sprintf("I see %d messages.", len(r.Chat.Messages)))
	}))

	page := strings.Repeat("A long fetched page about context windows. ", 400) // about 3,200 tokens
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: "You are a researcher."},
		{Role: openai.ChatMessageRoleUser, Content: "Page one: " + page},
		{Role: openai.ChatMessageRoleUser, Content: "Page two: " + page},
		{Role: openai.ChatMessageRoleUser, Content: "What did page one say?"},
	}
	client := openai.NewClientWithConfig(srv.ClientConfig())
	resp, err := client.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Model: "llama3.1:8b", Messages: msgs})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Choices[0].Message.Content)
	for _, r := range srv.CutRequests() {
		fmt.Printf("request %d: %d prompt tokens, %d messages dropped\n", r.N, r.PromptTokens, r.Dropped)
	}
	// Output:
	// I see 3 messages.
	// request 1: 6444 prompt tokens, 1 messages dropped
}

// This example has the scripted model speak Ollama's dialect: a thinking
// model's reasoning arrives in delta.reasoning, which go-openai does not
// decode (it reads only reasoning_content), so a client that wants it
// reads the raw frames; and a model Ollama has not pulled is a 404.
func ExampleServer_SetFlavour() {
	srv, err := llmtest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	srv.SetFlavour(llmtest.FlavourOllama)
	srv.SetPulled("qwen3")
	srv.SetDefault(llmtest.Text("Paris.", llmtest.Reasoning("The capital of France.")))

	client := openai.NewClientWithConfig(srv.ClientConfig())
	stream, err := client.CreateChatCompletionStream(context.Background(), openai.ChatCompletionRequest{
		Model: "qwen3", Stream: true,
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "Capital of France?"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	var answer, reasoning strings.Builder
	for {
		chunk, err := stream.Recv()
		if err != nil {
			break
		}
		answer.WriteString(chunk.Choices[0].Delta.Content)
		reasoning.WriteString(chunk.Choices[0].Delta.ReasoningContent)
	}
	stream.Close()
	fmt.Printf("answer %q, reasoning_content %q\n", answer.String(), reasoning.String())

	_, err = client.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		Model:    "llama3.1:8b",
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "hi"}},
	})
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.HTTPStatusCode, apiErr.Message)
	}
	// Output:
	// answer "Paris.", reasoning_content ""
	// 404 model 'llama3.1:8b' not found
}
