// Package runs owns what the HTTP API does to a run, behind one interface
// (Service): start it or attach to it, describe it, read its state, its
// log and its result, follow it from a cursor, hand it a person's input
// or a client's tool results, cancel it, delete it, find it through
// visibility; and start, await and cancel the ingestion runs of
// documents. The handlers speak to Service only, so that the three APIs
// that run agents (Chat Completions, Responses, Runs) share one idea of a
// run, a test serves them from an in-memory fake
// (internal/testing/runsfake), and nothing above this package knows it is
// Temporal: the Temporal client, its service errors and its protobuf
// types stop here (Temporal); what leaves is the contract's types and this
// package's errors (errors.go).
//
// Schedules of runs are a second interface, Schedules, kept as Temporal
// Schedules (TemporalSchedules): each fire starts the same agent workflow
// with the same memo and search attributes as Start, so a scheduled run is
// an ordinary run, and Temporal names its schedule in the built-in
// TemporalScheduledById search attribute (SearchAttrScheduledBy).
// CheckSpec reads a schedule's spec with Temporal's own scheduler code.
//
// The Gate is the one author of a run (author.go). Every start — a chat
// turn, a run of the runs API, a Responses request, a fork, a schedule's
// runs — reaches it as a Request in the words of the API that asks: it
// alone mints run ids (NewRunID), resolves the agent the request names
// (one refusal, NoAgent, everywhere), builds the workflow's input with the
// operator's Settings (a schedule keeps that input for each fire, which
// the worker admits against its owner as it is then), and writes the
// memo and search attributes through one helper (runAttrs). Start then
// picks a chat turn's run (a retake when the finished one may be a
// Regenerate), checks the run is the caller's, bounds the starts this
// process makes at once by its admission queue and what a principal holds
// by its limits of runs and streams and its budgets (Admission, Limits,
// CheckBudget), moves big inline images to the blob store, and starts the
// run with its memo. It sits over any Service, so the Temporal runs and
// the fake are started by the same code, and its refusals are errors of
// this package (a *Refusal), which the API says as 404, 429, 413 or 503
// like any other. No HTTP handler names the workflow's input type (the
// root package's TestOneAuthorOfRuns holds it).
//
// Following a run is a feed per run, however many clients follow it, each
// reading through its own cursor (feed.go, cursor.go, log.go). A run
// reaches its followers by two paths. Its durable events are the
// workflow's log: the feed reads them with the events query (and, for a
// run that continued as new, from its event archives in the blob store),
// once each time the run's history grows — a long poll of the history is
// the doorbell — so queries follow the run's progress, not the clock. The
// text of its running model call comes as ephemeral deltas over NATS,
// straight from the activity; a follower that joins late, or notices a
// gap, asks the running call for its text so far. A finished call's whole
// text is a durable content event, so when deltas are lost the text still
// arrives, whole. A follower reads both in order: durable events, then the
// live text of the call running after the last of them, then tool
// progress; a retried call's text is replaced after a content_reset.
package runs
