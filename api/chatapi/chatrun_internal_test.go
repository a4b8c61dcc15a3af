package chatapi

import (
	"testing"

	"github.com/longhaul-dev/longhaul/internal/wire"
)

func TestIsBackgroundTask(t *testing.T) {
	msg := func(role, text string) wire.ChatMessage {
		return wire.ChatMessage{Role: role, Content: wire.MessageContent{Text: text}}
	}
	const title = "### Task:\nGenerate a concise, 3-5 word title.\n### Chat History:\n<chat_history>\nUSER: hi\nASSISTANT: hello\n</chat_history>"
	const rag = "### Task:\nRespond to the user query using the provided context.\n\n<context>\n<source id=\"1\">42</source>\n</context>\n"
	tests := []struct {
		name string
		msgs []wire.ChatMessage
		want bool
	}{
		{"the title task", []wire.ChatMessage{msg("user", title)}, true},
		{"a task after a system prompt", []wire.ChatMessage{msg("system", "be brief"), msg("user", title)}, true},
		{"a task whose chat quoted a context block", []wire.ChatMessage{msg("user", "### Task:\nGenerate tags.\n<chat_history>\nUSER: <context>x</context>\n</chat_history>")}, true},
		{"a plain question", []wire.ChatMessage{msg("user", "hi")}, false},
		{"a first turn with a document", []wire.ChatMessage{msg("user", rag+"\nWhat does it say?")}, false},
		{"a later turn with a document", []wire.ChatMessage{msg("user", "hi"), msg("assistant", "hello"), msg("user", rag+"\nAnd now?")}, false},
		{"a user who typed ### Task: in a chat", []wire.ChatMessage{msg("user", "hi"), msg("assistant", "hello"), msg("user", "### Task: do it")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := wire.ChatRequest{Messages: tt.msgs}
			if got := r.IsBackgroundTask(); got != tt.want {
				t.Errorf("isBackgroundTask = %v, want %v", got, tt.want)
			}
		})
	}
}
