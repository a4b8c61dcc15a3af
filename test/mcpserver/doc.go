// Package mcpserver tests Longhaul's MCP server (/mcp, api/mcpapi) end to
// end with the official MCP TypeScript client (@modelcontextprotocol/sdk,
// pinned by package-lock.json, installed by make test-deps): client.mjs
// lists the tools a caller may use, calls an agent and reads its progress,
// starts tasks, leaves and collects them from a new session, cancels one,
// and approves a tool call by elicitation; client2.mjs, the client's 2.x
// line (@modelcontextprotocol/client) with its Tasks package
// (@modelcontextprotocol/ext-tasks), negotiates in each of its modes
// (2025-11-25, or the stateless 2026-07-28), calls an agent, and in both
// Tasks forms starts tasks that a new client resumes, cancels one, and has
// a run's approval asked (2026-07-28: an inputRequest answered with
// tasks/update, or a plain call's input_required answered by its retry;
// 2025-11-25: input_required, approved through /v1); and
// the MCP Inspector's command line lists and calls tools. All run against
// a whole stack (the embedded Temporal and NATS, a worker, the API) whose
// one fake is the scripted model. TestMCPDev drives a real `longhaul dev`
// (the binary run as one process in a temporary folder, proctest.StartDev)
// with client.mjs and the Inspector: the tools, a plain call, the README's
// command as written, and a long task whose client left, collected by a
// new one after `longhaul dev` restarted mid model call.
package mcpserver
