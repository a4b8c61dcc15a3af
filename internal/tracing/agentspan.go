package tracing

import (
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"
)

// AgentSpans names an agent run's workflow span as OpenTelemetry's GenAI
// conventions name an agent's invocation: "invoke_agent <agent>", with
// gen_ai.operation.name invoke_agent, gen_ai.agent.name and, for a chat's
// run, gen_ai.conversation.id. An agent run is a workflow whose input
// names them (Invocation, which the agent workflow's input has). The span is the one Temporal's tracing
// interceptor starts for the workflow (RunWorkflow:AgentWorkflow), so the
// model calls' chat spans and the tools' execute_tool spans hang below it.
// It must come after that interceptor in the client's list, which puts
// the span in the workflow's context first. It changes only the span: the
// workflow's commands, and so its history, are the same with it or not.
type AgentSpans struct {
	interceptor.InterceptorBase
}

// InterceptWorkflow implements interceptor.WorkerInterceptor.
func (*AgentSpans) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &agentSpan{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}}
}

type agentSpan struct {
	interceptor.WorkflowInboundInterceptorBase
}

func (a *agentSpan) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	if span, ok := temporalotel.SpanFromWorkflowContext(ctx); ok && len(in.Args) > 0 {
		if input, ok := in.Args[0].(invocation); ok {
			agent, chat := input.Invocation()
			span.SetName("invoke_agent " + agent)
			span.SetAttributes(semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName(agent), semconv.GenAIAgentID(agent))
			if chat != "" {
				span.SetAttributes(semconv.GenAIConversationID(chat))
			}
		}
	}
	return a.Next.ExecuteWorkflow(ctx, in)
}

// invocation is the input of an agent run: the agent it invokes and the
// chat it answers in (contract.AgentInput's, embedded in the workflow's).
type invocation interface{ Invocation() (agent, chat string) }
