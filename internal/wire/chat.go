package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/longhaul-dev/longhaul"
)

// ChatRequest is the body of POST /v1/chat/completions. Fields Longhaul does
// not use are accepted and ignored, as clients send many.
type ChatRequest struct {
	Model               string          `json:"model"`
	Messages            []ChatMessage   `json:"messages"`
	Stream              bool            `json:"stream"`
	StreamOptions       *StreamOptions  `json:"stream_options,omitempty"`
	Temperature         *float32        `json:"temperature,omitempty"`
	TopP                *float32        `json:"top_p,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	Stop                StringList      `json:"stop,omitempty"`
	Seed                *int            `json:"seed,omitempty"`
	N                   *int            `json:"n,omitempty"`
	Logprobs            bool            `json:"logprobs,omitempty"`
	TopLogprobs         *int            `json:"top_logprobs,omitempty"`
	ReasoningEffort     string          `json:"reasoning_effort,omitempty"`
	Tools               []WireTool      `json:"tools,omitempty"`
	ToolChoice          json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls,omitempty"`
	ResponseFormat      *WireFormat     `json:"response_format,omitempty"`
	User                string          `json:"user,omitempty"`
	Metadata            json.RawMessage `json:"metadata,omitempty"`
	// Longhaul holds Longhaul's own options (see LonghaulOptions); they
	// never reach the model.
	Longhaul *LonghaulOptions `json:"longhaul,omitempty"`
}

// WireTool is a tool a client declares: only function tools exist in the
// Chat Completions API.
type WireTool struct {
	Type     string `json:"type"`
	Function *struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
		Strict      bool            `json:"strict,omitempty"`
	} `json:"function"`
}

// WireFormat is a request's response_format.
type WireFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict bool            `json:"strict,omitempty"`
	} `json:"json_schema,omitempty"`
}

// StreamOptions are the options of a streamed request.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// StringList is a JSON string or array of strings (as `stop` may be).
type StringList []string

// UnmarshalJSON accepts a string, an array of strings or null.
func (s *StringList) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*s = nil
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = StringList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("must be a string or an array of strings")
	}
	*s = many
	return nil
}

// ChatMessage is one message of a request: content is a string or an array
// of content parts.
type ChatMessage struct {
	Role       string         `json:"role"`
	Content    MessageContent `json:"content"`
	Name       string         `json:"name,omitempty"`
	ToolCalls  []WireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// MessageContent is a message's content, decoded from a string or from
// content parts: Text is its text (the text parts joined by newlines), and
// Parts its parts in order when it has others than text.
type MessageContent struct {
	Text  string
	Parts []longhaul.Part
	// Files are the message's file parts, in order: the handler stores
	// and ingests them (see chatapi's chatFiles) and puts a note in each
	// one's place (NoteFile).
	Files []FilePart
	// texts are the text parts, a file's place among them held by its
	// note, from which Text is joined.
	texts []string
}

// FilePart is a Chat Completions file content part: {"type": "file",
// "file": {"file_data": "data:application/pdf;base64,…", "filename": …}}
// or {"file": {"file_id": "file-…"}} (openai-python v3.3.1,
// src/openai/types/chat/chat_completion_content_part_param.py:15-26,
// 39-47).
type FilePart struct {
	FileData string `json:"file_data,omitempty"`
	FileID   string `json:"file_id,omitempty"`
	Filename string `json:"filename,omitempty"`
	// text is the part's index among the text parts, part its index in
	// Parts (-1 when the message keeps no parts).
	text, part int
}

// NoteFile puts note in the place of the message's i-th file part.
func (m *MessageContent) NoteFile(i int, note string) {
	f := m.Files[i]
	m.texts[f.text] = note
	if f.part >= 0 && f.part < len(m.Parts) {
		m.Parts[f.part].Text = note
	}
	m.Text = strings.Join(m.texts, "\n")
}

// wirePart is one content part as OpenAI sends it.
type wirePart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL    string `json:"url"`
		Detail string `json:"detail,omitempty"`
	} `json:"image_url"`
	File *FilePart `json:"file"`
}

