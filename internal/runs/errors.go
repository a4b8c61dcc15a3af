package runs

import (
	"context"
	"errors"
	"strings"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"
)

// The kinds of error a Service answers with; test them with errors.Is.
// Each keeps the engine's own error as its cause (errors.Unwrap) and its
// message, so what the API says of it reads as before.
var (
	// ErrNotFound: no such run (or workflow), or none any more.
	ErrNotFound = errors.New("no such run")
	// ErrNoNamespace: the namespace the runs live in does not exist.
	ErrNoNamespace = errors.New("no such namespace")
	// ErrInvalid: the engine refused the request as invalid (an id no run
	// can have, a payload too large, a visibility query it cannot read);
	// asking again gets the same answer.
	ErrInvalid = errors.New("refused as invalid")
	// ErrAlreadyStarted: a run under the id exists, and the start policy
	// does not attach to it.
	ErrAlreadyStarted = errors.New("already started")
	// ErrCanceled: the run ended cancelled.
	ErrCanceled = errors.New("the run was cancelled")
	// ErrTimeout: the engine did not answer before a deadline.
	ErrTimeout = errors.New("timed out")
	// ErrUnreachable: the engine could not be reached.
	ErrUnreachable = errors.New("unreachable")
	// ErrCorrupt: what the engine keeps of a run cannot be read (an empty
	// history, a payload that does not decode).
	ErrCorrupt = errors.New("unreadable run")
	// ErrTooMany: a bound of the Gate was reached (the admission queue, a
	// principal's runs or streams); a *Refusal says when to try again.
	ErrTooMany = errors.New("too many")
	// ErrOverBudget: a budget of the principal, its key or the agent is
	// used up (GateConfig.Budget); OpenAI's 429 insufficient_quota.
	ErrOverBudget = errors.New("over budget")
	// ErrTooLarge: a run's input is larger than the engine takes.
	ErrTooLarge = errors.New("too large")
	// ErrNoAgent: a request names an agent that does not exist or that
	// its user may not use (NoAgent).
	ErrNoAgent = errors.New("no such agent")
	// ErrInternal: this side failed (a value that does not encode, a name
	// no query can match); the *Refusal's message says what, not why.
	ErrInternal = errors.New("internal error")
	// ErrUnknownQuery: the run's worker does not know the query asked
	// (a worker of an older release, in a rolling upgrade).
	ErrUnknownQuery = errors.New("query unknown to the run's worker")
)

// Refusal is the Gate's refusal of a request, of one of the kinds above:
// Message is said to the client as it is, and RetryAfter (seconds), when
// set, is when to ask again.
type Refusal struct {
	Kind       error
	Message    string
	RetryAfter int
}

func (r *Refusal) Error() string        { return r.Message }
func (r *Refusal) Is(target error) bool { return target == r.Kind }

func refuse(kind error, msg string) error { return &Refusal{Kind: kind, Message: msg} }

// OverBudget is the refusal of a start while a budget is used up, saying
// msg (the limit and when it resets); GateConfig.Budget answers with it.
func OverBudget(msg string) error { return refuse(ErrOverBudget, msg) }

func tooMany(msg string, retryAfter int) error {
	return &Refusal{Kind: ErrTooMany, Message: msg, RetryAfter: retryAfter}
}

// corrupt is an ErrCorrupt that says msg.
func corrupt(msg string) error { return &kindError{kind: ErrCorrupt, cause: errors.New(msg)} }

// Failure is an error a run or its update failed with, of one of
// longhaul's ErrType* types (or another the workflow raised).
type Failure struct {
	Type, Message string
	cause         error
}

// NewFailure is a Failure of type typ that says msg, as a run's own error
// reads; for fakes of Service.
func NewFailure(typ, msg string) *Failure { return &Failure{Type: typ, Message: msg} }

func (f *Failure) Error() string {
	if f.cause == nil {
		return f.Message
	}
	return f.cause.Error()
}

func (f *Failure) Unwrap() error { return f.cause }

// kindError is an engine error classified as one of the kinds above; msg,
// when set, is what the engine said, without what wrapped it.
type kindError struct {
	kind, cause error
	msg         string
}

func (e *kindError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return e.cause.Error()
}

func (e *kindError) Unwrap() error        { return e.cause }
func (e *kindError) Is(target error) bool { return target == e.kind }

// Unreachable reports whether err says the engine could not be reached in
// time, as opposed to an answer it gave.
func Unreachable(err error) bool {
	return errors.Is(err, ErrUnreachable) || errors.Is(err, ErrTimeout) || errors.Is(err, context.DeadlineExceeded)
}

// classify gives a Temporal error its kind; nil stays nil, and an error of
// no kind is returned as it is.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var app *temporal.ApplicationError
	var nf *serviceerror.NotFound
	var nsnf *serviceerror.NamespaceNotFound
	var invalid *serviceerror.InvalidArgument
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	var queryFailed *serviceerror.QueryFailed
	kind := func(k error) error { return &kindError{kind: k, cause: err} }
	switch {
	case errors.As(err, &app):
		return &Failure{Type: app.Type(), Message: app.Message(), cause: err}
	case temporal.IsCanceledError(err):
		return kind(ErrCanceled)
	case errors.As(err, &nf):
		return kind(ErrNotFound)
	case errors.As(err, &nsnf):
		return kind(ErrNoNamespace)
	case errors.As(err, &invalid):
		return &kindError{kind: ErrInvalid, cause: err, msg: invalid.Message}
	case errors.As(err, &started), temporal.IsWorkflowExecutionAlreadyStartedError(err):
		return kind(ErrAlreadyStarted)
	case errors.As(err, &deadline), errors.Is(err, context.DeadlineExceeded):
		return kind(ErrTimeout)
	case errors.As(err, &unavailable):
		return kind(ErrUnreachable)
	case errors.As(err, &queryFailed) && strings.HasPrefix(queryFailed.Message, "unknown queryType "):
		// The SDK's words for a query no handler answers
		// (go.temporal.io/sdk v1.50.0 internal/workflow.go:917).
		return kind(ErrUnknownQuery)
	}
	return err
}
