package a2aapi

import (
	"context"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/internal/runs"
)

// framer writes one stream response, or an error, as a binding frames
// them (JSON-RPC: each a JSON-RPC response, §9.4.2; HTTP+JSON: each a
// StreamResponse, §11.7).
type framer interface {
	frame(sw *sse.Writer, v StreamResponse) error
	fail(sw *sse.Writer, e *Error) error
}

// streamSend is SendStreamingMessage (§3.1.2): the task, then its
// updates from the run's durable events, until it ends.
func (h *Handlers) streamSend(c *fiber.Ctx, cl caller, req SendMessageRequest, fr framer) error {
	release, err := runweb.Stream(h.Gate, cl.p.Name)
	if err != nil {
		return err
	}
	s, err := h.send(c.UserContext(), cl, &req, false)
	if err != nil {
		release()
		return err
	}
	var t Task
	if req.Message.TaskID == "" {
		// A new task: submitted, and every event of its run follows.
		t = Task{ID: s.id, ContextID: s.contextID, Status: TaskStatus{State: StateSubmitted, Timestamp: now()},
			History: []Message{*userMessage(s.id, s.contextID, []longhaul.Message{{Role: longhaul.RoleUser, Content: s.text}})}}
	} else if t, _, err = h.task(c.UserContext(), cl, s.id, nil); err != nil {
		// An answered task as it stands; its events after the answer
		// follow.
		release()
		return err
	}
	withHook(&t, s.hook)
	h.stream(c, cl, t, s.from, fr, release)
	return nil
}

// subscribe is SubscribeToTask (§3.1.6): the task as it stands, then its
// updates from the durable events after those it was read from, so a
// client resumes on any API process, this one restarted too.
func (h *Handlers) subscribe(c *fiber.Ctx, cl caller, req TaskRequest, fr framer) error {
	if req.ID == "" {
		return errInvalidParams.with("id: required")
	}
	t, last, err := h.task(c.UserContext(), cl, req.ID, req.HistoryLength)
	if err != nil {
		return err
	}
	if terminal(t.Status.State) {
		return errUnsupported.with("task " + req.ID + " has finished (" + t.Status.State + "); there is nothing to subscribe to")
	}
	release, err := runweb.Stream(h.Gate, cl.p.Name)
	if err != nil {
		return err
	}
	h.stream(c, cl, t, runs.After(last), fr, release)
	return nil
}

// stream answers c with first, then what the run's events from pos add,
// until the run's log ends (its final status), the client leaves or the
// server shuts down (the stream ends without the final status; the client
// subscribes again).
func (h *Handlers) stream(c *fiber.Ctx, cl caller, first Task, pos runs.Cursor, fr framer, release func()) {
	conv := Converter{TaskID: first.ID, ContextID: first.ContextID}
	h.Streams.Send(c, "a2a", func(sw *sse.Writer) {
		if fr.frame(sw, StreamResponse{Task: &first}) != nil || sw.Flush() != nil {
			return
		}
		f := h.Runs.Service.Follow(first.ID)
		defer f.Release()
		ctx, cancel := context.WithCancel(h.Streams.Context())
		defer cancel()
		wait := func(ctx context.Context, pos runs.Cursor) ([]runs.Item, bool, error) {
			return sse.Wait(ctx, sw, f, pos)
		}
		var done longhaul.DoneData
		for b, err := range runs.Batches(ctx, f, pos, wait) {
			switch {
			case errors.Is(err, sse.ErrClientGone):
				return
			case ctx.Err() != nil:
				_ = sw.Comment("server shutting down; subscribe to the task again")
				return
			case err != nil:
				_ = fr.fail(sw, errInternal.with("lost the run's event stream: "+err.Error()))
				_ = sw.Flush()
				return
			}
			for _, it := range b.Items {
				if it.Type == longhaul.EventDone {
					_ = it.Decode(&done)
				}
				for _, r := range conv.Event(it.Event) {
					if fr.frame(sw, r) != nil {
						return
					}
				}
			}
			if b.Done {
				h.final(ctx, sw, cl, conv, done, fr)
				return
			}
			if sw.Flush() != nil {
				return
			}
		}
	}, release)
}

// now is the time of a status, in UTC.
func now() *time.Time {
	t := time.Now().UTC()
	return &t
}

// final writes the last status update of a run whose log ended with done.
func (h *Handlers) final(ctx context.Context, sw *sse.Writer, cl caller, conv Converter, done longhaul.DoneData, fr framer) {
	st, _, err := h.read(ctx, cl, conv.TaskID)
	if err != nil {
		_ = fr.fail(sw, AsA2A(err, OpOther))
		_ = sw.Flush()
		return
	}
	if !runweb.Finished(st.Status) && runweb.Finished(done.Status) {
		// The state query answered before the run recorded its end.
		st.Status = done.Status
	}
	_ = fr.frame(sw, conv.Final(st, *now()))
	_ = sw.Flush()
}
