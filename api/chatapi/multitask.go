package chatapi

import (
	"encoding/json"
	"github.com/longhaul-dev/longhaul"
	"slices"
	"strings"

	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
)

// multitask applies the chat's multitask strategy when a run of an earlier
// message of the chat is still running (see runs.Gate.Multitask): a
// steered message is answered here (done), with the running run's events
// from the moment it took the message; otherwise the new turn's run
// follows the run the strategy says, or the request is refused.
func (h *Handlers) multitask(cc *chatCall, runID string) (done bool, err error) {
	strategy, err := h.chatStrategy(cc)
	if err != nil {
		return false, err
	}
	ctx := cc.c.UserContext()
	out, err := h.Gate.Multitask(ctx, runs.Multitask{
		Strategy: strategy, Chat: cc.chat().ID, Owner: cc.run.User.Key(), Turn: cc.chat().Turn,
		Text: longhaul.LastUserText(cc.run.Messages), UpdateID: "steer-" + runID,
	})
	if err != nil {
		return false, runweb.Refused(err)
	}
	if out.Strategy != "" {
		h.Runs.Logger().Info("a chat message found the chat's run still going", "chat", cc.chat().ID, "run", out.Run, "strategy", out.Strategy)
	}
	if !out.Steered {
		cc.run.Follows = out.Follows
		return false, nil
	}
	cc.admitted()
	cc.c.Set(web.HeaderRunID, out.Run)
	at := resumeAt{after: out.At}
	if !cc.req.Stream {
		return true, h.respondWatching(cc.c, out.Run, cc.agent.ID, cc.openWebUI, at)
	}
	h.streamResponse(cc.c, cc.req, out.Run, cc.agent.ID, cc.openWebUI, at, cc.stream)
	return true, nil
}

// chatStrategy is the request's multitask strategy: a plain client's
// metadata.multitask_strategy, else the server's (LONGHAUL_CHAT_MULTITASK),
// else runs.DefaultChatMultitask.
func (h *Handlers) chatStrategy(cc *chatCall) (string, error) {
	if len(cc.req.Metadata) > 0 {
		var md map[string]any
		if json.Unmarshal(cc.req.Metadata, &md) == nil {
			if v, ok := md["multitask_strategy"].(string); ok && v != "" {
				if !slices.Contains(contract.MultitaskStrategies, v) {
					return "", web.BadRequest("metadata.multitask_strategy: must be one of " + strings.Join(contract.MultitaskStrategies, ", "))
				}
				return v, nil
			}
		}
	}
	if h.Multitask != "" {
		return h.Multitask, nil
	}
	return runs.DefaultChatMultitask, nil
}
