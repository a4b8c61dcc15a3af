package runs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/store"
)

// The claim check of a run's big inline images: they go to the blob store
// before the run starts, so that the workflow's history carries
// references.

// inlinePartLimit is the size of a data: URL above which an image travels
// through the blob store instead of the workflow's history.
const inlinePartLimit = 16 << 10

// claimable reports whether p is a big inline image (a data: URL) that
// claimParts moves to the blob store.
func (g *Gate) claimable(p longhaul.Part) bool {
	return g.blobs != nil && p.Type == longhaul.PartImage && len(p.URL) > inlinePartLimit && strings.HasPrefix(p.URL, "data:")
}

// placeholderRef stands for a blob reference in asClaimed: as long as the
// references Put returns ("sha256:" and 64 hex digits).
var placeholderRef = "sha256:" + strings.Repeat("0", 64)

// asClaimed returns in as claimParts would leave it, storing nothing: each
// big inline image replaced by a reference. Its encoded size is the one
// Temporal gets, so the payload check can run before anything is stored.
// in itself is not changed.
func (g *Gate) asClaimed(in contract.AgentInput) contract.AgentInput {
	msgs := slices.Clone(in.Messages)
	for i := range msgs {
		if !slices.ContainsFunc(msgs[i].Parts, g.claimable) {
			continue
		}
		parts := slices.Clone(msgs[i].Parts)
		for j := range parts {
			if g.claimable(parts[j]) {
				parts[j].URL, parts[j].Ref = "", placeholderRef
			}
		}
		msgs[i].Parts = parts
	}
	in.Messages = msgs
	return in
}

// claimParts moves the big inline images of msgs (data: URLs) to the blob
// store, under run, so that the workflow's history carries references; the
// model call reads them back. Without a store they stay inline, and the
// payload limit applies. stored reports that it stored at least one, even
// when it fails after: the caller then owes a dropClaims. Call it only once
// the request has passed every check (see StartOrAttach): a refused request must
// leave nothing behind.
func (g *Gate) claimParts(ctx context.Context, run string, msgs []longhaul.Message) (stored bool, err error) {
	for i := range msgs {
		for j := range msgs[i].Parts {
			p := &msgs[i].Parts[j]
			if !g.claimable(*p) {
				continue
			}
			ref, err := g.blobs.Put(ctx, store.Blob{Run: run, Kind: "image", Name: strconv.Itoa(i) + "." + strconv.Itoa(j), Data: []byte(p.URL)})
			if errors.Is(err, store.ErrTooLarge) {
				return stored, refuse(ErrTooLarge, fmt.Sprintf("messages[%d].content[%d]: the image is too large to store: %v", i, j, err))
			}
			if err != nil {
				return stored, refuse(ErrUnreachable, "cannot store the message's image: "+err.Error())
			}
			stored = true
			p.URL, p.Ref = "", ref
		}
	}
	return stored, nil
}

// dropClaims deletes the blobs a request stored under run (claimParts)
// when the run did not start, so that nothing reads them ever. A run that
// exists after all keeps them: a start whose answer was lost on its way
// back may have started it, and an identical request of the same chat may
// have started it first, with the same images under the same references.
// When Temporal cannot say, they stay, and the retention job deletes them
// once their retention has passed (it deletes the blobs of unknown runs).
func (g *Gate) dropClaims(ctx context.Context, run string) {
	ctx = context.WithoutCancel(ctx)
	_, err := g.svc.Describe(ctx, run)
	switch {
	case err == nil:
		return
	case !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrNoNamespace):
		g.log.WarnContext(ctx, "a run failed to start and Temporal cannot say whether it exists: its stored images stay until their retention", "run", run, "error", err)
		return
	}
	if err := g.blobs.DeleteRun(ctx, run); err != nil {
		g.log.ErrorContext(ctx, "delete the stored images of a run that did not start", "run", run, "error", err)
	}
}

// AskedKey is a hash of the conversation msgs: roles, names, text, tool
// calls and their results. Image parts count by position, not by URL, so
// the key is the same before and after their data moves to the blob store.
func AskedKey(msgs []longhaul.Message) string {
	h := sha256.New()
	for _, m := range msgs {
		parts := make([]string, 0, len(m.Parts))
		for _, p := range m.Parts {
			parts = append(parts, p.Type+":"+p.Text)
		}
		calls := make([]string, 0, len(m.ToolCalls))
		for _, tc := range m.ToolCalls {
			calls = append(calls, tc.ID+":"+tc.Name+":"+tc.Arguments)
		}
		b, _ := json.Marshal([]any{m.Role, m.Name, m.ToolCallID, m.Content, parts, calls})
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// ClaimSchedule is the claim check of a schedule's conversation: in's big
// inline images go to the blob store under the schedule's id, as a run's
// go under the run's (claimParts, which changes in.Messages in place), so
// the schedule's input, and each run it starts, carries references; every
// fire's model call reads the same blobs. The input is checked against the
// payload limit as it will be stored (asClaimed), before anything is. The
// retention job keeps the blobs while the schedule exists or a run of it
// is open, and deletes them after (activities.DeleteExpiredBlobs).
// Without a store the images stay inline, and the payload limit applies.
// A schedule that is not created after all owes a DropScheduleClaims. Its
// errors are *Refusal.
func (g *Gate) ClaimSchedule(ctx context.Context, id string, in *contract.AgentInput) error {
	if err := CheckPayload("the conversation", g.asClaimed(*in)); err != nil {
		return err
	}
	stored, err := g.claimParts(ctx, id, in.Messages)
	if err != nil && stored {
		g.DropScheduleClaims(ctx, id)
	}
	return err
}

// DropScheduleClaims deletes the blobs ClaimSchedule stored under a
// schedule that was not created, so that nothing reads them ever.
func (g *Gate) DropScheduleClaims(ctx context.Context, id string) {
	if g.blobs == nil {
		return
	}
	if err := g.blobs.DeleteRun(context.WithoutCancel(ctx), id); err != nil {
		g.log.ErrorContext(ctx, "delete the stored images of a schedule that was not created", "schedule", id, "error", err)
	}
}
