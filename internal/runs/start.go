package runs

import (
	"context"
	"errors"
	"strings"

	"github.com/google/uuid"
	"github.com/longhaul-dev/longhaul/contract"
)

// StartRequest is a run to start, or to attach to (see StartOrAttach).
type StartRequest struct {
	// ID is the run's id; for a Retake, the id of its chat turn's run.
	ID    string
	Input contract.AgentInput
	// Question is what the run's summary says after the agent's name.
	Question string
	// Retake marks a chat turn's request without a message id: the run
	// that answers it is the first of the turn's retakes that is not
	// taken by a finished run (see unfinishedRun).
	Retake bool
	// Admitted, when set, is the release of the admission the caller holds
	// already (a chat request asks the engine before it knows it starts a
	// run); StartOrAttach calls it once the start is made instead of
	// waiting in the admission queue itself.
	Admitted func()
	// Door is the protocol the run was asked through (Request.Door).
	Door string
}

// maxRetakes bounds the runs of one chat turn looked at for a request
// without a message id; past them it gets a run of its own.
const maxRetakes = 32

// StartOrAttach starts the run r asks for, or attaches to the one a
// previous identical request started (running, it is followed; finished,
// its result is returned), and returns its id. It waits its turn in the
// admission queue unless r holds one. A run found under the id must be
// the caller's (chat ids are scoped to their principal, so only a forged
// id finds another's run): else it is unknown (ErrNotFound). A new run
// counts against the principal's limit of runs. The big inline images of
// the input go to the blob store (claimParts, which changes
// r.Input.Messages in place) only once every check has passed, and go
// again if the run does not start. Its errors are *Refusal.
func (g *Gate) StartOrAttach(ctx context.Context, r StartRequest) (string, error) {
	release := r.Admitted
	if release == nil {
		var err error
		if release, err = g.Admit(ctx); err != nil {
			return "", err
		}
	}
	defer release()
	id := r.ID
	if r.Retake {
		var err error
		if id, err = g.unfinishedRun(ctx, id, r.Input); err != nil {
			return "", err
		}
	}
	return id, g.start(ctx, id, r.Input, r.Question, r.Door)
}

// start starts run id (see StartOrAttach).
func (g *Gate) start(ctx context.Context, id string, in contract.AgentInput, question, door string) error {
	if err := CheckPayload("the conversation", g.asClaimed(in)); err != nil {
		return err
	}
	owner := in.User.Key()
	if in.ChatID != "" && !in.Background {
		info, err := g.svc.Describe(ctx, id)
		switch {
		case err == nil:
			if info.Memo[MemoOwner] != owner {
				g.log.Warn("a request named another principal's run", "run", id, "principal", owner)
				return refuse(ErrNotFound, "no run "+id)
			}
			return nil
		case !errors.Is(err, ErrNotFound):
			return refuse(ErrUnreachable, "could not read run "+id+": "+err.Error())
		}
	}
	if err := g.CheckRuns(ctx, owner); err != nil {
		return err
	}
	if err := g.CheckBudget(ctx, owner, in.Agent); err != nil {
		return err
	}
	stored, err := g.claimParts(ctx, id, in.Messages)
	if err != nil {
		if stored {
			g.dropClaims(ctx, id)
		}
		return err
	}
	summary := Summary(in.Agent, question)
	st := Start{
		ID: id, Input: in, Owner: owner, Summary: summary,
		// The memo repeats the summary for run listings (GET /v1/runs),
		// which do not carry the static summary, and names the owner.
		Memo: forkMemo(map[string]string{MemoSummary: summary, MemoOwner: owner, MemoAsked: AskedKey(in.Messages)}, in.Fork),
	}
	if door != "" {
		st.Memo[MemoDoor] = door
	}
	chatMemo(&st)
	err = g.svc.Start(ctx, st)
	switch {
	case err == nil, errors.Is(err, ErrAlreadyStarted):
		// Already started: closed since a moment ago; a concurrent
		// identical request of the same principal started it.
		return nil
	case stored:
		g.dropClaims(ctx, id)
	}
	if errors.Is(err, ErrInvalid) {
		// Refused, not unreachable: trying again gets the same answer.
		g.log.ErrorContext(ctx, "Temporal refused to start a run", "run", id, "error", err)
		if strings.Contains(strings.ToLower(err.Error()), "size") {
			return refuse(ErrTooLarge, "Temporal refused the run as too large: "+err.Error())
		}
		return refuse(ErrInvalid, "Temporal refused the run: "+err.Error())
	}
	g.log.ErrorContext(ctx, "start run", "run", id, "error", err)
	return refuse(ErrUnreachable, "could not start the run: "+err.Error())
}

// unfinishedRun returns the id of the run that answers in, a chat request
// without a message id whose turn's run is named base: the first of base,
// base-r2, base-r3, … that no run has taken yet, or whose run is still
// going and answers the same conversation (AskedKey). A finished run is
// never handed back: a retried request and a Regenerate look the same
// without a message id, and handing a finished run back would answer every
// Regenerate with the old answer.
func (g *Gate) unfinishedRun(ctx context.Context, base string, in contract.AgentInput) (string, error) {
	key, owner := AskedKey(in.Messages), in.User.Key()
	for k := 1; k <= maxRetakes; k++ {
		id := base
		if k > 1 {
			id = contract.ChatRetakeID(base, k)
		}
		info, err := g.svc.Describe(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound):
			return id, nil
		case err != nil:
			return "", refuse(ErrUnreachable, "could not read run "+id+": "+err.Error())
		}
		if info.Memo[MemoOwner] != owner {
			// Not the caller's: start refuses it as unknown.
			return id, nil
		}
		if info.Status == ExecRunning && info.Memo[MemoAsked] == key {
			return id, nil
		}
	}
	return contract.ChatSpareID(base, uuid.NewString()), nil
}
