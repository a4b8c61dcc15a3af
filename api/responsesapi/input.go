package responsesapi

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// This file is GET /v1/responses/{id}/input_items: a response's input
// items, rebuilt from its run's input or from the function outputs
// delivered to it.

// InputItems answers GET /v1/responses/{id}/input_items: the
// items the response's request added, newest first unless order=asc,
// paged with limit and after (an item id).
func (h *Handlers) InputItems(c *fiber.Ctx) error {
	run, start, _, err := h.findResponse(c)
	if err != nil {
		return err
	}
	limit := defaultItemsLimit
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxItemsLimit {
			return web.BadRequest(fmt.Sprintf("limit: must be a number from 1 to %d", maxItemsLimit))
		}
		limit = n
	}
	order := c.Query("order", "desc")
	if order != "asc" && order != "desc" {
		return web.BadRequest(`order: must be "asc" or "desc"`)
	}
	items, err := h.inputOf(c.UserContext(), run, start)
	if err != nil {
		return err
	}
	if order == "desc" {
		slices.Reverse(items)
	}
	if after := c.Query("after"); after != "" {
		i := slices.IndexFunc(items, func(it wire.InputItem) bool { return it.ID == after })
		if i < 0 {
			return web.BadRequest("after: no input item " + after + " in this response")
		}
		items = items[i+1:]
	}
	list := wire.InputItemList{Object: "list", Data: []wire.InputItem{}}
	if len(items) > limit {
		items, list.HasMore = items[:limit], true
	}
	list.Data = append(list.Data, items...)
	if len(items) > 0 {
		list.FirstID, list.LastID = &items[0].ID, &items[len(items)-1].ID
	}
	return c.JSON(list)
}

// inputOf is the input items of the segment of run after start, in order:
// a run's first response's are its request's input; a later one's, the
// function outputs delivered to the run.
func (h *Handlers) inputOf(ctx context.Context, run string, start int64) ([]wire.InputItem, error) {
	key := strings.TrimPrefix(wire.ResponseID(run, start), wire.ResponsePrefix)
	key = strings.NewReplacer(".", "_", "-", "_").Replace(key)
	if start > 0 {
		results, err := h.deliveredResults(ctx, run, start)
		if err != nil {
			return nil, err
		}
		var msgs []longhaul.Message
		for _, r := range results {
			msgs = append(msgs, longhaul.Message{Role: longhaul.RoleTool, ToolCallID: r.ToolCallID, Content: r.Content})
		}
		return wire.MessagesToItems(msgs, key), nil
	}
	in, err := h.startInput(ctx, run)
	if err != nil {
		return nil, err
	}
	from := wire.ResponseStateOf(in.AgentInput).InputFrom
	return wire.MessagesToItems(in.Messages[min(max(from, 0), len(in.Messages)):], key), nil
}

// deliveredResults are the function outputs delivered to run that answer
// the client_tool_calls event at offset at: the input update that carried
// them, read from the run's history (of its current execution).
func (h *Handlers) deliveredResults(ctx context.Context, run string, at int64) ([]contract.ToolResult, error) {
	log, err := h.Runs.ReadLog(ctx, run)
	if err != nil {
		return nil, err
	}
	var calls []longhaul.ToolCall
	for _, e := range log {
		var d longhaul.ClientToolCallsData
		if e.Offset == at && e.Type == longhaul.EventClientToolCalls && e.Decode(&d) == nil {
			calls = d.Calls
		}
	}
	if len(calls) == 0 {
		return nil, web.NotFound("no response of run " + run + " starts at " + strconv.FormatInt(at, 10))
	}
	inputs, err := h.Runs.Service.Inputs(ctx, run)
	if err != nil {
		return nil, web.Unavailable("cannot read the history of run " + run + ": " + err.Error())
	}
	for _, in := range inputs {
		if len(in.ToolResults) == 0 {
			continue
		}
		if slices.ContainsFunc(calls, func(tc longhaul.ToolCall) bool { return tc.ID == in.ToolResults[0].ToolCallID }) {
			return in.ToolResults, nil
		}
	}
	return nil, nil
}
