// Package wire holds the HTTP API's wire types — Chat Completions, the
// Responses API (with the renderer that derives a response's stream events
// from its run's log), Runs, Schedules, the documents routes (files, vector stores)
// and the account routes (conversations, memories, connections, secrets,
// backlog, DELETE /v1/me) — and the pure conversions between them and
// Longhaul's domain types. It imports no fiber, no Temporal and no
// adapter, so it is tested without a server; the api package and its
// handler packages decode requests into these types, check what needs an
// adapter (a schema's compilation, see SchemaCheck; a ranker, see
// RankingCheck) and answer with them.
package wire
