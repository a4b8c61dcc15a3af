// Package wire holds the HTTP API's wire types — Chat Completions, Responses
// and Runs — and the pure conversions between them and Longhaul's domain
// types. It imports no fiber, no Temporal and no adapter, so it is tested
// without a server; the api package decodes requests into these types,
// checks what needs an adapter (a schema's compilation, see SchemaCheck) and
// answers with them.
package wire
