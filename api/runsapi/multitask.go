package runsapi

import (
	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// multitask applies a run request's multitask strategy (enqueue when it
// names none) to the running runs of its metadata.chat_id, and returns
// what the answer says of it: nil when no run of the chat was running.
// A steered message is answered here (done); otherwise r follows the run
// the strategy says.
func (h *Handlers) multitask(c *fiber.Ctx, req *wire.RunRequest, r *runs.Request) (mt *wire.RunMultitask, done bool, err error) {
	chat := r.ChatKey()
	if chat == "" {
		return nil, false, nil
	}
	strategy := req.MultitaskStrategy
	if strategy == "" {
		strategy = runs.DefaultRunsMultitask
	}
	out, err := h.Gate.Multitask(c.UserContext(), runs.Multitask{
		Strategy: strategy, Chat: chat, Owner: r.User.Key(), Text: longhaul.LastUserText(r.Messages), Prepend: true,
	})
	if err != nil {
		return nil, false, runweb.Refused(err)
	}
	if out.Strategy == "" {
		return nil, false, nil
	}
	mt = &wire.RunMultitask{Strategy: out.Strategy, Run: out.Run, Steered: out.Steered}
	if out.Steered {
		c.Set(web.HeaderRunID, out.Run)
		return mt, true, c.Status(fiber.StatusAccepted).JSON(wire.RunStarted{
			RunCreated: wire.RunCreated{ID: out.Run, Status: contract.StatusRunning, EventsURL: runweb.EventsURL(out.Run)},
			Multitask:  mt,
		})
	}
	r.Follows = out.Follows
	return mt, false, nil
}
