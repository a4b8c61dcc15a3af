// Package mcpserver tests Longhaul's MCP server (/mcp, api/mcpapi) end to
// end with the official MCP TypeScript client (@modelcontextprotocol/sdk,
// pinned by package-lock.json, installed by make test-deps): client.mjs
// lists the tools a caller may use, calls an agent and reads its progress,
// starts tasks, leaves and collects them from a new session, cancels one,
// and approves a tool call by elicitation, against a whole stack (the
// embedded Temporal and NATS, a worker, the API) whose one fake is the
// scripted model.
package mcpserver