// UnmarshalJSON accepts a string, null, or an array of content parts (text,
// image_url and file; audio parts are refused: the model client sends
// none). A file part holds its place as a text part, its note once the
// handler has stored it.
func (m *MessageContent) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*m = MessageContent{}
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	if json.Unmarshal(b, &m.Text) == nil {
		return nil
	}
	var parts []wirePart
	if err := json.Unmarshal(b, &parts); err != nil {
		return errors.New("must be a string or an array of content parts")
	}
	var texts []string
	images := false
	for i, p := range parts {
		switch p.Type {
		case "text", "input_text", "output_text", "refusal":
			texts = append(texts, p.Text)
			m.Parts = append(m.Parts, longhaul.Part{Type: longhaul.PartText, Text: p.Text})
		case "image_url":
			if p.ImageURL == nil || p.ImageURL.URL == "" {
				return fmt.Errorf("part %d: image_url.url is required", i)
			}
			images = true
			m.Parts = append(m.Parts, longhaul.Part{Type: longhaul.PartImage, URL: p.ImageURL.URL, Detail: p.ImageURL.Detail})
		case "file":
			f := p.File
			switch {
			case f == nil || f.FileData == "" && f.FileID == "":
				return fmt.Errorf("part %d: a file part needs file.file_data or file.file_id", i)
			case f.FileData != "" && f.FileID != "":
				return fmt.Errorf("part %d: a file part has file.file_data or file.file_id, not both", i)
			case len(f.Filename) > 255:
				return fmt.Errorf("part %d: file.filename is longer than 255 bytes", i)
			}
			f.text, f.part = len(texts), len(m.Parts)
			name := f.Filename
			if name == "" {
				name = f.FileID
			}
			note := "[attached file " + name + "]"
			texts = append(texts, note)
			m.Parts = append(m.Parts, longhaul.Part{Type: longhaul.PartText, Text: note})
			m.Files = append(m.Files, *f)
		case "input_audio":
			return fmt.Errorf("part %d: %s parts are not supported yet; send text, image_url and file parts", i, p.Type)
		default:
			return fmt.Errorf("part %d: unknown content part type %q", i, p.Type)
		}
	}
	m.Text = strings.Join(texts, "\n")
	m.texts = texts
	if !images {
		m.Parts = nil
		for i := range m.Files {
			m.Files[i].part = -1
		}
	}
	return nil
}

// WireToolCall is a tool call in OpenAI's wire format.
type WireToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// ChatCompletion is a non-streamed answer.
type ChatCompletion struct {
	ID      string           `json:"id"`
	Object  string           `json:"object"`
	Created int64            `json:"created"`
	Model   string           `json:"model"`
	Choices []CompletionItem `json:"choices"`
	Usage   *WireUsage       `json:"usage,omitempty"`
	// Longhaul is the run's audit trail, only when the request asked for
	// it (see Audit).
	Longhaul *Audit `json:"longhaul,omitempty"`
}

// CompletionItem is one choice of a ChatCompletion.
type CompletionItem struct {
	Index        int           `json:"index"`
	Message      ResponseEntry `json:"message"`
	FinishReason string        `json:"finish_reason"`
}

// ResponseEntry is the assistant message of a ChatCompletion.
type ResponseEntry struct {
	Role             string         `json:"role"`
	Content          string         `json:"content"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []WireToolCall `json:"tool_calls,omitempty"`
}

// ChatChunk is one streamed frame (object chat.completion.chunk).
type ChatChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	Usage   *WireUsage    `json:"usage,omitempty"`
	// Longhaul is the run's audit trail, on a last chunk of its own (no
	// choices, as the usage chunk), only when the request asked for it.
	Longhaul *Audit `json:"longhaul,omitempty"`
}

// ChunkChoice is the choice of a ChatChunk. FinishReason is null until the
// last content chunk.
type ChunkChoice struct {
	Index        int     `json:"index"`
	Delta        Delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

// Delta is the new part of the message in a ChatChunk.
type Delta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content,omitempty"`
	// ReasoningContent is a reasoning model's thinking, which Open WebUI
	// shows folded as such.
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []WireToolCall `json:"tool_calls,omitempty"`
}

// WireUsage is token usage in OpenAI's format.
type WireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// CompletionTokensDetails has the reasoning tokens, when the model
	// endpoints reported any.
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
}

// CompletionTokensDetails breaks the completion tokens down.
type CompletionTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// UsageOf is u in OpenAI's format.
func UsageOf(u longhaul.Usage) *WireUsage {
	w := &WireUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if u.ReasoningTokens > 0 {
		w.CompletionTokensDetails = &CompletionTokensDetails{ReasoningTokens: u.ReasoningTokens}
	}
	return w
}

// StatusFrame is Open WebUI's status event, sent in the stream in place of a
// chunk: {"event":{"type":"status","data":{"description":…,"done":…}}}.
type StatusFrame struct {
	Event StatusEvent `json:"event"`
}

// StatusEvent is the event of a StatusFrame.
type StatusEvent struct {
	Type string     `json:"type"`
	Data StatusData `json:"data"`
}

// StatusData describes progress for Open WebUI's status line.
type StatusData struct {
	Description string `json:"description"`
	Done        bool   `json:"done"`
	Hidden      bool   `json:"hidden,omitempty"`
}

// NewStatusFrame is a status line for Open WebUI; done ends it.
func NewStatusFrame(description string, done bool) StatusFrame {
	return StatusFrame{Event: StatusEvent{Type: "status", Data: StatusData{Description: description, Done: done}}}
}

// ModelList is the answer of GET /v1/models.
type ModelList = List[ModelInfo]

// ModelInfo is one entry of ModelList.
type ModelInfo struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	Description string `json:"description,omitempty"`
}

// ErrorBody is OpenAI's error envelope.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the error inside ErrorBody.
type ErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code,omitempty"`
}
