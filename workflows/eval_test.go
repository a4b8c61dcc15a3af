package workflows_test

import (
	"context"
	"sync"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/workflows"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// childSpy records the options of every child workflow a workflow starts
// (a worker interceptor: the test environment hands a child neither its
// memo nor a way to read it).
type childSpy struct {
	interceptor.WorkerInterceptorBase
	mu      sync.Mutex
	started []workflow.ChildWorkflowOptions
}

func (s *childSpy) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &spyInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, spy: s}
}

func (s *childSpy) options() []workflow.ChildWorkflowOptions {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]workflow.ChildWorkflowOptions(nil), s.started...)
}

type spyInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	spy *childSpy
}

func (i *spyInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&spyOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, spy: i.spy})
}

type spyOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	spy *childSpy
}

func (o *spyOutbound) ExecuteChildWorkflow(ctx workflow.Context, name string, args ...any) workflow.ChildWorkflowFuture {
	o.spy.mu.Lock()
	o.spy.started = append(o.spy.started, workflow.GetChildWorkflowOptions(ctx))
	o.spy.mu.Unlock()
	return o.Next.ExecuteChildWorkflow(ctx, name, args...)
}

// evalEnv runs EvaluationWorkflow with a stand-in AgentWorkflow that
// answers at once and records the user search attribute it started with,
// GradeCase passing every case, and spy on the children's options.
func evalEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *childSpy, *sync.Map) {
	t.Helper()
	env, acts := suiteEnv(t, workflows.EvaluationWorkflow, contract.EvaluationWorkflowName)
	spy := &childSpy{}
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{spy}})
	startedAs := &sync.Map{}
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in contract.AgentInput) (contract.AgentResult, error) {
		user, _ := workflow.GetTypedSearchAttributes(ctx).GetKeyword(contract.SearchAttrUser)
		startedAs.Store(workflow.GetInfo(ctx).WorkflowExecution.ID, user)
		return contract.AgentResult{Content: "answered"}, nil
	}, workflow.RegisterOptions{Name: contract.AgentWorkflowName})
	env.OnActivity(acts.GradeCase, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req contract.GradeRequest) (contract.CaseResult, error) {
			return contract.CaseResult{Case: req.Case.ID, Pass: req.Error == ""}, nil
		})
	return env, spy, startedAs
}

var evalInput = contract.EvalInput{Cases: []contract.EvalCase{
	{ID: "c1", Agent: "researcher", Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "Question 1"}}},
	{ID: "c2", Agent: "assistant", Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "Question 2"}}},
}}

// TestEvalReplaysCarryTheirOwner: each replay is started as a run of
// EvalUser's, as the API starts a run of its principal: the owner in its
// memo, its user and agent as search attributes from the start.
func TestEvalReplaysCarryTheirOwner(t *testing.T) {
	env, spy, startedAs := evalEnv(t)
	env.ExecuteWorkflow(contract.EvaluationWorkflowName, evalInput)
	var res contract.EvalResult
	if err := env.GetWorkflowResult(&res); err != nil || res.Passed != 2 {
		t.Fatalf("evaluation = %+v, %v; want both cases passed", res, err)
	}
	owner := longhaul.User{ID: workflows.EvalUser}.Key()
	started := spy.options()
	if len(started) != 2 {
		t.Fatalf("%d children started, want 2", len(started))
	}
	for i, o := range started {
		c := evalInput.Cases[i]
		if len(o.Memo) != 1 || o.Memo[contract.MemoOwner] != owner {
			t.Errorf("case %s: memo %v, want only %s = %q", c.ID, o.Memo, contract.MemoOwner, owner)
		}
		user, _ := o.TypedSearchAttributes.GetKeyword(contract.SearchAttrUser)
		agent, _ := o.TypedSearchAttributes.GetKeyword(contract.SearchAttrAgent)
		if user != owner || agent != c.Agent || o.TypedSearchAttributes.Size() != 2 {
			t.Errorf("case %s: search attributes user %q, agent %q (%d in all); want %q, %q", c.ID, user, agent, o.TypedSearchAttributes.Size(), owner, c.Agent)
		}
		if got, _ := startedAs.Load(o.WorkflowID); got != owner {
			t.Errorf("case %s: the replay started as user %v, want %q", c.ID, got, owner)
		}
	}
}

// TestEvalReplaysBeforeOwner: an evaluation recorded before replays had
// an owner (the version marker absent) starts them as it did, with no
// memo and no search attributes.
func TestEvalReplaysBeforeOwner(t *testing.T) {
	env, spy, _ := evalEnv(t)
	env.OnGetVersion("eval-replay-owner", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	env.ExecuteWorkflow(contract.EvaluationWorkflowName, evalInput)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	started := spy.options()
	if len(started) != 2 {
		t.Fatalf("%d children started, want 2", len(started))
	}
	for _, o := range started {
		if o.Memo != nil || o.TypedSearchAttributes.Size() != 0 {
			t.Errorf("child %s: memo %v, %d search attributes; want none", o.WorkflowID, o.Memo, o.TypedSearchAttributes.Size())
		}
	}
}
