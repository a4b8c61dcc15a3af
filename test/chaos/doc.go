// Package chaos holds Longhaul's crash test: the real binary as separate
// processes (server, two workers, API), many runs calling a declared HTTP
// tool, workers killed with SIGKILL and the Temporal server restarted while
// they go on. It proves that every run completes, that no side effect
// happens twice and that a client following a run's events with
// Last-Event-ID sees each of them once, in order. `make test` runs it with
// the rest (-race); `make chaos` runs it alone against bin/longhaul and
// prints its figures.
package chaos
