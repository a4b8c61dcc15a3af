// Package chaos holds Longhaul's crash test, which is also the proof of
// the scaled-out topology: the real binary as separate processes (server,
// two workers, two APIs) with an external NATS (Debian's nats-server), many
// runs calling a declared HTTP tool started through both APIs in turn,
// workers, NATS and API 1 killed with SIGKILL and the Temporal server
// restarted while they go on. It proves that every run completes, that no
// side effect happens twice and that a client following a run's events
// with Last-Event-ID — on API 2 once API 1 is gone — sees each durable
// event once, in order, and each answer's streamed text once, no byte lost
// or repeated. `make test` runs it with the rest (-race; make test-deps
// installs nats-server); `make chaos` (or `make topology`) runs it alone
// against bin/longhaul and prints its figures. Two shorter kill tests share
// its harness: a worker killed in the middle of a plan's wave of steps
// (TestWorkerKilledMidWave) and every process killed right after an answer
// (TestKilledRightAfterAnAnswer).
package chaos
