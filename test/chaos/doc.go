// Package chaos holds Longhaul's crash test: the real binary as separate
// processes (server, two workers, API) with an external NATS (Debian's
// nats-server), many runs calling a declared HTTP tool, workers and NATS
// killed with SIGKILL and the Temporal server and the API restarted while
// they go on. It proves that every run completes, that no side effect
// happens twice and that a client following a run's events with
// Last-Event-ID sees each durable event once, in order, and each answer's
// streamed text once, no byte lost or repeated. `make test` runs it with
// the rest (-race; make test-deps installs nats-server); `make chaos` runs
// it alone against bin/longhaul and prints its figures.
package chaos
