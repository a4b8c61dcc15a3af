package wire

import (
	"strings"
	"testing"
)

func TestRunRequestValidate(t *testing.T) {
	hi, blank := "hi", " "
	many := map[string]string{}
	for i := range MaxMetadataKeys + 1 {
		many[strings.Repeat("k", i+1)] = "v"
	}
	user := []ChatMessage{{Role: "user", Content: MessageContent{Text: "hi"}}}
	for _, tt := range []struct {
		name string
		req  RunRequest
		want string // "" when the request is fine
	}{
		{"input", RunRequest{Agent: "a", Input: &hi}, ""},
		{"messages", RunRequest{Agent: "a", Messages: user}, ""},
		{"no agent", RunRequest{Input: &hi}, "agent: required"},
		{"both", RunRequest{Agent: "a", Input: &hi, Messages: user}, "not both"},
		{"neither", RunRequest{Agent: "a"}, "messages or input: required"},
		{"blank input", RunRequest{Agent: "a", Input: &blank}, "input: must not be empty"},
		{"no user message", RunRequest{Agent: "a", Messages: []ChatMessage{{Role: "system"}}}, "at least one user message"},
		{"too many keys", RunRequest{Agent: "a", Input: &hi, Metadata: many}, "metadata: at most"},
		{"long key", RunRequest{Agent: "a", Input: &hi, Metadata: map[string]string{strings.Repeat("k", MaxMetadataKey+1): ""}}, "metadata: keys"},
		{"long value", RunRequest{Agent: "a", Input: &hi, Metadata: map[string]string{"k": strings.Repeat("v", MaxMetadataValue+1)}}, `metadata["k"]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.req.Validate(anySchema)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestRunInputValidate(t *testing.T) {
	yes, text, blank := true, "later", " "
	for _, tt := range []struct {
		name string
		in   RunInput
		want string // "" when the input is fine
	}{
		{"approve", RunInput{Approve: &yes}, ""},
		{"text", RunInput{Text: &text}, ""},
		{"both", RunInput{Approve: &yes, Text: &text}, "not both"},
		{"blank text", RunInput{Text: &blank}, "text: must not be empty"},
		{"neither", RunInput{}, `send {"approve"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.in.Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}
