package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/memory"
	"github.com/longhaul-dev/longhaul/skills"
	"github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// memoryOff is the failure of a memory activity on a worker without memory.
func (a *Activities) memoryOff() error {
	if a.Memory != nil {
		return nil
	}
	return nonRetryable(longhaul.ErrTypeMemoryOff, errors.New("memory is off on this worker (LONGHAUL_EMBED_MODEL)"))
}

// MaxExtractedFacts bounds the facts one turn's extraction saves.
const MaxExtractedFacts = 8

// RecallMemories embeds the query and searches the user's memories: the
// top K (LONGHAUL_MEMORY_K) at or above LONGHAUL_MEMORY_THRESHOLD.
func (a *Activities) RecallMemories(ctx context.Context, req contract.RecallRequest) (contract.RecallResponse, error) {
	if err := a.memoryOff(); err != nil {
		return contract.RecallResponse{}, err
	}
	if strings.TrimSpace(req.Query) == "" || req.User == "" {
		return contract.RecallResponse{Memories: []longhaul.MemoryItem{}}, nil
	}
	var found []memory.Memory
	var err error
	if req.All {
		found, err = a.Memory.Search(ctx, req.User, req.Query, 0)
	} else {
		found, err = a.Memory.Recall(ctx, req.User, req.Query)
	}
	if err != nil {
		return contract.RecallResponse{}, a.memoryError(ctx, err)
	}
	out := contract.RecallResponse{Memories: []longhaul.MemoryItem{}}
	for _, m := range found {
		out.Memories = append(out.Memories, longhaul.MemoryItem{ID: m.ID, Text: m.Text, Score: m.Score})
	}
	if len(out.Memories) > 0 {
		out.Note = a.catalog.Prompt(skills.PromptRecall) + "\n" + longhaul.MemoryLines(out.Memories)
	}
	return out, nil
}

// memoryError classifies a memory failure: the embedder's like a model
// call's (its 4xx fail at once), invalid input at once, the rest retries.
func (a *Activities) memoryError(ctx context.Context, err error) error {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr), errors.As(err, &reqErr):
		return classifyModelError(ctx, err)
	case memory.IsInvalid(err):
		return nonRetryable(longhaul.ErrTypeMemoryInvalid, err)
	}
	return err
}

var extractSchema = json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"facts":{"type":"array","maxItems":%d,"items":{"type":"string"}}},"required":["facts"],"additionalProperties":false}`, MaxExtractedFacts))

// ExtractMemories is the extraction call of remember: true: structured
// output {facts: [...]} over the turn, through the planner's mechanism
// (json_schema, parsed and checked, asked once to fix invalid JSON).
func (a *Activities) ExtractMemories(ctx context.Context, req contract.ExtractRequest) (contract.ExtractResponse, error) {
	msgs := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: a.catalog.Prompt(skills.PromptMemoryExtract)}}
	msgs = append(msgs, conversation(lastTurns(req.Messages, 4))...)
	zero := float32(0)
	raw, usage, err := a.structured(ctx, structuredCall{
		model: a.model(req.Model), messages: msgs, name: "memory_facts", schema: extractSchema, temperature: &zero,
		spend: a.spender(req.Principal, req.Agent),
	})
	if err != nil {
		return contract.ExtractResponse{Usage: usage}, err
	}
	var out struct {
		Facts []string `json:"facts"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return contract.ExtractResponse{Usage: usage}, temporal.NewApplicationError("memory facts: "+err.Error(), longhaul.ErrTypeModelBadOutput)
	}
	resp := contract.ExtractResponse{Facts: []string{}, Usage: usage}
	for _, f := range out.Facts {
		f = strings.Join(strings.Fields(f), " ")
		if f == "" || len(f) > memory.MaxTextBytes || len(resp.Facts) == MaxExtractedFacts {
			continue
		}
		resp.Facts = append(resp.Facts, f)
	}
	return resp, nil
}

// SaveMemories embeds the facts and saves them; a near-duplicate of a
// memory the user has (cosine ≥ 0.95) updates it. Saving again on a retry
// finds its own earlier saves as duplicates, so a retry adds nothing twice.
func (a *Activities) SaveMemories(ctx context.Context, req contract.SaveRequest) (contract.SaveResponse, error) {
	if err := a.memoryOff(); err != nil {
		return contract.SaveResponse{}, err
	}
	if req.User == "" {
		return contract.SaveResponse{}, nonRetryable(longhaul.ErrTypeMemoryInvalid, errors.New("save memories: no user"))
	}
	saved, err := a.Memory.Remember(ctx, req.User, req.Chat, activity.GetInfo(ctx).WorkflowExecution.ID, req.Facts)
	if err != nil {
		return contract.SaveResponse{}, a.memoryError(ctx, err)
	}
	out := contract.SaveResponse{Memories: []longhaul.MemoryItem{}}
	for _, s := range saved {
		out.Memories = append(out.Memories, longhaul.MemoryItem{ID: s.ID, Text: s.Text, Updated: s.Updated})
	}
	return out, nil
}
