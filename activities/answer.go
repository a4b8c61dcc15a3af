package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/natsbus"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"
)

// This file is what a client's request adds to a chat model call: its own
// tools, its content parts, its response format and a reasoning model's
// thinking.

// emptyParameters is the schema of a client tool that declared none.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// offeredTools are the tools a model call offers: the agent's (by name,
// from the catalog) and the client's own.
func (a *Activities) offeredTools(req contract.ModelRequest) ([]openai.Tool, error) {
	var out []openai.Tool
	if len(req.Tools) > 0 {
		defs, err := a.definitions(req.Tools)
		if err != nil {
			return nil, nonRetryable(longhaul.ErrTypeToolRefused, err)
		}
		for _, d := range defs {
			out = append(out, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
				Name: d.Name, Description: d.Description, Parameters: d.Parameters,
			}})
		}
	}
	for _, t := range req.ClientTools {
		params := t.Parameters
		if len(params) == 0 {
			params = emptyParameters
		}
		out = append(out, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: params, Strict: t.Strict,
		}})
	}
	return out, nil
}

// nameClientCalls gives each call of a client tool the id that leads the
// client's next request back to this run (see contract.ClientCallID); next
// is the sequence number of the answer's first call.
func nameClientCalls(calls []longhaul.ToolCall, specs []longhaul.ToolSpec, run string, next int64) {
	for i := range calls {
		for _, t := range specs {
			if t.Name == calls[i].Name {
				calls[i].ID = contract.ClientCallID(run, next+int64(i))
				break
			}
		}
	}
}

// messageParts converts content parts for the model, reading images that
// travel by reference back from the claim-check store.
func (a *Activities) messageParts(ctx context.Context, parts []longhaul.Part) ([]openai.ChatMessagePart, error) {
	out := make([]openai.ChatMessagePart, 0, len(parts))
	for _, p := range parts {
		switch p.Type {
		case longhaul.PartText:
			out = append(out, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: p.Text})
		case longhaul.PartImage:
			url := p.URL
			if p.Ref != "" {
				data, err := a.readPart(ctx, p.Ref)
				if err != nil {
					return nil, err
				}
				url = data
			}
			out = append(out, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL,
				ImageURL: &openai.ChatMessageImageURL{URL: url, Detail: openai.ImageURLDetail(p.Detail)}})
		default:
			return nil, nonRetryable(longhaul.ErrTypeBadInput, fmt.Errorf("content part type %q cannot be sent to the model", p.Type))
		}
	}
	return out, nil
}

// readPart reads a content part's data from the claim-check store.
func (a *Activities) readPart(ctx context.Context, ref string) (string, error) {
	if a.Blobs == nil {
		return "", nonRetryable(longhaul.ErrTypeNoStore, errors.New("the message's image is in the blob store, and this worker has none"))
	}
	b, err := a.Blobs.Get(ctx, ref)
	if errors.Is(err, store.ErrNotFound) {
		return "", nonRetryable(longhaul.ErrTypeLostBlob, fmt.Errorf("the message's stored image %s is gone", ref))
	}
	if err != nil {
		return "", fmt.Errorf("read the message's image: %w", err)
	}
	return string(b.Data), nil
}

// responseFormat is the request's response format for go-openai.
func responseFormat(f *longhaul.ResponseFormat) *openai.ChatCompletionResponseFormat {
	if f == nil {
		return nil
	}
	out := &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatType(f.Type)}
	if f.Type == longhaul.FormatJSONSchema {
		out.JSONSchema = &openai.ChatCompletionResponseFormatJSONSchema{Name: f.Name, Schema: f.Schema, Strict: f.Strict}
	}
	return out
}

// checkFormat holds an answer to the request's response format: an answer
// that is not the JSON asked for (an endpoint may ignore response_format) is
// sent back once with the problems, as structured calls are; the JSON
// object found in it is the answer. A second miss fails the call.
func (a *Activities) checkFormat(ctx context.Context, ep endpoint, oreq openai.ChatCompletionRequest, f *longhaul.ResponseFormat, resp contract.ModelResponse) (contract.ModelResponse, error) {
	if f == nil || (f.Type != longhaul.FormatJSONObject && f.Type != longhaul.FormatJSONSchema) {
		return resp, nil
	}
	raw, err := decodeStructured(resp.Message.Content, f.Schema, nil)
	if err == nil {
		resp.Message.Content = string(raw)
		return resp, nil
	}
	a.log.Debug("answer does not match response_format; asking again", "error", err)
	oreq.Messages = append(append([]openai.ChatCompletionMessage(nil), oreq.Messages...), correction(resp.Message.Content, err)...)
	oreq.Tools, oreq.ToolChoice, oreq.ParallelToolCalls = nil, nil, nil
	var quiet *natsbus.Bus
	again, err := a.stream(ctx, ep, oreq, quiet.OpenCall("", "", 0, 0))
	if err != nil {
		return contract.ModelResponse{}, err
	}
	again.Usage = resp.Usage.Add(again.Usage)
	again.Reasoning = resp.Reasoning
	again.Message.Reasoning = resp.Reasoning
	raw, err = decodeStructured(again.Message.Content, f.Schema, nil)
	if err != nil {
		return contract.ModelResponse{}, temporal.NewApplicationError(
			"the model's answer does not match response_format after one correction: "+err.Error(), longhaul.ErrTypeModelBadOutput)
	}
	again.Message.Content = string(raw)
	again.Message.ToolCalls = nil
	return again, nil
}
